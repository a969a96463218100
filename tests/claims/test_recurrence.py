"""Every qualitative sentence of docs/chapters/recurrence.md, asserted over computed values.

Timing claims are orderings only (which version is slower, which way a time moves when the
length quadruples), chosen to hold on a loaded two-core CPU; each names the sentence it checks.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from backend.reference import recurrence as r
from backend.widgets import measure
from backend.widgets import sequential_vs_parallel as w


@pytest.fixture(autouse=True)
def private_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(measure, "LOCK_PATH", str(tmp_path / "timing.lock"))


def values(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def gradient(factor, length):
    return values(factor=factor, length=length, width=16)["gradient_product"]


FACTORS = [round(0.5 + 0.01 * i, 2) for i in range(101)]  # the factor slider, every stop
LENGTHS = [1, 2, 10, 100, 1024]


# "A factor a little below 1 and the gradient vanishes; a little above 1 and it explodes."
# "drag the factor across 1 and watch the curve flip from vanishing to exploding"
@pytest.mark.parametrize("factor", FACTORS)
def test_below_one_shrinks_above_one_grows_at_every_stop_of_the_slider(factor):
    curve = r.gradient_through_steps(factor, 1024)
    steps = list(zip(curve, curve[1:]))
    if factor < 1:
        assert all(b < a for a, b in steps) and curve[-1] < 1e-4
    elif factor > 1:
        assert all(b > a for a, b in steps) and curve[-1] > 1e4
    else:
        assert set(curve) == {1.0}


# "So 0.9 multiplied 100 times is 0.00003 and 1.1 multiplied 100 times is 13,781"
def test_the_handouts_numbers_at_the_chapters_settings():
    assert f"{gradient(0.9, 100):.5f}" == "0.00003"
    assert f"{gradient(1.1, 100):,.0f}" == "13,781"


# "by step 1,024 a factor of 0.99 has shrunk the gradient below one ten-thousandth, and 1.01
# has grown it more than ten-thousandfold"
def test_within_one_percent_of_one_is_no_escape_by_step_1024():
    assert gradient(0.99, 1024) < 1e-4
    assert gradient(1.01, 1024) > 1e4


# "With a factor of exactly 1 the gradient after 1,024 steps is still 1"
@pytest.mark.parametrize("length", LENGTHS)
def test_a_factor_of_one_carries_the_gradient_back_undiminished(length):
    assert gradient(1.0, length) == 1.0


# Exercise 2's answer: 0.999 ** n reaches 0.9 ** 100 at n of about 10,531.
def test_exercise_2_answer():
    target = 0.9 ** 100
    curve = r.gradient_through_steps(0.999, 10_600)
    first = next(n for n, g in enumerate(curve) if g <= target)
    assert first == 10_531


# "Given the loop's own states as H_prev, this returns the loop's output, up to float32
# rounding" and "In an RNN those states are not known until the loop has computed them"
def test_all_at_once_needs_the_states_only_the_loop_produces():
    g = torch.Generator().manual_seed(1)
    X, _, W_h, W_x, b = r.random_problem(100, 256, g)
    H = r.one_after_another(X, W_h, W_x, b)
    prev = torch.cat([torch.zeros(1, 256), H[:-1]])
    torch.testing.assert_close(r.all_at_once(prev, X, W_h, W_x, b), H)
    assert (r.all_at_once(torch.zeros(100, 256), X, W_h, W_x, b) - H).abs().max() > 0.5


# "Both versions do the same 2Td² multiply-adds" (PyTorch's FLOP counter: 2 FLOPs per MAC).
@pytest.mark.parametrize("T,d", [(1, 16), (37, 64), (100, 256)])
def test_both_versions_do_the_same_arithmetic(T, d):
    g = torch.Generator().manual_seed(0)
    X, H_prev, W_h, W_x, b = r.random_problem(T, d, g)
    counts = []
    for fn in (lambda: r.one_after_another(X, W_h, W_x, b),
               lambda: r.all_at_once(H_prev, X, W_h, W_x, b)):
        with FlopCounterMode(display=False) as counter:
            fn()
        counts.append(counter.get_total_flops())
    assert counts == [2 * 2 * T * d * d] * 2


# Exercise 3's answer: X @ W_x can be done for all steps before the loop; the rest cannot.
def test_exercise_3_hoisting_the_input_product_changes_nothing():
    g = torch.Generator().manual_seed(2)
    X, _, W_h, W_x, b = r.random_problem(50, 32, g)
    XW = X @ W_x + b                                   # all steps at once
    h, states = torch.zeros(32), []
    for t in range(50):
        h = torch.tanh(h @ W_h + XW[t])                # still waits for the last step
        states.append(h)
    torch.testing.assert_close(torch.stack(states), r.one_after_another(X, W_h, W_x, b))


# "From 16 steps on, the loop is slower than the single product at every hidden width the
# widget offers."
@pytest.mark.parametrize("width", [16, 48, 128, 256, 512])
def test_from_16_steps_the_loop_is_slower_at_every_width(width):
    for length in (16, 64, 256, 1024):
        v = values(length=length, width=width)
        assert v["ms_sequential"] > v["ms_parallel"], (length, width, v["speedup"])


# "The loop's time grows with the length of the sequence" / "Lengthen the sequence and watch
# the loop's bar climb."
@pytest.mark.parametrize("width", [16, 256, 512])
def test_the_loops_time_climbs_with_the_length(width):
    times = [values(length=n, width=width)["ms_sequential"] for n in (16, 64, 256, 1024)]
    assert times == sorted(times) and len(set(times)) == len(times)


# "At a single step there is nothing to run in parallel ..., and the speed-up there is smaller
# than at 64 steps."
def test_one_step_gains_less_than_64_steps():
    assert values(length=1)["speedup"] < values(length=64)["speedup"]


# "Moving the factor re-times nothing"
def test_moving_the_factor_keeps_the_measurement():
    a, b = values(factor=0.6), values(factor=1.4)
    for key in ("runs_sequential", "runs_parallel", "ms_sequential", "ms_parallel", "speedup"):
        assert a[key] == b[key]


# "the widget below says which device produced the numbers it shows"
def test_the_values_say_where_they_were_measured():
    v = values()
    assert v["device"] in v["measured_on"] and v["dtype"] in v["measured_on"]
    assert torch.__version__ in v["measured_on"]
