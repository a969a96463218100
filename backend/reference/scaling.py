"""Why attention divides by sqrt(d_k): the variance argument, measured.

If the entries of q and k are independent with mean 0 and variance 1, then q . k is a sum of
d_k products, each of variance 1, so Var(q . k) = d_k and its spread grows like sqrt(d_k).
Scores that large push a softmax into saturation, where nearly all the mass sits on one
position and almost no gradient reaches the scores of that row. Multiplying by 1/sqrt(d_k)
brings the variance back to 1 whatever the head size (Vaswani et al., 2017, footnote 4).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
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


def variance_standard_error(d_k: int, n_pairs: int) -> float:
    """Standard error of the sample variance of q . k (unscaled) from n_pairs pairs.

    q . k is a sum of d_k products of independent N(0, 1) numbers, so E[(q . k)^4] =
    3 d_k^2 + 6 d_k and Var(sample variance) ~ (E[x^4] - d_k^2) / n. Divide by d_k for the
    scaled scores.
    """
    return math.sqrt((2 * d_k ** 2 + 6 * d_k) / n_pairs)


# --8<-- [start:numpy_variance]
@lru_cache(maxsize=4)
def numpy_variance_experiment(dims: tuple[int, ...] = (4, 64, 512), n_pairs: int = 100_000,
                              seed: int = 0, chunk: int = 8192) -> tuple[tuple[float, float], ...]:
    """(Var(q . k), Var(q . k / sqrt(d))) for each d, drawn exactly as the NumPy one-liner

        rng = np.random.default_rng(seed)
        for d in dims:
            q, k = rng.standard_normal((2, n_pairs, d))

    draws them (all of q, then all of k, from one stream), but a chunk of rows at a time, so
    d = 512 needs a few megabytes instead of 800. A second generator, started where q
    starts, replays q while the first one draws k; the numbers are the same, bit for bit.
    """
    rng = np.random.default_rng(seed)
    results = []
    for d in dims:
        q_rng = np.random.Generator(copy.deepcopy(rng.bit_generator))  # at the start of q
        for start in range(0, n_pairs, chunk):                          # move rng past q
            rng.standard_normal((min(chunk, n_pairs - start), d))
        dots = np.empty(n_pairs)                                        # (N,)
        for start in range(0, n_pairs, chunk):
            rows = min(chunk, n_pairs - start)
            q = q_rng.standard_normal((rows, d))                        # (rows, d)
            k = rng.standard_normal((rows, d))                          # (rows, d)
            dots[start:start + rows] = (q * k).sum(axis=1)
        results.append((float(dots.var()), float((dots / np.sqrt(d)).var())))
    return tuple(results)
# --8<-- [end:numpy_variance]


@dataclass(frozen=True)
class SoftmaxStats:
    """What a softmax over random scores looks like, averaged over many queries."""

    max_prob: float        # mean over queries of the largest weight
    entropy: float         # mean entropy of a row, in nats
    saturated: float       # fraction of rows that put at least 99% of their mass on one position
    gradient: float        # median over rows of score_gradient / even_row_gradient
    starved: float         # fraction of rows whose score gradient is under STARVED x an even row's
    sorted_probs: list     # mean weight at each rank, largest first (length n_positions)


STARVED = 0.1  # a row is "starved" below a tenth of the gradient an even row would get


# --8<-- [start:score_gradient]
def score_gradient(p: torch.Tensor) -> torch.Tensor:
    """How much gradient reaches a row's scores: the root-mean-square of dL/ds over losses
    whose gradient dL/dp with respect to the weights is random, unit variance per weight
    (what random value vectors give at initialisation). p: (..., T) -> (...,)

    dL/ds = J g with J = diag(p) - p p^T, and E|J g|^2 = |J|_F^2 for such g, which is
    sum_i p_i^2 [(1 - p_i)^2 + sum_{j != i} p_j^2]: no (T, T) matrix per row is needed.
    """
    top = p.argmax(dim=-1, keepdim=True)                     # (..., 1)
    p2 = p.pow(2)

    def all_but(x: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
        # total - x_i, except at the largest weight, where the others are summed directly:
        # 1 - 0.999999... would cancel away the very digits a saturated row is made of.
        return (total - x).scatter(-1, top, x.scatter(-1, top, 0).sum(dim=-1, keepdim=True))

    one_minus_p = all_but(p, torch.ones_like(p))             # 1 - p_i = sum_{j != i} p_j
    others2 = all_but(p2, p2.sum(dim=-1, keepdim=True))      # sum_{j != i} p_j^2
    return (p2 * (one_minus_p.pow(2) + others2)).sum(dim=-1).sqrt()


def even_row_gradient(n_positions: int) -> float:
    """score_gradient of the all-equal row p = 1/T: sqrt(T - 1) / T."""
    return math.sqrt(n_positions - 1) / n_positions
# --8<-- [end:score_gradient]


# --8<-- [start:softmax_stats]
def softmax_stats(scores: torch.Tensor) -> SoftmaxStats:
    """Summarise softmax(scores) along the last dim; scores: (..., n_positions)."""
    # float64: a saturated row's gradient is ~(1 - p_max)^2, below float32's resolution.
    return weight_stats(torch.softmax(scores.double(), dim=-1))


def weight_stats(p: torch.Tensor) -> SoftmaxStats:
    """The same summary, of rows of softmax weights p: (..., n_positions), float64."""
    n = p.shape[-1]
    # p * log p is 0 in the limit p -> 0; xlogy gets that limit right where p underflows.
    entropy = -torch.special.xlogy(p, p).sum(dim=-1)
    relative = score_gradient(p) / even_row_gradient(n)  # 1 = as much as an even row gets
    ranked = p.sort(dim=-1, descending=True).values
    return SoftmaxStats(
        max_prob=ranked[..., 0].mean().item(),
        entropy=entropy.mean().item(),
        saturated=(ranked[..., 0] >= 0.99).double().mean().item(),
        gradient=relative.flatten().median().item(),
        starved=(relative < STARVED).double().mean().item(),
        sorted_probs=ranked.reshape(-1, n).mean(dim=0).tolist(),
    )


def random_queries_and_keys(d_k: int, n_positions: int, n_sequences: int, n_queries: int,
                            generator: torch.Generator, device: str = "cpu"):
    """Each of n_sequences key sets is drawn once and queried n_queries times."""
    q = torch.randn(n_sequences, n_queries, d_k, generator=generator, device=device)    # (S, Q, d_k)
    k = torch.randn(n_sequences, n_positions, d_k, generator=generator, device=device)  # (S, T, d_k)
    return q, k


def random_scores(d_k: int, n_positions: int, n_sequences: int, n_queries: int,
                  generator: torch.Generator, device: str = "cpu") -> torch.Tensor:
    """Unscaled q . k scores of random_queries_and_keys' draw: (S, Q, T)."""
    q, k = random_queries_and_keys(d_k, n_positions, n_sequences, n_queries, generator, device)
    return q @ k.transpose(-2, -1)                                                      # (S, Q, T)
# --8<-- [end:softmax_stats]


# --8<-- [start:query_gradient]
def query_gradient(p: torch.Tensor, keys: torch.Tensor, scale: float) -> torch.Tensor:
    """How much gradient reaches the query itself, for scores s = scale * K q:
    dL/dq = scale * K^T J g. Root-mean-square over random unit-variance g, as in
    score_gradient. p: (S, Q, T) weights, keys: (S, T, d_k) -> (S, Q)

    |K^T J|_F^2 = sum_j p_j^2 |k_j - kbar|^2 with kbar = sum_i p_i k_i (column j of K^T J
    is p_j (k_j - kbar)). The scale comes back in the backward pass: the scaled version pays
    its 1/sqrt(d_k) a second time on the way from the scores to q (and so to W_Q).
    """
    top = p.argmax(dim=-1, keepdim=True)                                     # (S, Q, 1)
    k_top = torch.gather(keys, -2, top.expand(-1, -1, keys.shape[-1]))      # (S, Q, d_k)
    rest = p.scatter(-1, top, 0.0)                                           # p without its top
    # kbar - k_top = sum_{i != top} p_i (k_i - k_top): summed without cancelling, because for
    # a saturated row it is the top key's whole (tiny) contribution.
    gap = rest @ keys - rest.sum(dim=-1, keepdim=True) * k_top              # (S, Q, d_k)
    kbar = k_top + gap
    dist2 = (keys.pow(2).sum(-1).unsqueeze(-2) - 2 * kbar @ keys.transpose(-2, -1)
             + kbar.pow(2).sum(-1, keepdim=True)).clamp_min(0)              # |k_j - kbar|^2
    dist2 = dist2.scatter(-1, top, gap.pow(2).sum(-1, keepdim=True))         # the top key exactly
    return scale * (p.pow(2) * dist2).sum(dim=-1).sqrt()
# --8<-- [end:query_gradient]


# --8<-- [start:handout_000]
def handout_000_draw(seed: int = 0) -> dict:
    """Handout 000's box, with PyTorch's generator seeded: 10,000 pairs at d = 64 for the
    variance, then (from the same stream) 8 keys and one query for the softmax over 8 positions."""
    g = make_generator(seed)
    var_unscaled, var_scaled = dot_product_variance(64, 10_000, g)
    k = torch.randn(8, 64, generator=g)                                      # (8, 64)
    q = torch.randn(64, generator=g)                                         # (64,)
    out = {"var_unscaled": var_unscaled, "var_scaled": var_scaled}
    for name, s in (("unscaled", k @ q), ("scaled", k @ q / math.sqrt(64))):
        p = torch.softmax(s.double(), dim=-1)
        out[f"max_prob_{name}"] = p.max().item()
        out[f"entropy_{name}"] = -torch.special.xlogy(p, p).sum().item()
    return out
# --8<-- [end:handout_000]


# --8<-- [start:aligned]
def aligned_score_means(d_k: int, n_pairs: int, correlation: float,
                        generator: torch.Generator) -> tuple[float, float]:
    """Mean of q . k / sqrt(d_k) and of q . k / d_k when every key leans towards its query:
    k = c q + sqrt(1 - c^2) z, so each entry of k has variance 1 and correlation c with q's."""
    q = torch.randn(n_pairs, d_k, generator=generator, dtype=torch.float64)  # (N, d_k)
    z = torch.randn(n_pairs, d_k, generator=generator, dtype=torch.float64)  # (N, d_k)
    k = correlation * q + math.sqrt(1 - correlation ** 2) * z
    dots = (q * k).sum(dim=-1)                        # (N,): d_k terms that lean the same way
    return (dots / math.sqrt(d_k)).mean().item(), (dots / d_k).mean().item()
# --8<-- [end:aligned]


def uniform_entropy(n_positions: int) -> float:
    """The largest entropy a softmax over n positions can have: log n nats."""
    return math.log(n_positions)


def make_generator(seed: int, device: str = "cpu") -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g
