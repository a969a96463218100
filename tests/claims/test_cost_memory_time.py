"""The memory and time sentences of docs/chapters/cost.md, asserted over computed values.

Peak memory on a CPU is counted by a hook and does not depend on load; timing claims compare
*fastest* runs (load only ever adds time) and ask for factors far from what the T^2 work
predicts (8x where about 64x is expected), so a loaded 2-core machine cannot fake or break them.
The chapter's counted claims are in test_cost.py. Each test names the sentence it checks."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from backend.compute import attention_cost as w
from backend.reference import attention_cost as ac

TOP = w.CEILING
HEAD_DIMS = (16, 64, 256)                 # the head-size slider's ends and default
# a timing lock of each test's own (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("private_timing_lock")


def values(**params):
    """What `{{ value("attention_cost", ...) }}` reads: compute's values and the build's facts."""
    resolved = w.SPEC.resolve(params)
    return {**w.compute(resolved)["values"], **w.facts(resolved)}


# "In float32 it is the scores and the weights side by side, 8 bytes per query-key pair ...
# 2 + 4 + 4 = 10 bytes per pair." "the explicit path's peak is the scores and the weights, plus
# its output; the fused path's is its output and one number per query"
def test_the_default_peaks_are_what_the_prose_says_they_hold():
    v = values()
    T, d = v["T"], 64
    assert v["eager_bytes_per_score"] == 8
    assert values(context_len=16, dtype="bfloat16")["eager_bytes_per_score"] == 10
    assert v["peak_bytes_eager"] == 2 * v["score_bytes"] + T * d * 4
    assert v["peak_bytes_fused"] == T * d * 4 + T * 4


# "The explicit path's memory ... is never below one score matrix, and once T is at least twice
# the head size, doubling T more than triples its peak (the factor tends to 4)."
# "The fused path's memory grows as T: doubling T doubles it. At every setting of the sliders it
# needs less than the explicit path, and once T exceeds the head size by a few tokens, less than
# even a single score matrix would take."
@pytest.mark.parametrize("h,B", [(1, 1), (32, 1), (32, 16)])
@pytest.mark.parametrize("dtype", list(w.DTYPES))
@pytest.mark.parametrize("d_head", HEAD_DIMS)
def test_memory_shapes_across_the_context_slider(d_head, dtype, h, B):
    top = w.slider_top(h, B, d_head, w.DTYPES[dtype])  # the slider's top at this setting
    Ts = sorted(t for t in {16, 32, 64, 128, 256, 512, top // 2, top} if 16 <= t <= top)
    got = {T: values(context_len=T, head_dim=d_head, dtype=dtype, n_heads=h, batch=B)
           for T in Ts}
    for T, v in got.items():
        assert v["peak_bytes_eager"] >= v["score_bytes"]
        # "the fused peaks sit on" the dotted blue line B h T (d_head itemsize + 4)
        assert v["ladder_peak_fused"] == [ac.fused_bytes(t, d_head, h, B, w.DTYPES[dtype])
                                          for t in v["ladder_T"]]
        assert v["peak_bytes_fused"] < v["peak_bytes_eager"]
        if T >= d_head + 3:
            assert v["peak_bytes_fused"] < v["score_bytes"]
        if 2 * T in got:
            assert got[2 * T]["peak_bytes_fused"] == 2 * v["peak_bytes_fused"]
            growth = got[2 * T]["peak_bytes_eager"] / v["peak_bytes_eager"]
            assert growth <= 4
            if T >= 2 * d_head:
                assert growth > 3
    big = [T for T in Ts if 2 * T in got]
    growths = [got[2 * T]["peak_bytes_eager"] / got[T]["peak_bytes_eager"] for T in big]
    assert growths == sorted(growths)  # tends to 4 from below


# "Time grows faster than linearly: with one head of 64 in float32, at T = 1,024 and at the top
# of the slider, going from T/8 to
# T multiplies each path's time by more than 8." (fastest runs)
@pytest.mark.parametrize("T", [1024, TOP])
def test_time_grows_faster_than_linearly(T):
    v = values(context_len=T)
    assert v["ladder_T"][0] == T // 8 and v["ladder_T"][-1] == T
    for path in ("eager", "fused"):
        runs = v[f"ladder_fastest_{path}"]
        assert runs[-1] > 8 * runs[0], path


# "At the top of the slider, with the other controls at their defaults, the fused kernel is also
# faster than the explicit path in float32 and in float16. How much faster depends on the CPU,
# so the chapter gives no factor ... In bfloat16 the measurements disagree from one run to
# another, so the chapter makes no claim there." Measured twice, fresh each time: the first
# measurement in a process is not always the second, and the sentence must hold for both.
# The records behind the words: in float16, 12x on stop 28's build machine and 6.9 ms against
# 4.3 (1.6x) on a CPU with AVX-512 FP16 (stop 29's clean clone); in bfloat16 the explicit path
# took 3.2-3.7 ms against the fused 6.2-6.6 in a warmed process and 13-15 ms against 6.3-6.8 in
# a fresh one, and in a clean-clone CI run 11.0 ms both times.
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_at_the_top_the_fused_kernel_is_faster(dtype, fresh_timings):
    for _ in range(2):
        w.measure.cache_clear()
        v = values(context_len=TOP, dtype=dtype)
        assert v["fastest_fused"] < v["fastest_eager"]


# "The fused kernel's lead in time depends on the size of the score tables the explicit path
# builds. Try batch 16 and 32 heads of size 16. At the largest T this setting allows ..., 128, the
# fused kernel is the faster, as at the defaults. Bring T down to 45 ... and compare the two
# medians again ("explicit, median" and "fused, median"): most of the fused kernel's
# lead is gone. How much is left depends on the CPU ..." Measured (the explicit path's median over the fused
# kernel's): on the machine the book was first built on, 4.4 to 8.9 at T = 128 and 0.23 to 0.98
# at 45 (the fused kernel the slower every time; the review's live server: 1.5 to 9 times
# slower); on the 2026-12-07 machine about 6.5 at 128 and 1.1 to 1.9 at 45 (the fused kernel the
# faster every time: the earlier wording, "often the slower", failed there, and so did "which
# path has the fastest single run can change from one run to the next": eight rounds, the fused
# kernel's fastest run the faster every time).
SMALL_TABLES = {"batch": 16, "n_heads": 32, "head_dim": 16}


def test_at_this_settings_top_the_fused_kernel_is_faster(fresh_timings):
    v = values(context_len=128, **SMALL_TABLES)
    assert v["ceiling"] == 128 and v["T"] == 128
    assert v["fastest_fused"] < v["fastest_eager"]


def test_with_tiny_tables_most_of_the_fused_kernels_lead_is_gone(fresh_timings):
    """'Most of its lead': the explicit path's median over the fused kernel's at T = 45 is under
    half what it is at T = 128, in each of three rounds of the widget's own timing."""
    for _ in range(3):
        w.measure.cache_clear()
        top, tiny = values(context_len=128, **SMALL_TABLES), values(context_len=45, **SMALL_TABLES)
        lead_top, lead_tiny = top["ms_eager"] / top["ms_fused"], tiny["ms_eager"] / tiny["ms_fused"]
        assert lead_top > 1 and lead_tiny < lead_top / 2, (lead_top, lead_tiny)


def test_with_tiny_tables_the_fused_kernel_still_saves_memory():
    v = values(context_len=45, **SMALL_TABLES)
    assert 16 * 32 == 512  # 'each of the 512 tables'
    assert v["peak_bytes_fused"] < v["peak_bytes_eager"] / 4


# "On a CPU it is a fixed, stated 512 MiB ...; that allows T = 5,792 at one head and batch 1.
# ... which at head size 64 means T <= 1,448. The smaller of the two is the slider's top."
def test_the_cpu_ceiling_and_its_two_rules():
    v = values(context_len=16)
    assert v["memory_mib"] == 512
    assert v["ceiling_memory"] == 5792 and v["ceiling_work"] == 1448
    assert v["ceiling_default"] == min(v["ceiling_memory"], v["ceiling_work"]) == TOP
    assert w.SPEC.param("context_len").max == TOP
    # "So on this CPU it is the time rule that binds, not the memory rule."
    assert v["ceiling_rule"] == "time" and v["ceiling_work"] < v["ceiling_memory"]


# "A narrower number format lowers the explicit path's memory ceiling. In bfloat16 the peak
# holds 10 bytes per pair, not 8 ... allows T = 5,181 in bfloat16, against T = 5,792 in float32."
def test_bfloat16_lowers_the_memory_ceiling():
    f32, bf16 = values(context_len=16), values(context_len=16, dtype="bfloat16")
    assert bf16["ceiling_memory"] < f32["ceiling_memory"]
    assert (bf16["ceiling_memory"], f32["ceiling_memory"]) == (5181, 5792)
    # "The same memory (half of this CPU's stated 512 MiB, by the widget's memory rule)"
    assert w.MEMORY_SHARE == 0.5 and f32["memory_mib"] == 512
    half = int(f32["memory_mib"] * 2**20 * w.MEMORY_SHARE)
    assert f32["ceiling_memory"] ** 2 * 8 <= half < (f32["ceiling_memory"] + 1) ** 2 * 8
    assert bf16["ceiling_memory"] ** 2 * 10 <= half < (bf16["ceiling_memory"] + 1) ** 2 * 10
    # and it is the measured peak that holds 10 bytes per pair (the 2 + 4 + 4 of the prose)
    assert values(context_len=TOP, dtype="bfloat16")["peak_bytes_eager"] >= 10 * TOP * TOP


# "the slider's top follows all of them at once ... (A request above the ceiling that reaches
# the API directly gets a 400 that names the ceiling, the setting and the device.)"
def test_the_sliders_top_follows_every_control_at_once_and_the_api_names_the_ceiling():
    p, labels = w.SPEC.param("context_len"), {q.name: q.label for q in w.SPEC.params}
    for move in ({"n_heads": 4}, {"batch": 4}, {"head_dim": 256}, {"n_heads": 4, "batch": 4},
                 {"n_heads": 20, "batch": 10, "head_dim": 160, "dtype": "bfloat16"}):
        setting = {**w.SPEC.defaults(), **move}
        offered = p.effective(setting, labels)["max"]
        assert offered == values(context_len=16, **move)["ceiling"]
        with pytest.raises(w.ParamError) as err:
            w.SPEC.resolve({**move, "context_len": offered + 1})
        assert f"to {offered:,} on cpu at batch" in str(err.value)


# "In both panels the vertical dash-dot line is the ceiling at your setting, and its legend entry
# says which rule set it. The lines stop there."
@pytest.mark.parametrize("setting", [{}, {"n_heads": 8, "context_len": 16}])
def test_the_figure_marks_this_settings_ceiling_and_stops_there(setting):
    out = w.compute(w.SPEC.resolve(setting))
    v, data = out["values"], out["figure"]["data"]
    marks = [t for t in data if t.get("legendgroup") == "ceiling"]
    assert len(marks) == 2 and {t.get("xaxis", "x") for t in marks} == {"x", "x2"}
    assert all(t["x"] == [v["ceiling"]] * 2 for t in marks)
    assert "(time rule)" in marks[0]["name"] and f"{v['ceiling']:,}" in marks[0]["name"]
    for t in data:
        if t["mode"] == "lines" and t.get("legendgroup") != "ceiling":
            assert max(t["x"]) == v["ceiling"]
    if setting:
        assert v["ceiling"] == 512


# "More heads, a bigger batch or a bigger head lower the ceiling"; "raise the heads or the batch:
# the score matrix grows with them, and the ceiling line and the slider's top come down"; and the
# check-yourself answer "the ceiling falls by half when you use four heads instead of one ...
# it is the time rule that binds: 1,448 at one head becomes 724 at four".
def test_more_heads_batch_or_head_size_lower_the_ceiling():
    base = values(context_len=16)
    for change in ({"n_heads": 4}, {"batch": 4}, {"head_dim": 256}):
        v = values(context_len=16, **change)
        assert v["ceiling"] < base["ceiling"]
        if "head_dim" not in change:
            assert v["score_bytes"] == 4 * base["score_bytes"]
            assert abs(2 * v["ceiling"] - base["ceiling"]) <= 1
            assert abs(2 * v["ceiling_memory"] - base["ceiling_memory"]) <= 1
            assert abs(2 * v["ceiling_work"] - base["ceiling_work"]) <= 1
    assert (base["ceiling"], values(context_len=16, n_heads=4)["ceiling"]) == (1448, 724)
    assert values(context_len=16, n_heads=4)["ceiling_rule"] == "time"


# "Slide T up and watch the explicit path's memory climb along the steep dotted line while the
# fused path's climbs more slowly"
def test_explicit_memory_climbs_faster_than_fused():
    v = values(context_len=TOP)
    e, f = v["ladder_peak_eager"], v["ladder_peak_fused"]
    assert e[-1] / e[0] > f[-1] / f[0] > 1


# Check yourself: "Doubling the context ... quadruples [the score matrix]"; and the summary's
# "send half the tokens, and the score work and the score memory fall to a quarter".
@pytest.mark.parametrize("T", [16, 100, 724])
def test_doubling_the_context_quadruples_the_scores(T):
    assert ac.score_bytes(2 * T) == 4 * ac.score_bytes(T)
    assert ac.score_flops(2 * T, 64) == 4 * ac.score_flops(T, 64)


# Exercise 2's answer: width 2,048, full keys and values, a plain two-matrix MLP of 8,192:
# 24 d^2 per token outside the scores, break-even at T = 6d = 12,288.
def test_exercise_2_mlp_and_projections_against_the_scores():
    d, d_ff, T = 2048, 8192, 4
    mlp = [torch.nn.Linear(d, d_ff, bias=False, device="meta"),
           torch.nn.Linear(d_ff, d, bias=False, device="meta")]
    x = torch.empty(1, T, d, device="meta")
    with FlopCounterMode(display=False) as counter:
        mlp[1](mlp[0](x))
    per_token = counter.get_total_flops() / T + ac.projection_flops(1, d // 16, 16)
    assert per_token == 24 * d * d
    assert ac.score_flops(6 * d, d // 16, 16) == 6 * d * per_token


# Exercise 3's answer: 80 GB, half for the scores, 32 heads of 8,192 tokens in bfloat16:
# one sequence fits, not two.
def test_exercise_3_one_sequence_fits_not_two():
    budget = int(80e9 / 2)
    assert ac.largest_context(budget, 32, 1, torch.bfloat16) >= 8192
    assert ac.largest_context(budget, 32, 2, torch.bfloat16) < 8192
