"""Speculative decoding (backend/reference/speculative.py): the closed forms against the
algorithm itself, run many times; and the verification rule's promise, that what comes out is
distributed as the large model's own sampling, whatever the draft."""

from __future__ import annotations

import math

import pytest
import torch

from backend.reference import speculative as sd


def _pair(vocab: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(torch.randn(vocab, generator=g, dtype=torch.float64), 0)
    q = torch.softmax(torch.randn(vocab, generator=g, dtype=torch.float64), 0)
    return p, q


@pytest.mark.parametrize("seed,k", [(0, 1), (1, 3), (2, 6)])
def test_tokens_per_pass_match_the_closed_form(seed, k):
    p, q = _pair(12, seed)
    alpha = sd.acceptance_rate(p, q)
    assert 0.05 < alpha < 0.95
    rounds = 6000
    mean, _ = sd.simulate(p, q, k, rounds, torch.Generator().manual_seed(seed + 100))
    expected = sd.expected_tokens(alpha, k)
    # the tokens of one round lie in 1..k+1: their spread is at most (k/2)^2, so 5 standard
    # errors of the mean stay under 5 * (k / 2) / sqrt(rounds)
    assert abs(mean - expected) < 5 * (k / 2) / math.sqrt(rounds)


def test_what_comes_out_follows_the_large_model_whatever_the_draft():
    p, q = _pair(8, 7)
    rounds = 8000
    _, first = sd.simulate(p, q, 3, rounds, torch.Generator().manual_seed(3))
    # Pearson's chi-square against p, 7 degrees of freedom: 24.3 is its 0.999 quantile
    chi2 = float(((first - p) ** 2 / p).sum()) * rounds
    assert chi2 < 24.3
    # and the draft's own distribution is far from it: the test can tell them apart
    assert float(((q - p) ** 2 / p).sum()) * rounds > 1000


def test_the_draft_is_kept_with_the_overlap_of_the_two_distributions():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    assert sd.acceptance_rate(p, p) == pytest.approx(1.0)
    assert sd.acceptance_rate(p, torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)) == \
        pytest.approx(0.2)


def test_the_closed_forms_at_their_ends():
    assert sd.expected_tokens(0.0, 5) == 1.0          # every draft refused: the pass's own token
    assert sd.expected_tokens(1.0, 5) == 6.0          # every draft kept, plus the free token
    assert sd.expected_tokens(0.5, 2) == pytest.approx(1.75)
    assert sd.speedup(0.0, 4, 0.0) == 1.0             # a free draft that is always refused
    assert sd.speedup(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    # the best length is the argmax over 1..k_max, found by trying each
    for alpha, c in [(0.5, 0.05), (0.8, 0.05), (0.95, 0.01), (0.6, 0.3)]:
        tries = {k: sd.speedup(alpha, k, c) for k in range(1, 17)}
        assert sd.best_k(alpha, c, 16) == max(tries, key=tries.get)
    edge = sd.break_even_alpha(4, 0.05)
    assert sd.speedup(edge, 4, 0.05) == pytest.approx(1.0)
    assert sd.break_even_alpha(4, 1.0) is None        # a draft as slow as the target never pays
