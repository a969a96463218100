"""The 1/sqrt(d_k) experiment (backend/reference/scaling.py) against theory, PyTorch's own
softmax/entropy/Jacobian, and the handouts' published numbers."""

from __future__ import annotations

import math

import pytest
import torch

from backend.reference import scaling
from backend.widgets import REGISTRY


def _var_standard_error(d_k: int, n: int) -> float:
    # q.k is a sum of d_k products of independent N(0,1): E[(q.k)^4] = 3 d_k^2 + 6 d_k,
    # so Var(sample variance) ~ (E[x^4] - d_k^2) / n.
    return math.sqrt((2 * d_k ** 2 + 6 * d_k) / n)


@pytest.mark.parametrize("d_k", [4, 64, 512])
def test_variance_is_d_k_and_scaled_variance_is_one(d_k):
    """Handout 003, "Self-attention" (seeded NumPy, 100,000 pairs): d = 4, 64, 512 give
    variances 4.0, 64.1, 514.2, and 1.01, 1.00, 1.00 after dividing by sqrt(d). Our draw uses
    torch's generator, so we check the same claim within 4 standard errors of the estimate
    rather than the NumPy digits."""
    n = 100_000 if d_k <= 64 else 20_000
    raw, scaled = scaling.dot_product_variance(d_k, n, scaling.make_generator(0))
    assert abs(raw - d_k) < 4 * _var_standard_error(d_k, n)
    assert abs(scaled - 1) < 4 * _var_standard_error(d_k, n) / d_k


def test_handout_000_box_numbers():
    """Handout 000 §2.1 box ("Why 1/sqrt(d_k)"): 10,000 pairs at d = 64 give 64.03 -> 1.000.
    Unseeded torch draw: the digits cannot be reproduced, the meaning can."""
    values = REGISTRY["attention_scaling"].compute({"d_k": 64, "n_positions": 8, "seed": 0})["values"]
    assert values["n_pairs"] == 10_000
    assert abs(values["var_unscaled"] - 64) < 4 * _var_standard_error(64, 10_000)
    assert abs(values["var_scaled"] - 1) < 0.05
    # Same box, softmax over 8 positions: one unseeded draw gave max prob 0.9980 and entropy
    # 0.014 unscaled, 0.4125 and 1.708 scaled, against ln 8 = 2.079 for uniform. Averaged
    # over thousands of queries the unscaled softmax is saturated, the scaled one is not.
    assert values["entropy_uniform"] == pytest.approx(2.079, abs=5e-4)
    assert values["max_prob_unscaled"] > 0.8 and values["entropy_unscaled"] < 0.5
    assert 0.3 < values["max_prob_scaled"] < 0.45
    assert 1.6 < values["entropy_scaled"] < 1.85  # the handout's single scaled draw: 1.708
    # The prose says "more than a third of all queries" are saturated at d_k = 64.
    assert 1 / 3 < values["saturated_unscaled"] < 0.5
    assert values["saturated_scaled"] < 0.01


def test_single_unscaled_draws_like_the_handouts_are_ordinary():
    """A single row with max weight >= 0.998 and entropy <= 0.02 (handout 000's draw) happens
    for a sizeable fraction of queries at d_k = 64, so that print-out was no fluke."""
    scores = scaling.random_scores(64, 8, 64, 64, scaling.make_generator(1))
    p = torch.softmax(scores, dim=-1).reshape(-1, 8)
    extreme = (p.max(dim=-1).values >= 0.998).float().mean().item()
    assert extreme > 0.15


def test_softmax_stats_match_torch():
    g = scaling.make_generator(5)
    scores = torch.randn(3, 7, 11, generator=g) * 4
    stats = scaling.softmax_stats(scores)
    p = torch.softmax(scores, dim=-1)
    entropy = torch.distributions.Categorical(probs=p).entropy().mean().item()
    assert stats.entropy == pytest.approx(entropy, abs=1e-5)
    assert stats.max_prob == pytest.approx(p.max(-1).values.mean().item(), abs=1e-6)
    assert sum(stats.sorted_probs) == pytest.approx(1.0, abs=1e-5)
    norms = [torch.linalg.matrix_norm(torch.autograd.functional.jacobian(
        lambda s: torch.softmax(s, -1), row)).item() for row in scores.reshape(-1, 11)]
    assert stats.jacobian_norm == pytest.approx(sum(norms) / len(norms), rel=1e-4)


def test_entropy_survives_underflow():
    """Scores 1000 apart underflow to exact zeros; entropy must be 0, not NaN."""
    stats = scaling.softmax_stats(torch.tensor([[0.0, 1000.0, -1000.0]]))
    assert stats.entropy == 0.0 and stats.max_prob == 1.0 and stats.saturated == 1.0


def test_the_scaled_curve_is_flat_and_the_unscaled_one_tracks_d_k():
    module = REGISTRY["attention_scaling"]
    unscaled, scaled = module.variance_curve(0)
    for d, u, s in zip(module.CURVE_DIMS, unscaled, scaled):
        n = module.curve_pairs_for(d)
        assert abs(u - d) < 4.5 * _var_standard_error(d, n)
        assert abs(s - 1) < 4.5 * _var_standard_error(d, n) / d


def test_same_seed_same_numbers_and_work_is_bounded():
    module = REGISTRY["attention_scaling"]
    a = module.compute({"d_k": 300, "n_positions": 100, "seed": 9})
    b = module.compute({"d_k": 300, "n_positions": 100, "seed": 9})
    assert a == b
    for d_k in (1, 64, 1024):
        assert module.n_pairs_for(d_k) * d_k <= max(module.VARIANCE_ELEMENTS, 1000 * d_k)
        for n_pos in (2, 512):
            s, q = module.queries_for(d_k, n_pos)
            assert s * q * n_pos * d_k <= max(module.SCORE_FLOPS, 64 * n_pos * d_k)
