"""Latent attention at decode time (DeepSeek-V2's MLA): how a model that caches one compressed
vector per token attends without rebuilding every head's keys and values at every step.

Each token's cache entry is a latent `c` (width `d_c`) and one small rotary key shared by the
heads. Head i's key and value are `W_uk[i] @ c` and `W_uv[i] @ c`. Rebuilt at every step, that
is two products over the whole cache. But a score needs only `q · (W_uk[i] c)`, which is
`(W_uk[i]^T q) · c`: multiply the query by `W_uk[i]^T` once, and score the cached latents as
they are. Likewise the weighted sum of values, `sum_t w_t W_uv[i] c_t = W_uv[i] (sum_t w_t c_t)`,
can sum the latents first and expand once. Every head then reads the same cached numbers, like
multi-query attention with a head as wide as the latent. (The rotary part is scored separately,
on its shared key; it is left out here, as it is the same either way.)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


# --8<-- [start:decode]
def expanded(q: torch.Tensor, latents: torch.Tensor, w_uk: torch.Tensor,
             w_uv: torch.Tensor) -> torch.Tensor:
    """One decode step, rebuilding keys and values: q (h, d_head), latents (T, d_c),
    w_uk and w_uv (h, d_head, d_c) -> each head's attention output (h, d_head)."""
    keys = torch.einsum("hdc,tc->htd", w_uk, latents)       # (h, T, d_head): the whole cache
    values = torch.einsum("hdc,tc->htd", w_uv, latents)
    scores = torch.einsum("hd,htd->ht", q, keys) / q.shape[-1] ** 0.5
    return torch.einsum("ht,htd->hd", scores.softmax(-1), values)


def absorbed(q: torch.Tensor, latents: torch.Tensor, w_uk: torch.Tensor,
             w_uv: torch.Tensor) -> torch.Tensor:
    """The same step with W_uk taken into the query and W_uv applied after the sum: the
    attention runs over the cached latents themselves."""
    q_latent = torch.einsum("hd,hdc->hc", q, w_uk)           # (h, d_c): once per step
    scores = torch.einsum("hc,tc->ht", q_latent, latents) / q.shape[-1] ** 0.5
    mixed = torch.einsum("ht,tc->hc", scores.softmax(-1), latents)  # (h, d_c)
    return torch.einsum("hdc,hc->hd", w_uv, mixed)
# --8<-- [end:decode]


@dataclass(frozen=True)
class StepFlops:
    """Multiply-adds (times two: FLOPs) one decode step of one layer spends on attention."""

    expanded: int
    absorbed: int


def step_flops(n_heads: int, d_head: int, d_c: int, context: int) -> StepFlops:
    """Rebuilding: two products of every cached latent with each head's (d_head x d_c) matrix,
    then scores and the weighted sum at width d_head. Absorbed: the query and the output
    through those matrices once, then scores and the sum at width d_c over the latents."""
    h, t = n_heads, context
    rebuild = 2 * (2 * t * h * d_head * d_c)
    attend_heads = 2 * (2 * h * t * d_head)
    once = 2 * (2 * h * d_head * d_c)
    attend_latents = 2 * (2 * h * t * d_c)
    return StepFlops(expanded=rebuild + attend_heads, absorbed=once + attend_latents)
