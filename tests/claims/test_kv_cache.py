"""Every qualitative sentence of docs/chapters/kv-cache.md, checked over computed values: at the
settings the text names, and across the steps slider where it invites the reader to move it.
Measured numbers are checked for ordering only, read through the fastest steps; a timing
claim that fails on the page's own measurement is checked again on that setting's runs pooled
with fresh ones before it fails (load only adds time, and more runs steady each step's fastest time)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import time
from pathlib import Path

import pytest
import torch

from backend.compute import kv_decode as w
from backend.compute import measure
from backend.reference.generate import token_steps
from backend.reference.kv_cache import kv_cache_bytes_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def private_lock(tmp_path_factory):
    before = measure.LOCK_PATH
    measure.LOCK_PATH = str(tmp_path_factory.mktemp("lock") / "timing.lock")
    yield
    measure.LOCK_PATH = before


def values(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def pooled(fresh=2, **params):
    """The step statistics of a setting, from its page measurement pooled with `fresh` new ones."""
    p = w.SPEC.resolve(params)
    key = (p["model"], p["steps"], p["prompt_len"])
    t = w.measure(*key)
    cache_runs, no_cache_runs = t.cache_runs, t.no_cache_runs
    for _ in range(fresh):
        more = w.measure.__wrapped__(*key)
        cache_runs, no_cache_runs = cache_runs + more.cache_runs, no_cache_runs + more.no_cache_runs
    return w.step_values(dataclasses.replace(t, cache_runs=cache_runs,
                                             no_cache_runs=no_cache_runs), p["prompt_len"])


def holds(claim, **params):
    """claim(values) at a setting, or else on its runs pooled with fresh ones."""
    return claim(values(**params)) or claim(pooled(**params))


def test_the_counts_at_1000_400_and_800_tokens():
    v = values(steps=25)  # the closed-form counts ride along with any setting
    assert (v["rows_1000_no_cache"], v["rows_1000_cache"]) == (500_500, 1_000)
    assert (v["rows_400_no_cache"], v["rows_400_cache"]) == (400 * 401 // 2, 400)
    assert (v["rows_800_no_cache"], v["rows_800_cache"]) == (320_400, 800)


@pytest.mark.parametrize("n", [50, 100, 200, 400])
def test_doubling_the_length_doubles_the_ratio_and_quadruples_the_rows_saved(n):
    ratio = lambda m: token_steps(m, False) / token_steps(m, True)  # noqa: E731
    saved = lambda m: token_steps(m, False) - token_steps(m, True)  # noqa: E731
    assert ratio(2 * n) / ratio(n) == pytest.approx(2, rel=0.02)
    assert ratio(n) == pytest.approx(n / 2, rel=0.02)  # "about n/2"
    assert saved(2 * n) / saved(n) == pytest.approx(4, rel=0.05)


def test_the_default_is_the_notebooks_400_steps_counted_and_measured_on_this_builds_cpu():
    v = values()
    assert w.SPEC.defaults() == {"steps": 400, "prompt_len": 1, "model": "random"}
    assert (v["key_rows_no_cache"], v["key_rows_cache"]) == (80_200, 400)
    assert v["tokens_identical"] and v["max_logit_diff"] <= 1e-5  # "float rounding"
    assert v["device"] == "cpu" and v["measured_on"].startswith("cpu")  # "this build's CPU"
    # "a speed-up of ... far below the ... fewer key rows" (and a speed-up, in total)
    assert v["speedup"] < v["work_ratio"] / 10
    assert holds(lambda x: x["ms_cache"] < x["ms_no_cache"])


# The widget's lesson, at the default: "Without the cache ... its time climbs with the length.
# With the cache ... the line does not climb. The gap between the lines widens."
def test_without_the_cache_a_step_takes_longer_the_longer_the_text():
    assert holds(lambda v: v["step_ms_late_no_cache"] > 1.2 * v["step_ms_early_no_cache"]
                 and v["step_slope_us_no_cache"] > 0)


def test_with_the_cache_the_line_does_not_climb():
    """Also the instructor note's 'nearly all of [a cached step] is the fixed cost ... whatever
    its length': its time at the end of 400 steps is within half again of its time early on."""
    assert holds(lambda v: 0.67 < v["step_growth_cache"] < 1.5)
    assert holds(lambda v: v["step_growth_cache"] < v["step_growth_no_cache"])
    assert holds(lambda v: abs(v["step_slope_us_cache"]) < v["step_slope_us_no_cache"] / 2)


def test_the_gap_between_the_lines_widens_along_the_text():
    assert holds(lambda v: v["gap_late"] > v["gap_early"])


def test_early_on_the_two_lines_start_close_together():
    """'Early on the two lines start close together' (and the check-yourself answer)."""
    assert holds(lambda v: v["step_ms_early_no_cache"] < 2 * v["step_ms_early_cache"])


@pytest.mark.parametrize("steps", [200, 400])
def test_the_lines_part_on_long_runs_across_the_slider(steps):
    assert holds(lambda v: v["step_ms_late_no_cache"] > v["step_ms_early_no_cache"]
                 and v["step_growth_cache"] < v["step_growth_no_cache"], steps=steps)


def test_moving_the_slider_down_the_uncached_line_stops_lower():
    """'Move the steps slider down and the uncached line stops climbing sooner'."""
    def late(steps):
        return values(steps=steps)["step_ms_late_no_cache"]
    if not late(100) < late(400):
        assert pooled(steps=100)["step_ms_late_no_cache"] < pooled(steps=400)["step_ms_late_no_cache"]


def test_the_table_and_summary_report_the_same_step_times():
    out = w.compute(w.SPEC.resolve({}))
    v = out["values"]
    assert out["table"]["rows"][0][2] == w._num(v["step_ms_early_no_cache"])
    assert v["ms_no_cache"] == pytest.approx(sum(v["step_ms_no_cache"]))  # one run at 400
    assert v["repeats"] == 1 and "one run of each" in out["summary"]


@pytest.mark.parametrize("params", [
    {"steps": 1}, {"steps": 25}, {"steps": 200, "prompt_len": 32}, {"steps": 400, "prompt_len": 8},
    {"model": "book", "steps": 1}, {"model": "book", "steps": 96}, {"model": "book", "steps": 50, "prompt_len": 32},
])
def test_cached_and_uncached_write_the_same_tokens_across_the_range(params):
    v = values(**params)
    assert v["tokens_identical"] is True
    assert v["max_logit_diff"] <= 1e-4
    p = params.get("prompt_len", 1)
    assert v["key_rows_no_cache"] == token_steps(params["steps"], False, p)
    assert v["key_rows_cache"] == token_steps(params["steps"], True, p)


def test_moving_steps_down_draws_the_totals_together():
    def gap(v):
        return v["ms_no_cache"] - v["ms_cache"]
    if not gap(values(steps=25)) < gap(values()):
        assert gap(pooled(steps=25)) < gap(pooled())


def test_the_cache_grows_one_fixed_slice_per_token():
    for params in ({"steps": 25}, {"steps": 200, "prompt_len": 8},
                   {"model": "book", "steps": 96, "prompt_len": 32}):
        v = values(**params)
        cfg = w.model_for(params.get("model", "random")).config
        assert v["cache_positions"] == params.get("prompt_len", 1) + params["steps"] - 1
        assert v["cache_bytes_per_token"] == 2 * cfg.n_layers * cfg.n_kv_heads * cfg.d_head * 4
        assert v["cache_bytes"] == v["cache_positions"] * v["cache_bytes_per_token"]


def test_the_books_model_numbers_the_chapter_names():
    v = values(model="book", steps=96, prompt_len=32)
    assert (v["n_layers"], v["n_kv_heads"], v["d_head"]) == (4, 2, 32)
    assert v["cache_bytes_per_token"] == 2_048
    book = w.model_for("book").config
    assert book.max_seq_len == 128 == 32 + w.BOOK_MAX_STEPS  # "up to 96 tokens ... 128 positions"
    assert w.RANDOM_CONFIG.n_layers == 2 and w.MAX_STEPS == 400
    assert values(steps=25)["repeats"] == 3


def test_earlier_keys_and_values_stay_in_a_decoder_and_move_in_an_encoder():
    v = values(model="book", steps=96, prompt_len=32)
    assert v["prefix_kv_change_causal"] <= 1e-5
    assert values()["prefix_kv_change_causal"] <= 1e-6  # "up to float rounding"
    bi = v["prefix_kv_change_bidirectional"]
    # layer 1: projections of each token's own embedding, the same up to rounding. Not exactly:
    # the two runs' matrix products have 127 and 128 rows, and a BLAS may sum a row in another
    # order for another row count (7e-7 with MKL's generic x86 kernels, MKL_CBWR=COMPATIBLE).
    assert bi[0] <= 1e-5
    # "from the second layer on": every later layer moves, by far more than rounding
    assert all(change > 1e-3 for change in bi[1:])


def test_exercise_2_and_the_check_yourself_counts():
    v = values(steps=1, prompt_len=32)
    assert v["key_rows_no_cache"] == v["key_rows_cache"] == 32
    v = values(steps=10, prompt_len=5)
    assert (v["key_rows_cache"], v["key_rows_no_cache"]) == (14, 95)


def test_exercise_3_one_kv_head_halves_the_books_cache():
    book = w.model_for("book").config
    assert 2 * kv_cache_bytes_for(book.replace(n_kv_heads=1), 128, dtype=torch.float32) == \
        kv_cache_bytes_for(book, 128, dtype=torch.float32)


def test_the_bidirectional_change_is_scaled_and_reaches_every_earlier_position():
    v = values(model="book", steps=96, prompt_len=32)
    assert v["prefix_positions"] == 32 + 96 - 1  # the written text but its last token
    moved = v["prefix_positions_moved_bidirectional"]
    assert all(n == v["prefix_positions"] for n in moved[1:])  # "every one of them", layers 2-4
    rel = v["prefix_kv_relative_bidirectional"]
    assert rel[0] <= 1e-5 < min(rel[1:])  # layer 1's is rounding (see above); layer 2's 0.7%
    assert rel[3] > rel[1]  # layer 4's change is the larger share, as the two figures read


def test_about_12_d_squared_multiply_adds_per_position_per_layer():
    from backend.reference.config import ModelConfig
    from backend.reference.grouped_query import GroupedQueryAttention
    from backend.reference.mlp import MLP
    d = 64
    cfg = ModelConfig(vocab_size=10, d_model=d, n_layers=1, n_heads=4, n_kv_heads=4, d_ff=4 * d,
                      max_seq_len=8)
    def weights(m):
        return sum(p.numel() for n, p in m.named_parameters() if n.endswith("weight"))
    assert weights(GroupedQueryAttention(cfg)) == 4 * d * d
    assert weights(MLP(cfg)) == 8 * d * d


def test_long_settings_are_timed_fewer_times():
    assert values(steps=25)["repeats"] == values(steps=100)["repeats"] == values(steps=200)["repeats"] == 3
    v = values()  # the default: 400 steps
    assert v["repeats"] == 1 and v["key_rows_no_cache"] > v["timing_row_budget"]
    assert v["timing_ms"] >= sum(v["runs_cache"]) + sum(v["runs_no_cache"])


@pytest.mark.parametrize("params", [{"steps": 1, "prompt_len": 32}, {"steps": 1}, {"steps": 2}])
def test_with_nothing_to_save_the_cache_is_no_faster(params):
    """Exercise 2 and "at one or two steps there is almost nothing to save"."""
    v = values(**params)
    assert v["key_rows_no_cache"] - v["key_rows_cache"] <= 1
    # no real gain; below 1 on some runs, which the widget words as "slower". Runs this short
    # (a few ms) are cut up by a busy machine's scheduler: where the page's medians say
    # otherwise, compare the least disturbed (fastest) of many pooled runs
    if not v["speedup"] < 1.3:
        p = pooled(fresh=6, **params)
        assert p["spread_no_cache"][0] < 1.3 * p["spread_cache"][0]
    assert v["cache_positions"] == params.get("prompt_len", 1) + params["steps"] - 1  # it filled one


@torch.no_grad()
def test_a_decode_step_scores_one_row_per_head():
    """'its query scores a single 1 x T row per head': the T x T table exists only in prefill."""
    model = w.model_for("random")
    ids = w.prompt_for("random", 7)
    cache = model.new_cache()
    out = model(ids, cache=cache, output_attentions=True)
    assert out.attentions[0].shape[-2:] == (7, 7)
    out = model(ids[:, :1], cache=cache, output_attentions=True)
    h = w.RANDOM_CONFIG.n_heads
    assert all(a.shape == (1, h, 1, 8) for a in out.attentions)


def _median_ms(fn, n=15):
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[n // 2]


def test_the_random_models_fixed_cost_per_call_dominates_its_rows():
    """'one call over 400 positions at once costs a small fraction of 400 calls over one'."""
    model = w.model_for("random")
    ids = torch.randint(0, w.RANDOM_CONFIG.vocab_size, (1, 400))
    with measure.one_cpu_thread("cpu"), torch.no_grad():
        all_at_once = _median_ms(lambda: model(ids))
        one = _median_ms(lambda: model(ids[:, :1]))
    assert all_at_once < 400 * one / 5


def _notebook():
    """The KV-cache notebook's first two cells run: its model, and n = 400 both ways."""
    nb = json.loads((ROOT / "docs/exercises/llm101-08-kv-cache.ipynb").read_text())
    code = [''.join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    ns: dict = {}
    before = torch.get_num_threads()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code[0], ns)  # noqa: S102 -- the book's own notebook: the model and its run()
            exec(code[1], ns)  # noqa: S102 -- n = 400, both ways
    finally:
        torch.set_num_threads(before)
    return ns


def test_the_notebooks_bare_tensor_model_gains_only_a_few_times():
    """'one layer of bare tensor operations with no modules around them, so its steps have a fixed
    cost several times smaller than the random model's. Its speed-up at 400 steps is still a few
    times, not hundreds: each of those operations is itself a call with a fixed cost, and at width
    32 a row of arithmetic costs less than that.'

    Which of the two models gains more depends on the machine, so the sentence does not say."""
    ns = _notebook()
    assert (ns["rows_no"], ns["rows_c"]) == (80_200, 400) and ns["ids_no"] == ns["ids_c"]
    notebook = ns["ms_no"] / ns["ms_c"]
    assert 1.5 < notebook < ns["rows_no"] / ns["rows_c"] / 10
    # several times smaller: the notebook's mean cached step (prefill included) against the
    # random model's fastest cached step near the end of the same 400
    assert ns["ms_c"] / 400 < values()["step_ms_late_cache"] / 3
    # the fixed cost: a step over 400 positions costs a small fraction of 400 one-position steps
    ids = torch.zeros(400, dtype=torch.long)
    with measure.one_cpu_thread("cpu"), torch.no_grad():
        all_at_once = _median_ms(lambda: ns["logits_of"](ids, 0))
        one = _median_ms(lambda: ns["logits_of"](ids[:1], 0))
    assert all_at_once < 400 * one / 5


def test_output_tokens_are_priced_above_input_in_the_linked_example():
    """'a higher one for output tokens': the prices serving.md's prefix-caching section uses."""
    from backend.compute import prefix_cache_cost
    default = {p.name: p.default for p in prefix_cache_cost.SPEC.params}
    assert default["price_output"] > default["price_input"]
    text = (ROOT / "docs/chapters/serving.md").read_text()
    assert "\n## Prefix caching and its price\n" in text  # the anchor the chapter links


def test_the_concatenation_is_small_beside_the_rest_of_a_step():
    """'at this book's sizes the copy is small beside the rest of a step': appending one row to
    a 400-position cache (what `KVCache.update` does, per layer, keys and values) against one
    cached decode step of the random model at the same length."""
    from backend.reference.kv_cache import KVCache
    model, cfg = w.model_for("random"), w.RANDOM_CONFIG
    past = torch.randn(1, cfg.n_kv_heads, 400, cfg.d_head)
    new = torch.randn(1, cfg.n_kv_heads, 1, cfg.d_head)

    def append():
        cache = KVCache(cfg.n_layers)
        for layer in range(cfg.n_layers):
            cache.keys[layer], cache.values[layer] = past, past
            cache.update(layer, new, new)

    ids = w.prompt_for("random", 1)

    def step():
        cache = model.new_cache()
        for layer in range(cfg.n_layers):
            cache.keys[layer], cache.values[layer] = past, past
        model(ids, cache=cache, logits_to_keep=1)

    with measure.one_cpu_thread("cpu"), torch.no_grad():
        for _ in range(3):  # a busy machine: the least disturbed of a few tries
            if _median_ms(append) < _median_ms(step) / 3:
                return
    raise AssertionError("appending to the cache was not small beside a decode step")
