"""Why attention divides by sqrt(d_k): the variance argument, measured.

If the entries of q and k are independent with mean 0 and variance 1, then q . k is a sum of
d_k products, each of variance 1, so Var(q . k) = d_k and its spread grows like sqrt(d_k).
Scores that large push a softmax into saturation, where nearly all the mass sits on one
position and the gradient through the softmax is nearly zero. Multiplying by 1/sqrt(d_k)
brings the variance back to 1 whatever the head size (Vaswani et al., 2017, footnote 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


# --8<-- [start:dot_variance]
def dot_product_variance(d_k: int, n_pairs: int, generator: torch.Generator,
                         device: str = "cpu") -> tuple[float, float]:
    """Variance of q . k over n_pairs random unit-variance pairs, unscaled and scaled."""
    q = torch.randn(n_pairs, d_k, generator=generator, device=device)  # (N, d_k)
    k = torch.randn(n_pairs, d_k, generator=generator, device=device)  # (N, d_k)
    dots = (q * k).sum(dim=-1)                                          # (N,)
    scaled = dots / math.sqrt(d_k)
    return dots.var().item(), scaled.var().item()
# --8<-- [end:dot_variance]


@dataclass(frozen=True)
class SoftmaxStats:
    """What a softmax over random scores looks like, averaged over many queries."""

    max_prob: float        # mean over queries of the largest weight
    entropy: float         # mean entropy of a row, in nats
    jacobian_norm: float   # mean Frobenius norm of d softmax / d scores: how much gradient flows
    saturated: float       # fraction of rows that put at least 99% of their mass on one position
    sorted_probs: list     # mean weight at each rank, largest first (length n_positions)


# --8<-- [start:softmax_stats]
def softmax_stats(scores: torch.Tensor) -> SoftmaxStats:
    """Summarise softmax(scores) along the last dim; scores: (..., n_positions)."""
    p = torch.softmax(scores, dim=-1)
    # p * log p is 0 in the limit p -> 0; xlogy gets that limit right where p underflows.
    entropy = -torch.special.xlogy(p, p).sum(dim=-1)
    # The Jacobian is diag(p) - p p^T; its squared Frobenius norm expands to
    # sum p^2 - 2 sum p^3 + (sum p^2)^2, so no (T, T) matrix per query is needed.
    p2 = p.pow(2).sum(dim=-1)
    jac = (p2 - 2 * p.pow(3).sum(dim=-1) + p2.pow(2)).clamp_min(0).sqrt()
    ranked = p.sort(dim=-1, descending=True).values
    n = p.shape[-1]
    return SoftmaxStats(
        max_prob=ranked[..., 0].mean().item(),
        entropy=entropy.mean().item(),
        jacobian_norm=jac.mean().item(),
        saturated=(ranked[..., 0] >= 0.99).float().mean().item(),
        sorted_probs=ranked.reshape(-1, n).mean(dim=0).tolist(),
    )


def random_scores(d_k: int, n_positions: int, n_sequences: int, n_queries: int,
                  generator: torch.Generator, device: str = "cpu") -> torch.Tensor:
    """Unscaled q . k scores: each of n_sequences draws its own keys, queried n_queries times."""
    q = torch.randn(n_sequences, n_queries, d_k, generator=generator, device=device)    # (S, Q, d_k)
    k = torch.randn(n_sequences, n_positions, d_k, generator=generator, device=device)  # (S, T, d_k)
    return q @ k.transpose(-2, -1)                                                      # (S, Q, T)
# --8<-- [end:softmax_stats]


def uniform_entropy(n_positions: int) -> float:
    """The largest entropy a softmax over n positions can have: log n nats."""
    return math.log(n_positions)


def make_generator(seed: int, device: str = "cpu") -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g
