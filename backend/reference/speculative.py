"""Speculative decoding: a cheap draft model proposes `k` tokens, the large (target) model checks
all of them in one pass and keeps a prefix, so one target pass can yield several tokens.

`verify` is the rule that keeps the output distributed exactly as the target's own sampling
would be: a drafted token x is kept with probability min(1, p(x) / q(x)); at the first one
refused, the token is drawn instead from what p has beyond q, max(0, p - q) renormalised; if
all k are kept, the target's pass has already computed the distribution after them, and one
more token is drawn from it for free.

When every drafted token is kept with the same probability `alpha` (independently), the tokens
one target pass yields are 1 + alpha + ... + alpha^k, and the speed-up over plain decoding
follows from what a draft step costs next to a target step (`draft_cost`).
"""

from __future__ import annotations

import torch


def expected_tokens(alpha: float, k: int) -> float:
    """Mean tokens per target pass: 1 + alpha + ... + alpha^k = (1 - alpha^(k+1)) / (1 - alpha).
    The 1 is the token the pass always yields (the correction at a refusal, or the free one)."""
    if alpha >= 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def speedup(alpha: float, k: int, draft_cost: float, verify_cost: float = 1.0) -> float:
    """Tokens per unit of time against plain decoding's one token per target step. A round costs
    k draft steps (each `draft_cost` target steps) and one check (`verify_cost` target steps: 1
    while the step is memory-bound, as a check of k + 1 positions reads what one step reads)."""
    return expected_tokens(alpha, k) / (k * draft_cost + verify_cost)


def best_k(alpha: float, draft_cost: float, k_max: int, verify_cost: float = 1.0) -> int:
    """The draft length with the largest speed-up among 1..k_max (the smallest on a tie)."""
    return max(range(1, k_max + 1), key=lambda k: (speedup(alpha, k, draft_cost, verify_cost), -k))


def break_even_alpha(k: int, draft_cost: float, verify_cost: float = 1.0) -> float | None:
    """The acceptance rate below which drafting k tokens is slower than not drafting (bisection:
    the speed-up rises with alpha). None when even alpha = 1 does not pay."""
    if speedup(1.0, k, draft_cost, verify_cost) <= 1.0:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if speedup(mid, k, draft_cost, verify_cost) < 1.0 else (lo, mid)
    return hi


def acceptance_rate(p: torch.Tensor, q: torch.Tensor) -> float:
    """The chance `verify` keeps a token drafted from q where the target's distribution is p:
    the sum over tokens of min(p, q), the overlap of the two distributions."""
    return float(torch.minimum(p, q).sum())


def verify(p: torch.Tensor, q: torch.Tensor, drafted: torch.Tensor,
           generator: torch.Generator) -> list[int]:
    """One target pass's tokens. `p` is (k + 1, V): the target's distributions at the k drafted
    positions and after them; `q` is (k, V): the draft's at the k positions; `drafted` the k
    tokens it drew. Returns the kept prefix plus one token (1 to k + 1 tokens)."""
    out: list[int] = []
    for i, token in enumerate(drafted.tolist()):
        keep = min(1.0, float(p[i, token] / q[i, token]))
        if float(torch.rand((), generator=generator)) < keep:
            out.append(token)
            continue
        residual = torch.clamp(p[i] - q[i], min=0.0)
        out.append(int(torch.multinomial(residual / residual.sum(), 1, generator=generator)))
        return out
    out.append(int(torch.multinomial(p[len(out)], 1, generator=generator)))  # the free token
    return out


def simulate(p: torch.Tensor, q: torch.Tensor, k: int, rounds: int,
             generator: torch.Generator) -> tuple[float, torch.Tensor]:
    """`rounds` target passes with fixed distributions p (target) and q (draft) at every position:
    the mean tokens per pass, and how often each token came first in a round (which must follow
    p, whatever q is: the rule's promise)."""
    total, first = 0, torch.zeros(p.numel())
    pk, qk = p.expand(k + 1, -1), q.expand(k, -1)
    for _ in range(rounds):
        drafted = torch.multinomial(qk, 1, generator=generator).squeeze(1)
        tokens = verify(pk, qk, drafted, generator)
        total += len(tokens)
        first[tokens[0]] += 1
    return total / rounds, first / rounds
