"""The cache's other levers: what each architectural or numeric choice does to its bytes.

Every size is read off the book's own `KVCache`, filled on PyTorch's ``meta`` device with the
tensors a model using that lever would store (`serving.filled_cache`), never a second formula.
One model shape throughout, Llama-3-8B's (L = 32 layers, h = 32 query heads, n_kv = 8, d_head =
128), changed by one lever at a time:

- grouped-query attention (as built) and plain multi-head attention (n_kv = h), for reference;
- a sliding window (Mistral-7B's 4,096 tokens, Jiang et al. 2023): each layer keeps at most the
  window's last keys and values;
- interleaved local and global layers (Gemma 3's pattern: five local layers with a 1,024-token
  window for each global layer, Gemma Team 2025);
- latent attention (DeepSeek-V2's MLA, DeepSeek-AI 2024): each layer caches one 512-wide latent
  vector and one 64-wide rotary key per token, shared by all heads, instead of keys and values;
- cross-layer sharing (Brandon et al. 2024, "cross-layer attention"): each pair of adjacent
  layers keeps one set of keys and values;
- a quantised cache: int8 or fp8 with one scale per tensor (a few bytes, not counted), and
  4-bit values packed two to a byte with one float16 scale per key and per value vector.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# --8<-- [start:base]
from .kv_cache import KVCache
from .presets import get_preset
from .serving import filled_cache  # a KVCache of the given shape and dtype, on meta

BASE = get_preset("llama-3-8b")  # the model shape every lever changes: L, h, n_kv, d_head
MISTRAL_WINDOW = 4096
GEMMA_WINDOW, GEMMA_LOCAL_PER_GLOBAL = 1024, 5
MLA_LATENT, MLA_ROPE = 512, 64
# --8<-- [end:base]


@dataclass(frozen=True)
class Lever:
    key: str
    name: str
    cached: str  # what one token leaves in one layer, in words


LEVERS = (
    Lever("mha", "multi-head (n_kv = h)", "32 keys and 32 values of 128"),
    Lever("gqa", "grouped-query (as built)", "8 keys and 8 values of 128"),
    Lever("window", "sliding window, 4,096", "as built, last 4,096 tokens only"),
    Lever("local_global", "5 local (1,024) : 1 global", "as built; local layers keep 1,024"),
    Lever("mla", "latent attention (MLA)", "one latent of 512 + one key of 64"),
    Lever("cross_layer", "cross-layer sharing (pairs)", "as built, in every other layer"),
    Lever("fp8", "fp8 / int8 cache", "as built, 1 byte a value"),
    Lever("int4", "4-bit cache", "as built, 2 values a byte, + scales"),
)


# --8<-- [start:levers]
def _global_layers(n_layers: int) -> list[bool]:
    """True for the global layers of a local:global interleave: every sixth layer."""
    return [(i + 1) % (GEMMA_LOCAL_PER_GLOBAL + 1) == 0 for i in range(n_layers)]


def cache_for(lever: str, context: int) -> tuple[KVCache, ...]:
    """The book's KVCache for one user after `context` tokens, as a model with `lever` fills it
    (and, for the 4-bit cache, a second one holding its scales)."""
    L, n_kv, d, h = BASE.n_layers, BASE.n_kv_heads, BASE.d_head, BASE.n_heads
    bf16 = torch.bfloat16
    if lever == "mha":
        return (filled_cache(L, h, d, context, 1, bf16),)
    if lever == "gqa":
        return (filled_cache(L, n_kv, d, context, 1, bf16),)
    if lever == "window":  # every layer drops what slid out of the window
        return (filled_cache(L, n_kv, d, min(context, MISTRAL_WINDOW), 1, bf16),)
    if lever == "cross_layer":  # one cache per pair of layers
        return (filled_cache(L // 2, n_kv, d, context, 1, bf16),)
    if lever in ("fp8", "int4"):
        if lever == "fp8":
            return (filled_cache(L, n_kv, d, context, 1, torch.float8_e4m3fn),)
        return (filled_cache(L, n_kv, d // 2, context, 1, torch.uint8),  # 2 values per byte
                filled_cache(L, n_kv, 1, context, 1, torch.float16))  # one scale per vector
    cache = KVCache(L)
    for layer, is_global in enumerate(_global_layers(L) if lever == "local_global" else [0] * L):
        if lever == "local_global":
            t = context if is_global else min(context, GEMMA_WINDOW)
            k = torch.empty(1, n_kv, t, d, dtype=bf16, device="meta")  # (B, n_kv, T, d_head)
            cache.update(layer, k, torch.empty_like(k))
        elif lever == "mla":  # the latent in the key's place, the shared rotary key in the value's
            latent = torch.empty(1, 1, context, MLA_LATENT, dtype=bf16, device="meta")
            rope_k = torch.empty(1, 1, context, MLA_ROPE, dtype=bf16, device="meta")
            cache.update(layer, latent, rope_k)
        else:
            raise ValueError(f"unknown lever {lever!r}")
    return (cache,)
# --8<-- [end:levers]


def bytes_per_token(lever: str = "gqa") -> int:
    """What one token adds while every layer still keeps it (before any window fills)."""
    return user_bytes(lever, 1)


def user_bytes(lever: str, context: int) -> int:
    """One user's cache after `context` tokens: what the KVCache(s) hold."""
    return sum(cache.nbytes() for cache in cache_for(lever, context))
