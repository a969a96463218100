"""Turning the last position's logits into the next token: greedy, temperature, top-k, top-p.

Each filter maps logits to logits (blocked tokens get -inf), so they compose in any order and
``next_token_probs`` can show a reader the distribution that is actually sampled from.
Top-p is nucleus sampling (Holtzman et al., 2020). The rules are the ones Hugging Face's
``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and ``TopPLogitsWarper`` apply, and the tests
hold them to it on a 128,256-token vocabulary.
"""

from __future__ import annotations

import math

import torch


def check_sampling_args(temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None) -> None:
    """ValueError naming the argument for a temperature <= 0, a top_k < 1, or a top_p outside (0, 1]."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
        raise ValueError(f"temperature must be a number > 0, got {temperature!r} (use greedy=True for argmax decoding)")
    if math.isinf(temperature):
        raise ValueError(f"temperature must be finite, got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be an integer >= 1 (or None for no top-k), got {top_k!r}")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1] (or None for no top-p), got {top_p!r}")


# --8<-- [start:filters]
def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """T < 1 sharpens the distribution, T > 1 flattens it; T -> 0 is greedy."""
    check_sampling_args(temperature=temperature)
    return logits / temperature


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the k largest logits of each row (ties at the threshold are kept too)."""
    check_sampling_args(top_k=k)
    k = min(k, logits.size(-1))
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # (B, 1)
    return logits.masked_fill(logits < kth_largest, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose probabilities add up to at least p.

    Said from the other end: drop the largest tail of least likely tokens whose total is at most
    1 - p. The tail is summed from the bottom up, because a float32 running sum from the top
    reaches 1.0 early on a large vocabulary and would wrongly drop the far tail.
    """
    check_sampling_args(top_p=p)
    if p == 1:
        return logits  # the whole distribution: there is nothing to cut
    sorted_logits, order = torch.sort(logits, dim=-1)  # ascending: least likely first
    tail_mass = sorted_logits.softmax(dim=-1).cumsum(dim=-1)  # (B, V): this token and all less likely
    drop_sorted = tail_mass <= 1 - p
    drop_sorted[..., -1] = False  # the most likely token always survives
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))
# --8<-- [end:filters]


def next_token_probs(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """The distribution sampling draws from, after temperature, then top-k, then top-p. (B, V)."""
    check_sampling_args(temperature, top_k, top_p)
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
    check_sampling_args(temperature, top_k, top_p)  # invalid settings fail even when greedy ignores them
    if greedy:
        return logits.argmax(dim=-1, keepdim=True)
    probs = next_token_probs(logits, temperature, top_k, top_p)
    return torch.multinomial(probs, num_samples=1, generator=generator)
# --8<-- [end:sample]
