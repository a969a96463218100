"""The kv_decode widget through the API: the key-row counts, identical tokens with and without a
cache, per-step times for shape only, bounded inputs, serialised timings kept for minutes."""

from __future__ import annotations

import json
import statistics

import pytest
import torch

from backend.compute import kv_decode as w
from backend.compute import measure
from backend.errors import Busy
from backend.reference import decode
from backend.reference.generate import token_steps
from tests.support.api import poster

URL = "/api/widgets/kv_decode"


@pytest.fixture(autouse=True)
def private_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(measure, "LOCK_PATH", str(tmp_path / "timing.lock"))
    w.measure.cache_clear()
    w.prefix_change.cache_clear()
    yield
    w.measure.cache_clear()
    w.prefix_change.cache_clear()


post = poster(URL, status=None)  # POST to the widget: the response itself


def test_400_steps_reproduce_the_handouts_key_rows_and_the_runs_agree(client):
    resp = post(client, steps=400)
    assert resp.status_code == 200
    body = resp.get_json()
    v = body["values"]
    assert (v["key_rows_no_cache"], v["key_rows_cache"]) == (80_200, 400)
    assert v["work_ratio"] == 80_200 / 400
    assert v["tokens_identical"] is True and v["max_logit_diff"] <= 1e-5
    # 80,200 uncached key rows pass the timing budget: 400 steps are timed once each
    assert v["repeats"] == 1 == len(v["runs_cache"]) == len(v["runs_no_cache"])
    assert v["ms_cache"] == statistics.median(v["runs_cache"])
    assert v["spread_no_cache"] == [min(v["runs_no_cache"]), max(v["runs_no_cache"])]
    assert v["speedup"] == pytest.approx(v["ms_no_cache"] / v["ms_cache"], rel=1e-12)
    # the cache holds every position but the last token: 2 (K, V) x L x n_kv x d_head x 4 bytes
    assert v["cache_positions"] == 400 - 1 + 1
    assert v["cache_bytes_per_token"] == 2 * 2 * 1 * 16 * 4
    assert v["device"] == "cpu" and v["measured_on"] == f"cpu (1 thread), float32, torch {torch.__version__}"
    assert v["measured_on"] in body["summary"] and "80,200" in body["summary"]
    assert body["table"]["rows"][0][1] == "80,200" and body["table"]["rows"][1][1] == "400"
    assert v["ms_no_cache"] == pytest.approx(sum(v["step_ms_no_cache"]))  # one run: its steps
    assert len(v["step_ms_cache"]) == 400 and v["prefill_ms"] == v["step_ms_cache"][0]
    assert {o["name"] for o in w.SPEC.to_json()["outputs"]} <= set(v)


@pytest.mark.parametrize("params", [{"steps": 30, "prompt_len": 7},
                                    {"model": "book", "steps": 40, "prompt_len": 12}])
def test_key_rows_follow_the_formula_with_a_prompt_on_both_models(client, params):
    v = post(client, **params).get_json()["values"]
    n, p = params["steps"], params["prompt_len"]
    assert v["key_rows_no_cache"] == n * p + n * (n - 1) // 2 == token_steps(n, False, p)
    assert v["key_rows_cache"] == p + n - 1
    assert v["tokens_identical"] is True and v["max_logit_diff"] <= 1e-4


def test_the_figure_draws_time_per_step_and_the_counts_on_the_formula_curves():
    out = w.compute(w.SPEC.resolve({"steps": 120}))
    v, data = out["values"], out["figure"]["data"]
    dots_no, line_no, dots_c, line_c = data[:4]
    assert dots_no["x"] == v["step_positions"] == list(range(1, 121))
    assert dots_no["y"] == v["step_ms_no_cache"] and dots_c["y"] == v["step_ms_cache"]
    assert len(line_no["x"]) <= w.MAX_BUCKETS and line_no["y"] == w.buckets(dots_no["x"], dots_no["y"])[1]
    assert out["figure"]["layout"]["yaxis"]["range"][1] >= max(line_no["y"] + line_c["y"])
    no_cache, cache, counted = data[4:7]
    assert len(no_cache["x"]) <= w.MAX_CURVE_POINTS + 1 and no_cache["x"][-1] == 120
    assert no_cache["y"][-1] == counted["y"][0] and cache["y"][-1] == counted["y"][1]
    assert counted["x"] == [120, 120] and counted["yaxis"] == "y2"
    assert "narrow" in out["figure"]
    text = json.dumps(out["figure"]).lower()
    for key in ("paper_bgcolor", "plot_bgcolor", "#fff", "#000", "white", "black"):
        assert key not in text


def test_step_statistics_are_the_fastest_over_runs_quarters_and_stretches():
    """Load only adds time: each statistic is a minimum, so a burst of other work that slows a
    stretch of steps (even most of a run) does not move it."""
    assert w.per_step([(1.0, 5.0, 2.0), (3.0, 1.0, 2.0), (2.0, 9.0, 2.0)]) == [1.0, 1.0, 2.0]
    ms = [100.0] + [1.0] * 4 + [50.0] + [2.0] * 3 + [3.0] * 4  # step 0 (prefill) is left out
    assert w.quarters(ms) == (1.0, 3.0)
    assert w.quarters([4.0]) == (4.0, 4.0) and w.quarters([9.0, 2.0, 3.0]) == (2.0, 3.0)
    # an uncached run whose middle half was slowed 30x by other work: the quarters still climb
    true = [1.0 + 0.01 * i for i in range(400)]
    busy = [t * (30 if 100 <= i < 300 else 1) for i, t in enumerate(true)]
    early, late = w.quarters(busy)
    assert late > early and (early, late) == w.quarters(true)
    xs = list(range(1, 12))
    assert w.slope(xs, [0.0] + [2 * x + 1 for x in xs[1:]]) == pytest.approx(2.0)
    assert w.slope([1, 2], [1.0, 5.0]) == 0.0
    mids, lows = w.buckets(list(range(100)), [float(i % 7) for i in range(100)], n=10)
    assert len(mids) == 10 and mids[0] == 4.5 and lows[0] == 0.0 and lows[1] == 0.0


def test_step_times_is_generates_loop_and_counts_every_step():
    model, prompt = w.model_for("random"), w.prompt_for("random", 5)
    for use_cache in (True, False):
        ms, tokens = decode.step_times(model, prompt, 12, use_cache)
        assert len(ms) == 12 and all(t > 0 for t in ms)
        ref = decode.generate(model, prompt, 12, use_cache=use_cache, greedy=True)
        assert torch.equal(tokens, ref.tokens)


def test_the_random_model_is_drawn_from_a_private_generator():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a, b = w.random_model(), w.random_model()
    assert torch.equal(torch.random.get_rng_state(), before)  # the global generator is untouched
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), name  # the same weights every time
        if name.endswith("norm.weight") or ".norm" in name and name.endswith("weight"):
            assert torch.all(p == 1)
    emb = a.embed_tokens.weight
    assert abs(emb.std().item() - 0.02) < 0.002 and abs(emb.mean().item()) < 0.002


def test_timings_are_forgotten_after_their_ttl(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(measure.time, "monotonic", lambda: clock[0])
    calls = []

    @measure.remembered_for(60, maxsize=2)
    def f(x):
        calls.append(x)
        return len(calls)

    assert f(1) == 1 and f(1) == 1
    clock[0] += 59
    assert f(1) == 1
    clock[0] += 2
    assert f(1) == 2  # measured 61 s ago: measured again
    assert f(2) == 3 and f(3) == 4  # two entries at most: 3 pushed out the oldest, 1
    assert f(3) == 4 and f(1) == 5
    f.cache_clear()
    assert f(1) == 6 and f.__wrapped__(1) == 7
    assert w.measure.ttl_seconds == w.MEASURE_TTL_SECONDS <= w.SPEC.result_ttl


@pytest.mark.parametrize("body,param,words", [
    ({"steps": 0}, "steps", "'new tokens' must be from 1 to 400"),
    ({"steps": 401}, "steps", "from 1 to 400"),
    ({"model": "book", "steps": 97}, "steps", "128 positions"),
    ({"prompt_len": 33}, "prompt_len", "'prompt length' must be from 1 to 32"),
    ({"model": "gpt"}, "model", "'model' must be one of"),
    ({"steps": 2.5}, "steps", "must be an integer"),
])
def test_bad_input_is_a_400_naming_the_control(client, body, param, words):
    resp = post(client, **body)
    assert resp.status_code == 400
    assert resp.get_json()["param"] == param and words in resp.get_json()["error"]


def test_timed_runs_follow_the_row_budget_and_bound_every_request():
    assert [w.repeats_for(n, 1) for n in (1, 100, 200, 250, 300, 400)] == [3, 3, 3, 2, 1, 1]
    assert w.repeats_for(400, 32) == 1 and w.repeats_for(96, 32) == 3
    worst = max(w.repeats_for(n, p) * token_steps(n, False, p)
                for n in range(1, w.MAX_STEPS + 1) for p in (1, 8, 16, 32))
    assert worst <= max(w.TIMING_ROW_BUDGET, token_steps(w.MAX_STEPS, False, w.MAX_PROMPT)) == 92_600


def test_one_step_marks_its_points_and_says_no_rows_are_saved():
    """Exercise 2's setting: one x point per curve, which a line alone would not draw."""
    out = w.compute(w.SPEC.resolve({"steps": 1, "prompt_len": 32}))
    data, notes = out["figure"]["data"], [a["text"] for a in out["figure"]["layout"]["annotations"]]
    assert data[4]["x"] == [1] and "markers" in data[4]["mode"] and "markers" in data[5]["mode"]
    assert "markers" in data[1]["mode"] and data[1]["x"] == [32]
    s = out["values"]["speedup"]
    assert notes[0] == "too few steps to see a trend"
    assert notes[1] == "1 step: no key rows saved<br>" + w._speed_text(s)
    assert out["values"]["same_tokens"] == "yes"
    assert w._speed_text(0.8) == "in total: cache 1.2× slower"
    assert w._speed_text(2.94) == "in total: cache 2.9× faster"
    # within 10 % either way one decimal would print "1.0× slower": two decimals say more
    assert w._speed_text(0.96) == "in total: cache 0.96× as fast"
    assert w._speed_text(1.04) == "in total: cache 1.04× as fast"
    assert w._speed_text(2.94) == "in total: cache 2.9× faster"
    long = w.compute(w.SPEC.resolve({"steps": 120}))
    assert long["figure"]["data"][4]["mode"] == "lines" and long["figure"]["layout"]["yaxis2"]["dtick"] == 1
    assert long["figure"]["layout"]["annotations"][0]["text"].startswith("last quarter against first")
    assert "one run" not in long["summary"] and "3 runs" in long["summary"]


def test_every_setting_fits_its_models_positions():
    assert w.MAX_PROMPT + w.MAX_STEPS <= w.RANDOM_CONFIG.max_seq_len
    book = w.model_for("book").config
    assert w.MAX_PROMPT + w.BOOK_MAX_STEPS <= book.max_seq_len


def test_timings_run_under_the_lock_on_one_thread_and_are_remembered(monkeypatch):
    seen = []
    real = decode.step_times

    def spy(*a, **k):
        with pytest.raises(Busy):  # the lock is held: a second taker waits, gives up
            with measure.timing_lock(wait=0.05):
                pass
        seen.append(torch.get_num_threads())
        return real(*a, **k)

    monkeypatch.setattr(decode, "step_times", spy)
    before = torch.get_num_threads()
    a = w.compute(w.SPEC.resolve({"steps": 5}))["values"]
    b = w.compute(w.SPEC.resolve({"steps": 5}))["values"]
    assert seen == [1] * 6 and torch.get_num_threads() == before  # 3 runs of each, once
    assert a["runs_cache"] == b["runs_cache"] and a["repeats"] == 3


def test_a_gpu_host_gets_its_own_copy_of_the_shared_book_model(monkeypatch):
    """Simulated with the meta device: the shared model other widgets use must stay where it is."""
    from backend.bookmodel.load import shared_model
    w.model_for.cache_clear()
    monkeypatch.setattr(w.device, "device", lambda: "meta")
    try:
        moved = w.model_for("book")
        shared = shared_model()[0]
        assert moved is not shared and next(moved.parameters()).device.type == "meta"
        assert next(shared.parameters()).device.type == "cpu"
    finally:
        w.model_for.cache_clear()
