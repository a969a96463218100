"""Turning the last position's logits into the next token: greedy, temperature, top-k, top-p.

Each filter maps logits to logits (blocked tokens get -inf), so they compose in any order and
``next_token_probs`` can show a reader the distribution that is actually sampled from.
Top-p is nucleus sampling (Holtzman et al., 2020).
"""

from __future__ import annotations

import torch


# --8<-- [start:filters]
def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """T < 1 sharpens the distribution, T > 1 flattens it; T -> 0 is greedy."""
    if temperature <= 0:
        raise ValueError("temperature must be positive (use greedy=True for argmax decoding)")
    return logits / temperature


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the k largest logits of each row (ties at the threshold are kept too)."""
    k = min(k, logits.size(-1))
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # (B, 1)
    return logits.masked_fill(logits < kth_largest, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose probabilities add up to at least p."""
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs  # probability of all strictly more likely tokens
    drop_sorted = mass_before >= p  # the top token always has mass_before = 0, so it survives
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))
# --8<-- [end:filters]


def next_token_probs(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """The distribution sampling draws from, after temperature, then top-k, then top-p. (B, V)."""
    logits = apply_temperature(logits.float(), temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits.softmax(dim=-1)


# --8<-- [start:sample]
def sample_next_token(
    logits: torch.Tensor,
    greedy: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """logits: (B, V) for the last position -> next token ids (B, 1).

    Pass a seeded ``torch.Generator`` to make sampling reproducible.
    """
    if greedy:
        return logits.argmax(dim=-1, keepdim=True)
    probs = next_token_probs(logits, temperature, top_k, top_p)
    return torch.multinomial(probs, num_samples=1, generator=generator)
# --8<-- [end:sample]
