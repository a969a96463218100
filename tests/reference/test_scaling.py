"""The 1/sqrt(d_k) experiment (backend/reference/scaling.py) against theory, PyTorch's own
softmax/entropy/autograd Jacobian, NumPy's own one-liner, and the handouts' printed digits."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch

from backend.compute import REGISTRY
from backend.reference import scaling


def _handout_one_liner(dims, n_pairs, seed=0):
    """Handout 003's code, verbatim in substance: the oracle for the chunked reproduction."""
    rng = np.random.default_rng(seed)
    out = []
    for d in dims:
        q, k = rng.standard_normal((2, n_pairs, d))
        s = (q * k).sum(axis=1)
        out.append((float(s.var()), float((s / np.sqrt(d)).var())))
    return tuple(out)


def test_handout_003_digits_are_reproduced_exactly():
    """Handout 003, "Self-attention": rng = default_rng(0), 100,000 pairs, d = 4, 64, 512,
    printed with {:6.1f} and {:.2f}: 4.0 / 1.01, 64.1 / 1.00, 514.2 / 1.00."""
    runs = scaling.numpy_variance_experiment((4, 64, 512), 100_000, 0)
    printed = [f"{u:.1f} {s:.2f}" for u, s in runs]
    assert printed == ["4.0 1.01", "64.1 1.00", "514.2 1.00"]


@pytest.mark.parametrize("chunk", [1000, 777, 8192])
def test_chunked_draw_is_the_one_liner_bit_for_bit(chunk):
    """Drawing q and k a slice of rows at a time gives the one-liner's numbers exactly (==),
    also when the chunk does not divide the pair count and across consecutive head sizes."""
    dims, n = (4, 64, 512), 3000
    assert scaling.numpy_variance_experiment(dims, n, 0, chunk) == _handout_one_liner(dims, n)


def test_the_widget_reports_the_reproduction():
    values = REGISTRY["attention_scaling"].facts({"d_k": 64, "n_positions": 8, "seed": 0})
    runs = _handout_one_liner((4, 64), 100_000)  # d = 512 alone would need 800 MB here
    assert values["handout_pairs"] == 100_000
    assert (values["handout_var_unscaled_4"], values["handout_var_scaled_4"]) == runs[0]
    assert (values["handout_var_unscaled_64"], values["handout_var_scaled_64"]) == runs[1]


def test_variance_standard_error_matches_the_fourth_moment():
    """E[(q.k)^4] = 3 d^2 + 6 d for a sum of d products of independent N(0,1): check the
    formula against a large NumPy draw's fourth moment (its own SE is far below the 2% used)."""
    rng = np.random.default_rng(1)
    for d in (1, 4, 16):
        s = (rng.standard_normal((400_000, d)) * rng.standard_normal((400_000, d))).sum(axis=1)
        assert np.mean(s ** 4) == pytest.approx(3 * d * d + 6 * d, rel=0.02)
    assert scaling.variance_standard_error(64, 10_000) == pytest.approx(
        math.sqrt((2 * 64 ** 2 + 6 * 64) / 10_000))


@pytest.mark.parametrize("d_k", [4, 64, 512])
def test_variance_is_d_k_and_scaled_variance_is_one(d_k):
    """Theory: Var = d_k, 1 after scaling. A statistical bound: 4 standard errors of the sample
    variance (a false failure about 1 time in 16,000)."""
    n = 100_000 if d_k <= 64 else 20_000
    raw, scaled = scaling.dot_product_variance(d_k, n, scaling.make_generator(0))
    se = scaling.variance_standard_error(d_k, n)
    assert abs(raw - d_k) < 4 * se
    assert abs(scaled - 1) < 4 * se / d_k


def test_handout_000_box_is_reproduced_to_its_printed_digits():
    """Handout 000 §2.1 box, printed: 64.03 -> 1.000; unscaled max prob 0.9980, entropy 0.014;
    scaled 0.4125, 1.708 (uniform 2.079). Its torch draw, seeded with 0, gives every digit; the
    widget's default draw is the same 10,000 pairs."""
    box = scaling.handout_000_draw(0)
    assert f"{box['var_unscaled']:.2f} {box['var_scaled']:.3f}" == "64.03 1.000"
    assert f"{box['max_prob_unscaled']:.4f} {box['entropy_unscaled']:.3f}" == "0.9980 0.014"
    assert f"{box['max_prob_scaled']:.4f} {box['entropy_scaled']:.3f}" == "0.4125 1.708"
    # oracle for the softmax part: the handout's own lines, run with the global generator
    torch.manual_seed(0)
    q, k = torch.randn(10000, 64), torch.randn(10000, 64)
    k, q = torch.randn(8, 64), torch.randn(64)
    p = torch.softmax(k @ q, -1).double()
    assert box["max_prob_unscaled"] == pytest.approx(p.max().item(), rel=1e-6)
    assert box["entropy_unscaled"] == pytest.approx(
        torch.distributions.Categorical(probs=p).entropy().item(), rel=1e-4)
    params = {"d_k": 64, "n_positions": 8, "seed": 0}
    values = REGISTRY["attention_scaling"].compute(params)["values"]
    facts = REGISTRY["attention_scaling"].facts(params)
    assert values["n_pairs"] == 10_000
    assert values["var_unscaled"] == box["var_unscaled"] == facts["handout000_var_unscaled"]
    assert f"{values['entropy_uniform']:.3f}" == "2.079"


def _query_grad_norms_by_autograd(q, k, c):
    """|d softmax(c K q) / dq|_F per query, from torch.autograd (float64)."""
    out = []
    for row in q:
        jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(c * (k @ x), -1), row)
        out.append(torch.linalg.matrix_norm(jac).item())
    return out


@pytest.mark.parametrize("c", [1.0, 0.125])
def test_query_gradient_is_the_frobenius_norm_of_the_backward_map(c):
    """Oracle: autograd's Jacobian of softmax(c K q) with respect to q (which is c K^T J)."""
    g = scaling.make_generator(7)
    q = torch.randn(1, 6, 16, generator=g, dtype=torch.float64)
    k = torch.randn(1, 9, 16, generator=g, dtype=torch.float64)
    ours = scaling.query_gradient(torch.softmax(c * q @ k.transpose(-2, -1), -1), k, c)
    assert ours[0].tolist() == pytest.approx(_query_grad_norms_by_autograd(q[0], k[0], c), rel=1e-9)


def test_query_gradient_keeps_its_digits_on_saturated_rows():
    """Saturated rows (1 - p_max of 1e-5 and below, down to 1e-58): against the same sum written without any
    subtraction of nearly equal numbers, k_j - kbar = sum_i p_i (k_j - k_i), in float64."""
    g = scaling.make_generator(8)
    q = 12 * torch.randn(1, 5, 64, generator=g, dtype=torch.float64)
    k = torch.randn(1, 8, 64, generator=g, dtype=torch.float64)
    p = torch.softmax(q @ k.transpose(-2, -1), -1)
    rest = p.sort(-1, descending=True).values[..., 1:].sum(-1)  # 1 - p_max, uncancelled
    assert (rest < 1e-10).sum() >= 2 and (rest > 0).all()
    direct = []
    for row in p[0]:
        cols = [(row[j] * (row[:, None] * (k[0][j] - k[0])).sum(0)).pow(2).sum() for j in range(8)]
        direct.append(torch.stack(cols).sum().sqrt().item())
    assert scaling.query_gradient(p, k, 1.0)[0].tolist() == pytest.approx(direct, rel=1e-9)


def test_the_key_gradient_carries_the_same_factor():
    """dL/dk_j = c (dL/ds_j) q for s = c K q: the 1/sqrt(d_k) comes back for the keys too."""
    g = scaling.make_generator(9)
    q = torch.randn(32, generator=g, dtype=torch.float64)
    k = torch.randn(6, 32, generator=g, dtype=torch.float64, requires_grad=True)
    up = torch.randn(6, generator=g, dtype=torch.float64)
    c = 1 / math.sqrt(32)
    s = (c * (k @ q)).detach().requires_grad_()
    (ds,) = torch.autograd.grad((torch.softmax(s, -1) * up).sum(), s)
    (dk,) = torch.autograd.grad((torch.softmax(c * (k @ q), -1) * up).sum(), k)
    assert torch.allclose(dk, c * ds[:, None] * q[None, :], rtol=1e-12, atol=1e-15)


def _exact_jacobian_norm(row) -> float:
    """|diag(p) - p p^T|_F with 60-digit arithmetic (mpmath): no cancellation anywhere."""
    mpmath.mp.dps = 60
    e = [mpmath.exp(mpmath.mpf(float(x))) for x in row]
    p = [x / mpmath.fsum(e) for x in e]
    return float(mpmath.sqrt(mpmath.fsum((pi * ((i == j) - pj)) ** 2
                                         for i, pi in enumerate(p) for j, pj in enumerate(p))))


def test_score_gradient_is_the_jacobians_frobenius_norm():
    """Oracles: torch.autograd's Jacobian of torch.softmax (float64) on ordinary rows, and the
    same norm in 60-digit arithmetic on saturated rows too, where float64 autograd itself
    loses digits to 1 - p_max."""
    g = scaling.make_generator(5)
    ordinary = torch.randn(20, 9, generator=g, dtype=torch.float64) * 3
    saturated = torch.randn(8, 9, generator=g, dtype=torch.float64) * 30
    for rows in (ordinary, saturated):
        ours = scaling.score_gradient(torch.softmax(rows, dim=-1))
        for row, value in zip(rows, ours):
            assert value.item() == pytest.approx(_exact_jacobian_norm(row.tolist()), rel=1e-9)
    for row, value in zip(ordinary, scaling.score_gradient(torch.softmax(ordinary, -1))):
        jac = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), row)
        assert value.item() == pytest.approx(torch.linalg.matrix_norm(jac).item(), rel=1e-9)


def test_score_gradient_is_the_rms_gradient_for_random_upstream_gradients():
    """E|J g|^2 = |J|_F^2 for g with independent unit-variance entries: a Monte Carlo check
    through a real backward pass of L = p . g (bound: 5 standard errors of the mean)."""
    s = torch.tensor([2.0, 0.5, -1.0, 0.0, 1.5], dtype=torch.float64, requires_grad=True)
    gen = torch.Generator().manual_seed(3)
    ups = torch.randn(20_000, 5, generator=gen, dtype=torch.float64)
    sq = []
    for up in ups[:2000]:
        (grad,) = torch.autograd.grad((torch.softmax(s, -1) * up).sum(), s)
        sq.append(grad.pow(2).sum().item())
    sq = torch.tensor(sq)
    expected = scaling.score_gradient(torch.softmax(s.detach(), -1)).item() ** 2
    assert abs(sq.mean().item() - expected) < 5 * sq.std().item() / math.sqrt(len(sq))


@pytest.mark.parametrize("n", [2, 3, 8, 512])
def test_even_row_gradient(n):
    p = torch.full((n,), 1.0 / n, dtype=torch.float64)
    assert scaling.even_row_gradient(n) == pytest.approx(scaling.score_gradient(p).item(), rel=1e-12)


def test_softmax_stats_match_torch():
    g = scaling.make_generator(5)
    scores = torch.randn(3, 7, 11, generator=g) * 4
    stats = scaling.softmax_stats(scores)
    p = torch.softmax(scores.double(), dim=-1)
    entropy = torch.distributions.Categorical(probs=p).entropy().mean().item()
    assert stats.entropy == pytest.approx(entropy, abs=1e-9)
    assert stats.max_prob == pytest.approx(p.max(-1).values.mean().item(), abs=1e-12)
    assert sum(stats.sorted_probs) == pytest.approx(1.0, abs=1e-9)
    even = math.sqrt(10) / 11
    ratios = torch.tensor([torch.linalg.matrix_norm(torch.autograd.functional.jacobian(
        lambda s: torch.softmax(s, -1), row)).item() / even for row in scores.double().reshape(-1, 11)],
        dtype=torch.float64)
    assert stats.gradient == pytest.approx(ratios.median().item(), rel=1e-9)
    assert stats.starved == pytest.approx((ratios < 0.1).double().mean().item())


def test_entropy_survives_underflow():
    """Scores 1000 apart underflow to exact zeros; entropy must be 0, not NaN."""
    stats = scaling.softmax_stats(torch.tensor([[0.0, 1000.0, -1000.0]]))
    assert stats.entropy == 0.0 and stats.max_prob == 1.0 and stats.saturated == 1.0
    assert stats.gradient == 0.0 and stats.starved == 1.0


def test_the_scaled_curve_is_flat_and_the_unscaled_one_tracks_d_k():
    """Statistical bound: 4.5 standard errors per point (eleven points per curve)."""
    module = REGISTRY["attention_scaling"]
    unscaled, scaled = module.variance_curve(0)
    for d, u, s in zip(module.CURVE_DIMS, unscaled, scaled):
        se = scaling.variance_standard_error(d, module.curve_pairs_for(d))
        assert abs(u - d) < 4.5 * se
        assert abs(s - 1) < 4.5 * se / d


def test_same_seed_same_numbers_and_work_is_bounded():
    module = REGISTRY["attention_scaling"]
    a = module.compute({"d_k": 300, "n_positions": 100, "seed": 9})
    b = module.compute({"d_k": 300, "n_positions": 100, "seed": 9})
    assert a == b
    for d_k in (1, 64, 700, 1024):
        assert module.n_pairs_for(d_k) * d_k <= max(module.VARIANCE_ELEMENTS, 1000 * d_k)
        for n_pos in (2, 300, 512):
            s, q = module.queries_for(d_k, n_pos)
            assert s * q * n_pos * d_k <= max(module.SCORE_FLOPS, (module.MIN_QUERIES + s) * n_pos * d_k)
            assert s * n_pos * d_k <= max(module.KEY_ELEMENTS, n_pos * d_k)
            assert s * q >= module.MIN_QUERIES
