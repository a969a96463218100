"""The attention_cost widget through the API: analytic values exactly (the handout's table
among them), measured ones present and labelled, the device's ceiling declared and enforced."""

from __future__ import annotations

import math

import pytest
import torch

from backend import device
from backend.compute import attention_cost as w
from backend.compute import measure
from tests.support.api import poster

URL = "/api/widgets/attention_cost"


# each test times under its own lock file and starts with no remembered timings
pytestmark = pytest.mark.usefixtures("fresh_timings")


post = poster(URL, status=None)  # POST to the widget: the response itself
answer = poster(URL)  # the same where it must be a 200: its JSON


def test_defaults_give_every_named_value_exactly_or_measured(client):
    body = answer(client)
    v = body["values"]
    assert body["params"] == {"context_len": 1024, "head_dim": 64, "n_heads": 1, "batch": 1,
                              "dtype": "float32"}
    # Analytic, by hand: 4 * 1024^2 * 64 FLOPs; 1024^2 float32 scores.
    assert v["flops"] == 4 * 1024 ** 2 * 64 == 268_435_456
    assert v["projection_flops"] == 8 * 1024 * 64 ** 2
    assert v["score_bytes"] == 1024 ** 2 * 4 == 4 * 2 ** 20
    assert v["eager_bytes"] == 8 * 1024 ** 2
    # Measured: five runs each after a warm-up, median and spread; peaks; labelled.
    assert len(v["runs_eager"]) == len(v["runs_fused"]) == v["repeats"] == 5
    assert v["ms_eager"] == sorted(v["runs_eager"])[2]
    assert v["spread_eager"] == max(v["runs_eager"]) - min(v["runs_eager"])
    assert all(t > 0 for t in v["runs_eager"] + v["runs_fused"])
    assert v["ladder_T"] == [128, 256, 512, 1024]
    assert v["peak_bytes_eager"] >= v["eager_bytes"]
    assert v["peak_bytes_fused"] == 1024 * 64 * 4 + 1024 * 4   # output + logsumexp
    assert v["max_abs_diff"] < 1e-5
    assert v["device"] == "cpu"
    assert v["measured_on"] == f"cpu (1 thread), float32, torch {torch.__version__}"
    assert v["measured_on"] in body["summary"] and v["measured_on"] in body["table"]["caption"]
    assert [r[0] for r in body["table"]["rows"]] == ["128", "256", "512", "1,024"]
    # one unit for memory on the whole screen: MiB in the values panel, summary and table
    mib = {o["name"]: o["unit"] for o in w.SPEC.to_json()["outputs"] if "peak" in o["name"]}
    assert mib == {"peak_mib_eager": "MiB", "peak_mib_fused": "MiB"}
    assert v["peak_mib_eager"] == v["peak_bytes_eager"] / 2 ** 20
    assert f"{v['peak_mib_eager']:.3g} MiB" in body["summary"]
    assert f"{v['peak_mib_fused']:.3g} MiB" in body["summary"]
    assert body["table"]["rows"][-1][3:] == [f"{v['peak_mib_eager']:.3g}",
                                             f"{v['peak_mib_fused']:.3g}"]
    assert "B" not in {o.get("unit") for o in w.SPEC.to_json()["outputs"]}
    # the spread is shown: bars from the fastest to the slowest run, and in the table
    bars = next(t for t in body["figure"]["data"] if t["name"] == "explicit, measured")["error_y"]
    assert [m + up for m, up in zip(v["ladder_ms_eager"], bars["array"])] == pytest.approx(
        v["ladder_slowest_eager"])
    assert [m - lo for m, lo in zip(v["ladder_ms_eager"], bars["arrayminus"])] == pytest.approx(
        v["ladder_fastest_eager"])
    assert f"({v['fastest_eager']:.3g}–{v['slowest_eager']:.3g})" in body["table"]["rows"][-1][1]
    assert {o["name"] for o in w.SPEC.to_json()["outputs"]} <= set(v)
    assert "narrow" in body["figure"]


def test_the_handouts_8000_16000_128000_table_and_its_bytes(client):
    # a fact for the prose, worked out when the book is built: no request carries it
    assert "table" not in post(client, context_len=16).get_json()["values"]
    t = w.facts(w.SPEC.resolve({"context_len": 16}))["table"]
    assert [t[n]["text"] for n in ("8000", "16000", "128000")] == [1, 2, 16]
    assert [t[n]["work"] for n in ("8000", "16000", "128000")] == [1, 4, 256]
    assert t["8000"]["score_bytes"] == 8000 ** 2 * 2 == 128_000_000
    assert t["128000"]["score_bytes"] == 128_000 ** 2 * 2 == 32_768_000_000
    assert t["128000"]["score_bytes_32"] == 32 * 32_768_000_000
    assert t["128000"]["flops_32"] == 4 * 128_000 ** 2 * 32 * 128


def test_the_ceiling_is_declared_in_the_spec_and_is_the_device_rule():
    spec = w.SPEC.param("context_len")
    assert spec.max == w.CEILING == w.ceiling()
    budget = device.memory_bytes() // 2
    assert device.memory_bytes() == device.CPU_MEMORY_BYTES == 512 * 2 ** 20
    by_memory = math.isqrt(budget // 8)
    by_work = math.isqrt(w.WORK_BUDGET["cpu"] // 64)
    assert (by_memory, by_work) == (5792, 1448)
    assert w.CEILING == min(by_memory, by_work) == 1448
    listed = next(p for p in w.SPEC.to_json()["params"] if p["name"] == "context_len")
    assert listed["max"] == 1448


def test_above_the_ceiling_is_a_400_naming_it_and_the_device(client):
    resp = post(client, context_len=w.CEILING + 1)
    assert resp.status_code == 400
    msg = resp.get_json()["error"]
    # numbers written as every other 400 writes them ("from 16 to 1448"), not with commas
    assert msg == ("'context length T' must be from 16 to 1448 on cpu at batch 1 × 1 head of "
                   "size 64 in float32 (this device's ceiling at that setting; more heads, batch "
                   "or head size lower it), got 1449")
    resp = post(client, context_len=1024, n_heads=4)
    assert resp.status_code == 400
    body = resp.get_json()
    assert body["param"] == "context_len"
    assert "from 16 to 724 on cpu at batch 1 × 4 heads of size 64" in body["error"]
    assert post(client, context_len=724, n_heads=4).status_code == 200
    # two controls moved at once: the combined ceiling, named (the page's Depends follow one)
    resp = post(client, context_len=724, n_heads=4, batch=2)
    assert resp.status_code == 400
    assert "from 16 to 512 on cpu at batch 2 × 4 heads of size 64" in resp.get_json()["error"]
    # and where the combined rule allows more than one control's Depends, the rule decides:
    # 32 heads alone allow 256 at size 64; at size 16 they allow 512
    assert post(client, context_len=512, n_heads=32, head_dim=16).status_code == 200
    assert post(client, context_len=513, n_heads=32, head_dim=16).status_code == 400


def test_the_sliders_top_follows_each_other_control_in_the_spec():
    """Spec's Depends: each of heads, batch, head size and dtype, moved alone, sets the context
    slider's top to the ceiling there, so the page never offers a T the API refuses."""
    p = w.SPEC.param("context_len")
    labels = {q.name: q.label for q in w.SPEC.params}
    defaults = w.SPEC.defaults()
    moves = ([{"n_heads": h} for h in range(1, 33)] + [{"batch": b} for b in range(1, 17)]
             + [{"head_dim": d} for d in range(16, 257, 16)]
             + [{"dtype": name} for name in w.DTYPES])
    for move in moves:
        setting = {**defaults, **move}
        top = p.effective(setting, labels)["max"]
        assert top == w.slider_top(setting["n_heads"], setting["batch"], setting["head_dim"],
                                   w.DTYPES[setting["dtype"]]), move
        w.SPEC.resolve({**move, "context_len": top})
        with pytest.raises(w.ParamError):
            w.SPEC.resolve({**move, "context_len": top + 1})
    listed = next(q for q in w.SPEC.to_json()["params"] if q["name"] == "context_len")
    assert "depends" not in listed  # one rule for every control at once: the spec's Limits
    factors = [sum((t[1] for t in lim["terms"]), []) for lim in listed["limits"]]
    assert [{x if isinstance(x, str) else x[0] for x in f} - {"context_len"}
            for f in factors] == [{"batch", "n_heads", "dtype"}, {"batch", "n_heads", "head_dim"}]
    assert p.effective({**defaults, "n_heads": 3}, labels)["max"] == 836


def test_the_combined_ceiling_is_the_spec_rule_for_every_setting():
    """Several controls moved at once: the spec's effective top is the true ceiling (the page
    evaluates the same Limits), the API accepts it and refuses one more."""
    p = w.SPEC.param("context_len")
    labels = {q.name: q.label for q in w.SPEC.params}
    for h in (1, 3, 7, 20, 32):
        for B in (1, 2, 10, 16):
            for d in (16, 64, 160, 256):
                for dt in w.DTYPES:
                    setting = {"n_heads": h, "batch": B, "head_dim": d, "dtype": dt}
                    top = max(p.effective({**setting, "context_len": 16}, labels)["max"], 16)
                    assert top == max(w.slider_top(h, B, d, w.DTYPES[dt]), 16)
                    # the memory rule is the reference's own largest_context
                    assert w.LIMITS[0].top(w._T, setting, 16, 2 ** 40) == max(16, w.ac.largest_context(
                        w.memory_budget(), h, B, w.DTYPES[dt]))
                    if top > 16:
                        w.SPEC.resolve({**setting, "context_len": top})
                        with pytest.raises(w.ParamError):
                            w.SPEC.resolve({**setting, "context_len": top + 1})


def test_device_limits_for_health():
    assert w.device_limits() == {"max_context_len": 1448, "memory_budget_bytes": 256 * 2 ** 20,
                                 "work_budget": 2 ** 27}


@pytest.mark.parametrize("params,label", [({"head_dim": 24}, "'head size d_head'"),
                                          ({"dtype": "fp8"}, "'dtype'"),
                                          ({"batch": 0}, "'batch B'"),
                                          ({"context_len": 8}, "'context length T'")])
def test_bad_controls_are_400s_naming_the_label(client, params, label):
    resp = post(client, **params)
    assert resp.status_code == 400
    assert label in resp.get_json()["error"]


def test_every_corner_of_the_sliders_is_bounded_by_the_budgets():
    """The largest setting of every other slider still leaves a valid context (16), and the
    work and memory at any allowed setting stay inside the device's budgets."""
    for d in (16, 256):
        for h in (1, 32):
            for B in (1, 16):
                for name, dtype in w.DTYPES.items():
                    T = w.ceiling(h, B, d, dtype)
                    assert T >= w.SPEC.param("context_len").min
                    assert B * h * T * T * d <= w.WORK_BUDGET["cpu"]
                    assert B * h * T * T * (10 if name != "float32" else 8) <= w.memory_budget()


def test_timings_wait_for_the_host_wide_lock(monkeypatch, tmp_path):
    """A timing never runs while another holds the lock; it gives up with the busy error."""
    from backend.errors import Busy
    monkeypatch.setattr(measure, "LOCK_WAIT_SECONDS", 0.05)
    with measure.timing_lock():
        with pytest.raises(Busy):
            w.compute(w.SPEC.resolve({"context_len": 16}))
