"""The sequential_vs_parallel widget through the API: named values, the handout's numbers,
bounded work, and timings that are serialised across threads and processes."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import threading
import time

import pytest
import torch

from backend.compute import measure
from backend.compute import sequential_vs_parallel as w
from backend.errors import Busy
from backend.reference import recurrence
from tests.support.api import poster

URL = "/api/widgets/sequential_vs_parallel"


# each test times under its own lock file and starts with no remembered timings
pytestmark = pytest.mark.usefixtures("fresh_timings")


post = poster(URL, status=None)  # POST to the widget: the response itself
answer = poster(URL)  # the same where it must be a 200: its JSON


def test_defaults_name_every_value_and_label_the_device(client):
    body = answer(client)
    v = body["values"]
    assert body["params"] == {"length": 100, "width": 256, "factor": 0.9}
    per_round = w.repeats_for(100, 256)
    assert w.MIN_REPEATS <= per_round <= w.MAX_REPEATS
    assert v["repeats"] in [per_round * k for k in range(1, w.MAX_ROUNDS + 1)]
    assert len(v["runs_sequential"]) == len(v["runs_parallel"]) == v["repeats"]
    # the loop: each stretch's fastest run, summed, no slower than its fastest whole run
    assert v["ms_sequential"] <= min(v["runs_sequential"])
    assert v["ms_parallel"] == min(v["runs_parallel"])
    assert v["median_sequential"] == statistics.median(v["runs_sequential"])
    assert v["us_per_step"] == pytest.approx(v["ms_sequential"] * 10, rel=1e-12)
    assert v["speedup"] == pytest.approx(v["ms_sequential"] / v["ms_parallel"], rel=1e-12)
    assert v["spread_sequential"] == max(v["runs_sequential"]) - min(v["runs_sequential"])
    assert all(x > 0 for x in v["runs_sequential"] + v["runs_parallel"])
    assert v["device"] == "cpu" and v["dtype"] == "float32" and v["torch"] == torch.__version__
    assert v["measured_on"] == f"cpu (1 thread), float32, torch {torch.__version__}"
    assert v["measured_on"] in body["summary"] and str(v["repeats"]) in body["summary"]
    assert [row[0] for row in body["table"]["rows"]] == ["one after another", "all at once"]
    assert body["table"]["rows"][0][1] == f"{v['ms_sequential']:.3g}"
    assert body["table"]["rows"][0][3] == f"{max(v['runs_sequential']):.3g}"
    assert ("notice" in body) == (not v["settled"])
    assert v["measured_on"] in body["table"]["caption"]
    assert {o["name"] for o in w.SPEC.to_json()["outputs"]} <= set(v)


def test_the_handouts_gradient_products_through_the_api(client):
    vanish = post(client, factor=0.9).get_json()["values"]["gradient_product"]
    explode = post(client, factor=1.1).get_json()["values"]["gradient_product"]
    assert f"{vanish:.5f}" == "0.00003"
    assert f"{explode:,.0f}" == "13,781"


def test_the_gradient_curve_is_the_reference_product_thinned_to_the_screen():
    out = w.compute(w.SPEC.resolve({"length": 1024, "width": 16, "factor": 1.01}))
    curve = next(t for t in out["figure"]["data"] if t.get("name") == "1.01 per step")
    assert len(curve["x"]) <= w.MAX_CURVE_POINTS + 1
    assert curve["x"][0] == 0 and curve["x"][-1] == 1024
    full = recurrence.gradient_through_steps(1.01, 1024)
    assert curve["y"] == [full[t] for t in curve["x"]]
    assert out["values"]["gradient_product"] == full[-1]
    assert "narrow" in out["figure"]


@pytest.mark.parametrize("body,param,words", [
    ({"length": 0}, "length", "from 1 to 1024"),
    ({"width": 1024}, "width", "from 16 to 512"),
    ({"factor": 2}, "factor", "from 0.5 to 1.5"),
    ({"length": 10.5}, "length", "must be an integer"),
])
def test_bad_input_is_a_400_that_names_the_control(client, body, param, words):
    resp = post(client, **body)
    assert resp.status_code == 400
    assert resp.get_json()["param"] == param and words in resp.get_json()["error"]


def test_the_largest_setting_is_within_the_work_budget_and_computes(client):
    assert w._max_work_of_ranges() <= w.MAX_WORK
    resp = post(client, length=1024, width=512)
    assert resp.status_code == 200
    # the fewest repeats, for the most work
    assert resp.get_json()["values"]["repeats"] % w.MIN_REPEATS == 0
    assert w.repeats_for(1024, 512) == w.MIN_REPEATS


def test_the_lock_excludes_another_thread_and_gives_up_after_the_wait():
    errors = []

    def contender():
        try:
            with measure.timing_lock(wait=0.2):
                pass
        except Busy as exc:
            errors.append(exc)

    with measure.timing_lock():
        t = threading.Thread(target=contender)
        start = time.monotonic()
        t.start()
        t.join(5)
        waited = time.monotonic() - start
    assert len(errors) == 1 and errors[0].retry_after == 2 and 0.2 <= waited < 2
    with measure.timing_lock(wait=0.2):  # released: free again
        pass


HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(30)
"""


def test_another_process_holding_the_lock_makes_the_api_answer_503(client, monkeypatch):
    """What a second gunicorn worker timing at the same moment looks like to this one."""
    monkeypatch.setattr(measure, "LOCK_WAIT_SECONDS", 0.3)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, measure.LOCK_PATH],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        start = time.monotonic()
        resp = post(client, length=8, width=16)
        assert time.monotonic() - start < 5
        assert resp.status_code == 503
        assert resp.headers["Retry-After"] == "2"
        assert "busy timing another reader" in resp.get_json()["error"]
    finally:
        holder.kill()
        holder.wait()
    assert post(client, length=8, width=16).status_code == 200  # the lock died with it


def test_concurrent_requests_are_timed_one_at_a_time(monkeypatch):
    spans = []

    def fake_time_both(*args, **kwargs):
        start = time.monotonic()
        time.sleep(0.15)
        spans.append((start, time.monotonic()))
        return recurrence.Timing((2.0,) * 5, (1.0,) * 5)

    monkeypatch.setattr(recurrence, "time_both", fake_time_both)
    threads = [threading.Thread(target=w.compute, args=({"length": n, "width": 16,
                                                          "factor": 0.9},))
               for n in (2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    spans.sort()
    assert len(spans) == 3
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))


def test_moving_the_factor_reuses_the_timing(monkeypatch):
    calls = []
    real = recurrence.time_both
    monkeypatch.setattr(recurrence, "time_both", lambda *a, **k: calls.append(1) or real(*a, **k))
    w.measure.cache_clear()
    a = w.compute({"length": 32, "width": 64, "factor": 0.9})["values"]
    # one call, or up to MAX_ROUNDS when load leaves the first round unsettled
    timed = len(calls)
    assert 1 <= timed <= w.MAX_ROUNDS
    b = w.compute({"length": 32, "width": 64, "factor": 1.3})["values"]
    assert len(calls) == timed, "moving the factor re-timed the recurrence"
    assert a["runs_sequential"] == b["runs_sequential"] and a["speedup"] == b["speedup"]
    assert a["gradient_product"] != b["gradient_product"]


def test_the_timing_runs_on_one_cpu_thread_and_restores_the_setting(monkeypatch):
    seen = []
    monkeypatch.setattr(recurrence, "time_both",
                        lambda *a, **k: seen.append(torch.get_num_threads())
                        or recurrence.Timing((2.0,), (1.0,)))
    before = torch.get_num_threads()
    w.compute({"length": 4, "width": 16, "factor": 0.9})
    assert seen == [1] and torch.get_num_threads() == before


def test_the_figure_leaves_the_theme_to_the_page():
    fig = w.compute(w.SPEC.defaults())["figure"]
    text = json.dumps(fig).lower()
    for key in ("paper_bgcolor", "plot_bgcolor", "#fff", "#000", "white", "black"):
        assert key not in text
    assert fig["layout"]["yaxis"]["type"] == "linear"  # bar heights compare as the times do
    assert fig["layout"]["yaxis"]["range"][0] == 0


def test_every_run_is_drawn_beside_its_median():
    out = w.compute(w.SPEC.resolve({"length": 8, "width": 16}))
    v, data = out["values"], out["figure"]["data"]
    dots = {t["name"]: t["y"] for t in data if t["type"] == "scatter" and "each run" in t["name"]}
    assert dots == {"one after another, each run": v["runs_sequential"],
                    "all at once, each run": v["runs_parallel"]}
    bars = [t for t in data if t["type"] == "bar"]
    assert [b["y"][0] for b in bars] == [v["ms_sequential"], v["ms_parallel"]]
    assert [b["text"][0] for b in bars] == [f"{v['ms_sequential']:.3g} ms",
                                            f"{v['ms_parallel']:.3g} ms"]


def test_an_unconfirmed_fastest_run_is_measured_again_and_the_runs_pooled(monkeypatch):
    """A lone fast run among slow ones is not a floor: measure another round, pool, stop once
    several runs agree on the fastest."""
    rounds = iter([recurrence.Timing((1.0, 3.0, 3.1, 2.9, 3.3), (0.1,) * 5),
                   recurrence.Timing((1.02, 1.05, 4.0, 4.0, 4.0), (0.1,) * 5),
                   recurrence.Timing((9.0,) * 5, (9.0,) * 5)])
    calls = []
    monkeypatch.setattr(recurrence, "time_both",
                        lambda *a, **k: calls.append(k["warmup"]) or next(rounds))
    out = w.compute({"length": 5, "width": 16, "factor": 0.9})
    v = out["values"]
    assert calls == [2, 1]  # two rounds; only the first pays the full warm-up
    assert v["repeats"] == 10 and v["settled"] and v["ms_sequential"] == 1.0
    assert "notice" not in out


def test_a_timing_that_never_settles_says_so(monkeypatch):
    lone = iter(recurrence.Timing((fast, 5.0, 5.0, 5.0, 5.0), (0.1,) * 5)
                for fast in (1.0, 1.5, 2.0))  # each round's fastest run disagrees with the others
    monkeypatch.setattr(recurrence, "time_both", lambda *a, **k: next(lone))
    out = w.compute({"length": 6, "width": 16, "factor": 0.9})
    assert out["values"]["repeats"] == 5 * w.MAX_ROUNDS and not out["values"]["settled"]
    assert "busy" in out["notice"]


@pytest.mark.parametrize("runs,expected", [
    ((1.0, 1.05, 1.09, 7.0), True),     # three runs within 10% of the fastest
    ((1.0, 1.05, 1.2, 1.3), False),     # only two
    ((1.0, 2.0, 3.0), False),
    ((4.0,), True),                     # a single run is all there is
])
def test_settled_asks_for_several_runs_at_the_floor(runs, expected):
    assert measure.settled(runs) is expected


def test_short_gradients_get_whole_step_ticks_and_phones_get_short_exponents():
    fig = w.compute(w.SPEC.resolve({"length": 1, "width": 16}))["figure"]
    assert fig["layout"]["xaxis2"]["dtick"] == 1
    assert fig["narrow"]["yaxis2"]["exponentformat"] == "e"
    long = w.compute(w.SPEC.resolve({"length": 1024, "width": 16}))["figure"]
    assert "dtick" not in long["layout"]["xaxis2"]


def test_the_loop_is_each_stretchs_fastest_run_summed():
    """A pre-emption lands in one stretch of one run: with every whole run disturbed somewhere,
    the fastest of each stretch, summed, is still the undisturbed loop."""
    runs = ((1.0, 9.0, 1.0), (9.0, 1.0, 1.0), (1.0, 1.0, 9.0))     # three runs, three stretches
    t = recurrence.Timing(tuple(map(sum, runs)), (0.5,) * 3, runs)
    assert min(t.sequential_ms) == 11.0 and t.ms_sequential == 3.0 and t.speedup == 6.0
    assert not w.loop_settled(t)                  # two fast runs per stretch: not yet confirmed
    more = runs + ((1.0, 1.05, 9.0), (9.0, 9.0, 1.02))  # a third each, no whole run undisturbed
    assert w.loop_settled(recurrence.Timing(tuple(map(sum, more)), (0.5,) * 5, more))


def test_time_both_clocks_the_loop_in_at_most_max_stretches():
    g = torch.Generator().manual_seed(0)
    for T in (1, 39, 40, 41, 100):
        t = recurrence.time_both(*recurrence.random_problem(T, 16, g), repeats=2)
        assert len(t.stretches_ms) == 2
        stretch = math.ceil(T / recurrence.MAX_STRETCHES)
        assert all(len(s) == math.ceil(T / stretch) <= recurrence.MAX_STRETCHES
                   for s in t.stretches_ms)
        assert t.sequential_ms == tuple(map(sum, t.stretches_ms))
