"""Every qualitative sentence of docs/chapters/kv-cache.md, checked over computed values: at the
settings the text names, and across the steps slider where it invites the reader to move it.
Measured numbers are checked for ordering only."""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path

import pytest
import torch

from backend.reference.generate import token_steps
from backend.reference.kv_cache import kv_cache_bytes_for
from backend.widgets import kv_decode as w
from backend.widgets import measure

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def private_lock(tmp_path_factory):
    before = measure.LOCK_PATH
    measure.LOCK_PATH = str(tmp_path_factory.mktemp("lock") / "timing.lock")
    yield
    measure.LOCK_PATH = before


def values(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def test_the_handouts_counts_at_1000_400_and_800_tokens():
    v = values(steps=25)  # the handout values ride along with any setting
    assert (v["handout_rows_1000_no_cache"], v["handout_rows_1000_cache"]) == (500_500, 1_000)
    assert (v["handout_rows_400_no_cache"], v["handout_rows_400_cache"]) == (400 * 401 // 2, 400)
    assert (v["handout_rows_800_no_cache"], v["handout_rows_800_cache"]) == (320_400, 800)


@pytest.mark.parametrize("n", [50, 100, 200, 400])
def test_doubling_the_length_doubles_the_ratio_and_quadruples_the_rows_saved(n):
    ratio = lambda m: token_steps(m, False) / token_steps(m, True)  # noqa: E731
    saved = lambda m: token_steps(m, False) - token_steps(m, True)  # noqa: E731
    assert ratio(2 * n) / ratio(n) == pytest.approx(2, rel=0.02)
    assert ratio(n) == pytest.approx(n / 2, rel=0.02)  # "about n/2"
    assert saved(2 * n) / saved(n) == pytest.approx(4, rel=0.05)


def test_the_runs_count_the_formula_at_400_steps_and_the_cached_run_is_faster():
    v = values(steps=400)
    assert (v["key_rows_no_cache"], v["key_rows_cache"]) == (80_200, 400)
    assert v["tokens_identical"] and v["max_logit_diff"] <= 1e-5  # "float rounding"
    assert v["ms_cache"] < v["ms_no_cache"]
    # "a speed-up ... far below the ... fewer key rows"
    assert v["speedup"] < v["work_ratio"] / 10


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


def test_moving_steps_down_draws_the_times_together_and_up_widens_the_gap():
    gap = {n: values(steps=n)["ms_no_cache"] - values(steps=n)["ms_cache"] for n in (25, 100, 400)}
    assert gap[25] < gap[400] and gap[100] < gap[400]


def test_the_larger_model_gains_more_from_the_cache_at_the_same_length():
    book, small = values(model="book", steps=96), values(steps=96)
    assert book["work_ratio"] == small["work_ratio"]  # same prompt, same steps: same rows saved
    assert book["speedup"] > small["speedup"]
    assert (book["n_layers"], w.model_for("book").config.d_model) == (4, 128)
    assert (small["n_layers"], w.RANDOM_CONFIG.d_model) == (2, 32)


def test_the_cache_grows_one_fixed_slice_per_token():
    for params in ({"steps": 25}, {"steps": 200, "prompt_len": 8}, {"model": "book", "steps": 96}):
        v = values(**params)
        cfg = w.model_for(params.get("model", "random")).config
        assert v["cache_positions"] == params.get("prompt_len", 1) + params["steps"] - 1
        assert v["cache_bytes_per_token"] == 2 * cfg.n_layers * cfg.n_kv_heads * cfg.d_head * 4
        assert v["cache_bytes"] == v["cache_positions"] * v["cache_bytes_per_token"]


def test_the_books_model_numbers_the_chapter_names():
    v = values(model="book", steps=96)
    assert (v["n_layers"], v["n_kv_heads"], v["d_head"]) == (4, 2, 32)
    assert v["cache_bytes_per_token"] == 2_048
    book = w.model_for("book").config
    assert book.max_seq_len == 128 == 32 + w.BOOK_MAX_STEPS  # "up to 96 tokens ... 128 positions"
    assert w.RANDOM_CONFIG.n_layers == 2 and w.MAX_STEPS == 400
    assert values(steps=25)["repeats"] == 3


def test_earlier_keys_and_values_stay_in_a_decoder_and_move_in_an_encoder():
    v = values(model="book", steps=96, prompt_len=32)
    assert v["prefix_kv_change_causal"] <= 1e-5
    bi = v["prefix_kv_change_bidirectional"]
    assert bi[0] == 0.0  # layer 1: projections of each token's own embedding
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
    assert moved[0] == 0  # layer 1 never moves
    assert all(n == v["prefix_positions"] for n in moved[1:])  # "every one of them", layers 2-4
    rel, bi = v["prefix_kv_relative_bidirectional"], v["prefix_kv_change_bidirectional"]
    assert rel[0] == bi[0] == 0.0 and all(r > 0 for r in rel[1:])
    assert rel[3] > rel[1]  # layer 4's change is the larger share, as the two figures read


def test_about_12_d_squared_multiply_adds_per_position_per_layer():
    from backend.reference.config import ModelConfig
    from backend.reference.grouped_query import GroupedQueryAttention
    from backend.reference.mlp import MLP
    d = 64
    cfg = ModelConfig(vocab_size=10, d_model=d, n_layers=1, n_heads=4, n_kv_heads=4, d_ff=4 * d,
                      max_seq_len=8)
    weights = lambda m: sum(p.numel() for n, p in m.named_parameters() if n.endswith("weight"))
    assert weights(GroupedQueryAttention(cfg)) == 4 * d * d
    assert weights(MLP(cfg)) == 8 * d * d


def test_long_settings_are_timed_fewer_times():
    assert values(steps=25)["repeats"] == values()["repeats"] == values(steps=200)["repeats"] == 3
    v = values(steps=400)
    assert v["repeats"] == 1 and v["key_rows_no_cache"] > v["timing_row_budget"]
    assert v["timing_ms"] >= sum(v["runs_cache"]) + sum(v["runs_no_cache"])


@pytest.mark.parametrize("params", [{"steps": 1, "prompt_len": 32}, {"steps": 1}, {"steps": 2}])
def test_with_nothing_to_save_the_cache_is_no_faster(params):
    """Exercise 2 and "at one or two steps there is almost nothing to save"."""
    v = values(**params)
    assert v["key_rows_no_cache"] - v["key_rows_cache"] <= 1
    assert v["speedup"] < 1.3  # no real gain; below 1 on some runs, which the widget words as "slower"
    assert v["cache_positions"] == params.get("prompt_len", 1) + params["steps"] - 1  # it filled one


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


def test_the_notebooks_bare_tensor_model_gains_more_at_400_steps():
    """Exercise 1 measures 'a larger speed-up at the same 400 steps than the widget does'.

    'Far larger' (1.5x the widget's) held here but not on a CI machine (3.5x against 2.5x), so
    the sentence claims only the order."""
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
    assert (ns["rows_no"], ns["rows_c"]) == (80_200, 400) and ns["ids_no"] == ns["ids_c"]
    notebook = ns["ms_no"] / ns["ms_c"]
    assert notebook > values(steps=400)["speedup"]


def test_output_tokens_are_priced_above_input_in_the_linked_example():
    """'a higher one for output tokens': the prices serving.md's prefix-caching section uses."""
    from backend.widgets import prefix_cache_cost
    default = {p.name: p.default for p in prefix_cache_cost.SPEC.params}
    assert default["price_output"] > default["price_input"]
    text = (ROOT / "docs/chapters/serving.md").read_text()
    assert "\n## Prefix caching and its price\n" in text  # the anchor the chapter links
