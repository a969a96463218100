"""Every qualitative sentence of docs/chapters/recurrence.md, asserted over computed values.

Timing claims are orderings of fastest runs (which version is slower, which way a time moves
from one slider stop to the next), which load cannot fake: it only ever adds time. Each test
names the sentence it checks.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from backend.compute import sequential_vs_parallel as w
from backend.reference import recurrence as r

# a timing lock of each test's own (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("private_timing_lock")


def values(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def pooled(length, width, fresh=2):
    """The page's timing at (length, width) pooled with `fresh` new measurements of it.

    Load only adds time, so more runs can only bring the fastest run nearer the undisturbed
    time. The ordering tests below re-time a setting this way when the page's own timing (one
    measurement per worker, fastest of 7 to 31 runs) breaks an ordering the prose states: on an
    idle 2-core VM, sub-0.1 ms loops were seen out of order once in a few runs of this file."""
    t = w.measure(length, width)
    seq, par, stretches = t.sequential_ms, t.parallel_ms, t.stretches_ms
    for _ in range(fresh):
        more = w.measure.__wrapped__(length, width)
        seq, par = seq + more.sequential_ms, par + more.parallel_ms
        stretches += more.stretches_ms
    return r.Timing(seq, par, stretches)


def ordered(key, settings):
    """values(...)[key] at each setting; wherever a neighbour is not above the one before, both
    are re-timed with pooled runs."""
    pick = {"ms_sequential": lambda t: t.ms_sequential, "ms_parallel": lambda t: t.ms_parallel,
            "speedup": lambda t: t.speedup}[key]
    got = [values(**s)[key] for s in settings]
    for i in range(len(got) - 1):
        if not got[i + 1] > got[i]:
            got[i] = pick(pooled(settings[i]["length"], settings[i]["width"]))
            got[i + 1] = pick(pooled(settings[i + 1]["length"], settings[i + 1]["width"]))
    return got


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


# "So a hundred factors of 0.9 leave 2.66e-05 of the gradient, and a hundred factors of 1.1
# multiply it by 13,781"; the sources note: "0.00003" is that rounded to five decimals.
def test_the_handouts_numbers_at_the_chapters_settings():
    assert f"{gradient(0.9, 100):.3g}" == "2.66e-05"
    assert f"{gradient(0.9, 100):.5f}" == "0.00003"
    assert f"{gradient(1.1, 100):,.0f}" == "13,781"


# "by step 1,024 a factor of 0.99 has shrunk the gradient below one ten-thousandth, and 1.01
# has grown it more than ten-thousandfold"
def test_within_one_percent_of_one_is_no_escape_by_step_1024():
    assert gradient(0.99, 1024) < 1e-4
    assert gradient(1.01, 1024) > 1e4


# "A factor of exactly 1 passes the gradient back unchanged over any number of steps ... the
# curve at factor 1 stays at 1 all the way to step 1,024"
@pytest.mark.parametrize("length", LENGTHS)
def test_a_factor_of_one_carries_the_gradient_back_undiminished(length):
    assert gradient(1.0, length) == 1.0


# Exercise 2's answer: 0.999 ** n reaches 0.9 ** 100 (the 2.66e-05 the exercise shows, not the
# rounded 0.00003, which would give 10,409, as the sources note says) at n of about 10,531.
def test_exercise_2_answer():
    target = gradient(0.9, 100)
    assert round(100 * math.log(0.9) / math.log(0.999)) == 10_531
    assert round(math.log(0.00003) / math.log(0.999)) == 10_409
    curve = r.gradient_through_steps(0.999, 10_600)
    first = next(n for n, g in enumerate(curve) if g <= target)
    assert first == 10_531


# "Handed the loop's own states shifted by one step, h_0 = 0, h_1, ..., h_{T-1} as the rows of
# H_prev, this returns the loop's outputs h_1, ..., h_T, up to float32 rounding" and "In an RNN
# those states are not known until the loop has computed them"
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


LENGTH_STOPS = [2 ** i for i in range(11)]      # where the length slider stops: 1 .. 1024
WIDTH_STOPS = [2 ** i for i in range(4, 10)]    # where the width slider stops: 16 .. 512


# "The loop is slower than the single product at every length and width the widget offers,
# even at a single step"
@pytest.mark.parametrize("width", WIDTH_STOPS)
def test_the_loop_is_slower_at_every_stop_of_both_sliders(width):
    for length in LENGTH_STOPS:
        speedup = values(length=length, width=width)["speedup"]
        if not speedup > 1:
            speedup = pooled(length, width).speedup
        assert speedup > 1, (length, width, speedup)


# "every doubling of the length makes the loop slower, at every width" / "move it up one stop at
# a time and the loop's bar grows at every one"
@pytest.mark.parametrize("width", WIDTH_STOPS)
def test_the_loops_time_climbs_at_every_stop_of_the_length_slider(width):
    times = ordered("ms_sequential", [dict(length=n, width=width) for n in LENGTH_STOPS])
    assert all(b > a for a, b in zip(times, times[1:])), times


def holds(claim, *settings):
    """claim(*numbers) over values(length, width)[key] for each (length, width, key) in
    `settings`; where the page's timings break it, over the same settings re-timed with pooled
    runs (load only adds time, so pooling brings each nearer the undisturbed machine)."""
    got = [values(length=n, width=d)[key] for n, d, key in settings]
    # more runs each round: one round of two was not always enough on a loaded machine
    for fresh in (2, 4, 8):
        if claim(*got):
            break
        got = [getattr(pooled(n, d, fresh=fresh), key) for n, d, key in settings]
    assert claim(*got), (settings, got)


# "At widths 256 and 512 ... the speed-up rises steeply and then stops rising. A step of the loop
# costs about as much in a run of 1,024 steps as in one of 64 ..., and sixteen times as many steps
# do not raise the speed-up by half." (It once said the speed-up levels off and "Sixteen times as
# many steps ... do not even triple it", read off whole runs of the loop: at 1,024 steps every
# run was pre-empted somewhere, so the loop's column was mostly load. The loop is now timed
# stretch by stretch; on an idle machine the speed-up moved from 4.2x to 4.5x at width 256.)
# "Steeply": more than 2.5 times over the first 63 steps, where the next 960 add under half. At
# width 512 single measurements of the first rise came out 2.9x to 3.4x here.
@pytest.mark.parametrize("width", [256, 512])
def test_at_widths_256_and_512_the_speedup_rises_steeply_and_stops_rising(width):
    holds(lambda one, sixty_four: sixty_four > 2.5 * one,
          (1, width, "speedup"), (64, width, "speedup"))
    holds(lambda sixty_four, longest: longest < 1.5 * sixty_four,
          (64, width, "speedup"), (1024, width, "speedup"))


def per_step(length, width):
    return 1000 * pooled(length, width, fresh=1).ms_sequential / length


@pytest.mark.parametrize("width", [16, 256, 512])
def test_a_step_of_the_loop_costs_about_the_same_at_64_and_1024_steps(width):
    short, long = (values(length=n, width=width)["us_per_step"] for n in (64, 1024))
    # One re-timing was not always enough: in CI, and here, a step at width 512 came out 77 to
    # 114 us from one measurement to the next, either length the slower. Each round can only
    # lower a length's fastest step, so the rounds keep the fastest seen so far.
    for _ in range(4):
        if 0.8 < long / short < 1.25:
            break
        short, long = min(short, per_step(64, width)), min(long, per_step(1024, width))
    assert 0.8 < long / short < 1.25, (width, short, long)


# "once those rows outweigh the fixed cost, both times grow in proportion to the length": at
# widths 256 and 512, sixteen times the steps make both versions more than eight times slower.
@pytest.mark.parametrize("width", [256, 512])
@pytest.mark.parametrize("key", ["ms_sequential", "ms_parallel"])
def test_past_a_few_dozen_steps_both_times_grow_with_the_length(width, key):
    holds(lambda short, long: long > 8 * short, (64, width, key), (1024, width, key))


# "At width 16 a row is so little arithmetic that the product's fixed cost still counts at 64
# rows: sixteen times the rows take it from ... ms to ... ms, less than sixteen times as long,
# while the loop's time grows about sixteen times. So there the speed-up is still climbing from
# 64 steps to 1,024, and by more than at widths 256 and 512."
# A rise of r times leaves (16 - r) / 15 of the time at 64 rows to the fixed cost; r was 9.4 to
# 12.9 from one machine and day to another, and the speed-up's rise about 1.2x to 1.7x. The bounds are
# what held on all of them; at widths 256 and 512 the speed-up moved by 0.78x to 1.17x.
def test_at_width_16_the_speedup_is_still_climbing():
    holds(lambda short, long: long < 15 * short, (64, 16, "ms_parallel"), (1024, 16, "ms_parallel"))
    holds(lambda a, b, c, d, e, f: b > 1.1 * a and b / a > d / c and b / a > f / e,
          *[(n, width, "speedup") for width in (16, 256, 512) for n in (64, 1024)])


# "At width 16 ... a step of the loop took 7.6 µs. That is the framework's fixed cost per step
# ... the widget's large speed-ups are almost all overhead, not arithmetic": the single product
# does all 100 steps' arithmetic in less than a tenth of one step's time per row.
def test_at_width_16_a_step_is_almost_all_fixed_cost():
    v = values(length=100, width=16)
    assert v["us_per_step"] == pytest.approx(v["ms_sequential"] * 1000 / 100, rel=1e-12)
    arithmetic_us_per_row = v["ms_parallel"] * 1000 / 100
    assert arithmetic_us_per_row < 0.1 * v["us_per_step"]
    assert v["speedup"] > 10  # "large speed-ups"


# "At width 512 a step took 95 µs, and the fixed cost seen at width 16 is a small part of
# that" and "At the default width 256 a step took 12 µs, between the two." ("Not far above the
# fixed cost" held here, 12 against 7.6 µs, but not on a CI machine, 63 against 16 µs.)
def test_what_a_step_costs_at_widths_512_and_256():
    fixed, middle, widest = (1000 / 100 * t for t in ordered(
        "ms_sequential", [dict(length=100, width=d) for d in (16, 256, 512)]))
    if not fixed < 0.25 * widest:
        fixed, widest = (1000 / 100 * pooled(100, d).ms_sequential for d in (16, 512))
    assert fixed < 0.25 * widest
    assert fixed < middle < widest


# "a parallel scan computes all T states in about log2 T rounds" for a linear recurrence
# h_t = a_t h_{t-1} + u_t: the steps compose, (a1, u1) then (a2, u2) = (a2 a1, a2 u1 + u2).
@pytest.mark.parametrize("T", [1, 5, 64, 100])
def test_a_linear_recurrence_runs_as_a_parallel_scan(T):
    g = torch.Generator().manual_seed(T)
    a, u = torch.rand(T, 8, generator=g, dtype=torch.float64), torch.randn(T, 8, generator=g,
                                                                           dtype=torch.float64)
    h, loop = torch.zeros(8, dtype=torch.float64), []
    for t in range(T):
        h = a[t] * h + u[t]
        loop.append(h)
    A, U, shift, rounds = a.clone(), u.clone(), 1, 0
    while shift < T:  # Hillis-Steele: each round combines every position with one `shift` back
        A_prev = torch.cat([torch.ones(shift, 8, dtype=A.dtype), A[:-shift]])
        U_prev = torch.cat([torch.zeros(shift, 8, dtype=U.dtype), U[:-shift]])
        A, U = A * A_prev, A * U_prev + U
        shift, rounds = shift * 2, rounds + 1
    torch.testing.assert_close(U, torch.stack(loop))
    assert rounds == math.ceil(math.log2(T)) if T > 1 else rounds == 0


# "the attention step on its own treats its inputs as a set, so shuffling the tokens only
# shuffles its outputs the same way" and "A causal mask breaks that symmetry"
def test_attention_without_a_mask_is_blind_to_order_and_with_one_is_not():
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 1, 6, 4, generator=g) for _ in range(3))
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    out = F.scaled_dot_product_attention(q, k, v)
    shuffled = F.scaled_dot_product_attention(q[:, :, perm], k[:, :, perm], v[:, :, perm])
    torch.testing.assert_close(shuffled, out[:, :, perm])
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    causal_shuffled = F.scaled_dot_product_attention(q[:, :, perm], k[:, :, perm],
                                                     v[:, :, perm], is_causal=True)
    assert (causal_shuffled - causal[:, :, perm]).abs().max() > 0.1


# _compute/recurrence.md: "moving the factor slider re-times nothing"
def test_moving_the_factor_keeps_the_measurement():
    a, b = values(factor=0.6), values(factor=1.4)
    for key in ("runs_sequential", "runs_parallel", "ms_sequential", "ms_parallel", "speedup"):
        assert a[key] == b[key]


# _compute/recurrence.md: "The values and the summary say which device, dtype and PyTorch
# version produced the numbers"
def test_the_values_say_where_they_were_measured():
    v = values()
    assert v["device"] in v["measured_on"] and v["dtype"] in v["measured_on"]
    assert torch.__version__ in v["measured_on"]
    body = w.compute(w.SPEC.resolve({}))
    assert v["measured_on"] in body["summary"]


# "At the default setting the widget keeps the fastest of 20 runs of each. Small problems get
# more runs than large ones" and "Every setting of the sliders, up to 1,024 steps of width 512,
# is inside the widget's work budget, so no setting is refused."
def test_small_problems_get_more_runs_and_every_corner_is_in_the_budget():
    assert values()["repeats"] >= w.repeats_for(100, 256)
    runs = [w.repeats_for(n, d) for n, d in ((1, 16), (100, 256), (1024, 512))]
    assert runs[0] > runs[1] > runs[2]
    assert 1024 * 512 ** 2 <= w.MAX_WORK


# The summary: "At 1 step of width 16", not "At 1 steps".
def test_the_summary_counts_steps_in_the_singular_and_plural():
    one = w.compute(w.SPEC.resolve({"length": 1, "width": 16}))["summary"]
    many = w.compute(w.SPEC.resolve({"length": 2, "width": 16}))["summary"]
    assert one.startswith("At 1 step of width 16,") and "each of the 1 step" not in one
    assert many.startswith("At 2 steps of width 16,")


# ------------------------------------------------------------ the table: RNN against attention

def mm_calls_and_flops(fn):
    """How many matrix products fn runs, and their FLOPs (PyTorch's counter: 2 per multiply-add)."""
    with FlopCounterMode(display=False) as counter:
        fn()
    counts = counter.get_flop_counts()["Global"]
    calls = {}

    class Count(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if name in ("mm", "bmm", "matmul", "addmm", "mv", "dot"):
                calls[name] = calls.get(name, 0) + 1
            return func(*args, **(kwargs or {}))
    with Count():
        fn()
    return sum(calls.values()), counter.get_total_flops(), counts


def attention_layer(T, d, g):
    from backend.reference import river_bank as rb
    x = torch.randn(T, d, generator=g)
    w_q, w_k, w_v = (torch.randn(d, d, generator=g) for _ in range(3))
    return lambda: rb.self_attention(x, w_q, w_k, w_v)


def attention_flops(T, d):
    """(projection FLOPs, table FLOPs) of one head as wide as the model."""
    total = mm_calls_and_flops(attention_layer(T, d, torch.Generator().manual_seed(0)))[1]
    projections = 3 * 2 * T * d * d
    return projections, total - projections


# "The T d² in both columns is products with d × d weight matrices ... The T² d is attention's
# own" and "the table's 2T²d multiply-adds overtake the projections' 3Td² once T is more than 1.5
# times d" and "Doubling the text doubles the first term and quadruples the second"
@pytest.mark.parametrize("d", [16, 64])
def test_the_cost_row_of_the_table(d):
    for T in (d // 2, d, 3 * d // 2, 2 * d):
        projections, table = attention_flops(T, d)
        assert table == 2 * 2 * T * T * d                     # 2 T^2 d multiply-adds
        if 2 * T < 3 * d:
            assert table < projections                        # a short text: projections cost more
        elif 2 * T > 3 * d:
            assert table > projections                        # a long one: the table does
        else:
            assert table == projections
    p1, t1 = attention_flops(d // 2, d)
    p2, t2 = attention_flops(d, d)
    assert p2 == 2 * p1 and t2 == 4 * t1
    rnn = [mm_calls_and_flops(lambda T=T: r.one_after_another(*problem(T, d)))[1] for T in (8, 16)]
    assert rnn[1] == 2 * rnn[0] == 2 * 2 * 16 * d * d         # the RNN's 2 T d^2: doubles


def problem(T, d):
    X, _, W_h, W_x, b = r.random_problem(T, d, torch.Generator().manual_seed(0))
    return X, W_h, W_x, b


# "steps that must run one after another: O(T) against O(1)" and the check-yourself answer: "all
# T²d multiply-adds of a layer are a few large, independent products ..., while the RNN's T d²
# come as T small products that must run one after another"
@pytest.mark.parametrize("T", [4, 32])
def test_the_steps_in_a_row_row_of_the_table(T):
    rnn_calls = mm_calls_and_flops(lambda: r.one_after_another(*problem(T, 16)))[0]
    attn_calls = mm_calls_and_flops(attention_layer(T, 16, torch.Generator().manual_seed(1)))[0]
    assert rnn_calls == 2 * T                                 # two small products per step
    assert attn_calls == 5                                    # Q, K, V, scores, mix: any T
