"""backend/reference/recurrence.py against PyTorch's own RNN, autograd, and hand arithmetic."""

from __future__ import annotations

import math

import pytest
import torch

from backend.reference import recurrence as r


def weights(d_x: int, d_h: int):
    W_h = torch.randn(d_h, d_h) / math.sqrt(d_h)
    W_x = torch.randn(d_x, d_h) / math.sqrt(d_x)
    b = torch.randn(d_h) * 0.1
    return W_h, W_x, b


@pytest.mark.parametrize("T,d_x,d_h", [(1, 3, 5), (7, 4, 6), (40, 8, 8)])
def test_the_loop_is_torch_nn_rnn(T, d_x, d_h):
    W_h, W_x, b = weights(d_x, d_h)
    X = torch.randn(T, d_x)
    h0 = torch.randn(d_h)
    rnn = torch.nn.RNN(d_x, d_h, nonlinearity="tanh", batch_first=True)
    with torch.no_grad():  # nn.RNN computes x W_ih^T + b_ih + h W_hh^T + b_hh
        rnn.weight_ih_l0.copy_(W_x.T)
        rnn.weight_hh_l0.copy_(W_h.T)
        rnn.bias_ih_l0.copy_(b)
        rnn.bias_hh_l0.zero_()
        expected, last = rnn(X[None], h0[None, None])
    states = r.one_after_another(X, W_h, W_x, b, h0)
    torch.testing.assert_close(states, expected[0])
    torch.testing.assert_close(states[-1], last[0, 0])


def test_all_at_once_matches_the_loop_only_when_given_its_states():
    W_h, W_x, b = weights(8, 8)
    X = torch.randn(30, 8)
    states = r.one_after_another(X, W_h, W_x, b)
    prev = torch.cat([torch.zeros(1, 8), states[:-1]])  # h_0 .. h_{T-1}
    torch.testing.assert_close(r.all_at_once(prev, X, W_h, W_x, b), states)
    # Without the loop there are no states to hand it; zeros give the wrong answer from step 2 on.
    wrong = r.all_at_once(torch.zeros(30, 8), X, W_h, W_x, b)
    torch.testing.assert_close(wrong[0], states[0])
    assert (wrong[1:] - states[1:]).abs().max() > 0.1


def test_one_steps_jacobian_is_W_h_diag_one_minus_h_squared():
    """The chapter's J_t, against autograd's Jacobian of rnn_step."""
    W_h, W_x, b = weights(5, 5)
    h_prev, x = torch.randn(5), torch.randn(5)
    h = r.rnn_step(h_prev, x, W_h, W_x, b)
    jac = torch.autograd.functional.jacobian(lambda hp: r.rnn_step(hp, x, W_h, W_x, b), h_prev)
    # autograd's jac[j, i] = d h_j / d h_prev_i; the chapter's J_t[i, j] is the same entry.
    torch.testing.assert_close(jac.T, W_h @ torch.diag(1 - h ** 2))


@pytest.mark.parametrize("factor", [0.5, 0.9, 0.99, 1.0, 1.01, 1.1, 1.5])
def test_gradient_product_is_what_autograd_gets_through_the_recurrence(factor):
    steps = 100
    curve = r.gradient_through_steps(factor, steps)
    assert len(curve) == steps + 1 and curve[0] == 1.0
    h0 = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    h = h0
    for t in range(1, steps + 1):
        h = factor * h
        if t in (1, 10, 57, 100):
            (grad,) = torch.autograd.grad(h, h0, retain_graph=True)
            assert curve[t] == pytest.approx(grad.item(), rel=1e-12)
            assert curve[t] == pytest.approx(factor ** t, rel=1e-12)


def test_the_handouts_two_printed_products():
    # LLM-101 section 2 prints them as f"{0.9 ** 100:.5f}" and f"{1.1 ** 100:,.0f}".
    assert f"{r.gradient_through_steps(0.9, 100)[-1]:.5f}" == "0.00003"
    assert f"{r.gradient_through_steps(1.1, 100)[-1]:,.0f}" == "13,781"


def test_time_both_keeps_the_fastest_of_interleaved_runs(monkeypatch):
    calls = []
    step = r.rnn_step
    monkeypatch.setattr(r, "rnn_step", lambda *a: calls.append("seq") or step(*a))
    monkeypatch.setattr(r, "all_at_once", lambda *a: calls.append("par"))
    g = torch.Generator().manual_seed(0)
    timing = r.time_both(*r.random_problem(4, 8, g), repeats=3, warmup=2)
    # alternating whole runs (the loop's 4 steps, then the product), warm-up runs included but
    # not kept
    assert calls == (["seq"] * 4 + ["par"]) * 5
    assert len(timing.sequential_ms) == len(timing.parallel_ms) == len(timing.stretches_ms) == 3
    t = r.Timing((3.0, 1.0, 2.0), (0.5, 0.25, 4.0))
    assert (t.ms_sequential, t.ms_parallel, t.speedup) == (1.0, 0.25, 4.0)
    # with stretches, each stretch's fastest run, summed: a pre-emption in one run's stretch
    # costs nothing when another run passed that stretch undisturbed
    t = r.Timing((9.0, 9.0), (1.0, 1.0), ((1.0, 8.0), (8.0, 1.0)))
    assert t.ms_sequential == 2.0


def test_random_problem_shapes_and_scale():
    g = torch.Generator().manual_seed(0)
    X, H_prev, W_h, W_x, b = r.random_problem(16, 64, g)
    assert X.shape == H_prev.shape == (16, 64) and W_h.shape == W_x.shape == (64, 64)
    assert H_prev.abs().max() < 1  # like real tanh states
    out = r.all_at_once(H_prev, X, W_h, W_x, b)
    assert out.abs().mean() < 0.9  # the 1/sqrt(d) weights keep tanh out of saturation
