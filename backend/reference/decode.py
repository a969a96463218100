"""Decoding with and without the KV cache: why it is allowed, what it saves, and what it costs.

Three pieces, each plain PyTorch:

* ``prefix_kv_change``: run a model over a prefix, then over the prefix plus one more token, and
  compare the keys and values it computed for the prefix. Under the causal mask they are the
  same numbers; with a bidirectional (encoder) mask they change from the second layer on.
* Key rows: how many one generation computes (``generate.token_steps``, in closed form). A *key row* is one
  position's key vector in one layer (all of that layer's n_kv key heads together: one row of
  ``k_proj(x)``, shape (n_kv * d_head,)), counted for one sequence. Every position run through
  the model computes exactly one key row (and one value row) in every layer, so the count per
  layer is the number of positions ``generate`` reports as processed.
* ``time_decode``: wall-clock time of the same greedy generation with and without a cache,
  warm-up first, runs interleaved, CUDA timed with events after a synchronise.
* ``step_times``: the same greedy loop as ``generate``, with each step's forward call timed on
  its own, so time per step can be drawn against the position it wrote.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from .generate import GenerationResult, generate
from .kv_cache import KVCache
from .masks import causal_mask, to_additive
from .model import DecoderLM
from .rope import rope_cos_sin


# --8<-- [start:prefix_kv]
@torch.no_grad()
def layer_kv(model: DecoderLM, ids: torch.Tensor, causal: bool = True) -> KVCache:
    """Every layer's keys and values for ids (B, T), run once with the causal mask or, with
    causal=False, with no mask at all (every position sees every other: an encoder's rule)."""
    B, T = ids.shape
    x = model.embed_tokens(ids)  # (B, T, d_model)
    positions = torch.arange(T, device=ids.device).expand(B, T)
    cos, sin = rope_cos_sin(positions, model.config.d_head, model.config.rope_theta, x.dtype)
    mask = to_additive(causal_mask(T, T, x.device), x.dtype) if causal else None  # (T, T) or none
    cache = model.new_cache()  # the layers write their K and V into it as they go
    for layer in model.layers:
        x, _ = layer(x, cos, sin, mask, cache)
    return cache


def prefix_kv_change(model: DecoderLM, ids: torch.Tensor, causal: bool = True) -> list[float]:
    """Per layer: the largest change in the prefix's keys or values when one token is appended.

    ids (B, T + 1): the first T positions are the prefix, the last one the appended token."""
    before = layer_kv(model, ids[:, :-1], causal)  # K, V: (B, n_kv, T, d_head) per layer
    after = layer_kv(model, ids, causal)  # (B, n_kv, T + 1, d_head): the same T rows, plus one
    T = ids.size(1) - 1
    return [max((k1 - k2[:, :, :T]).abs().max().item(), (v1 - v2[:, :, :T]).abs().max().item())
            for k1, k2, v1, v2 in zip(before.keys, after.keys, before.values, after.values)]
# --8<-- [end:prefix_kv]


@torch.no_grad()
def prefix_kv_moves(model: DecoderLM, ids: torch.Tensor, causal: bool = True,
                    tol: float = 1e-6) -> list[tuple[float, int]]:
    """Per layer, the scale of what ``prefix_kv_change`` reports: (largest change in the
    prefix's keys or values divided by the root-mean-square of that tensor over the prefix,
    number of prefix positions whose key or value moved by more than tol anywhere).

    ids (B, T + 1) as for ``prefix_kv_change``."""
    before = layer_kv(model, ids[:, :-1], causal)
    after = layer_kv(model, ids, causal)
    T = ids.size(1) - 1
    out = []
    for k1, k2, v1, v2 in zip(before.keys, after.keys, before.values, after.values):
        dk, dv = (k1 - k2[:, :, :T]).abs(), (v1 - v2[:, :, :T]).abs()  # (B, n_kv, T, d_head)
        rel = max(dk.max().item() / k1.pow(2).mean().sqrt().item(),
                  dv.max().item() / v1.pow(2).mean().sqrt().item())
        moved = (dk.amax(dim=(0, 1, 3)) > tol) | (dv.amax(dim=(0, 1, 3)) > tol)  # (T,)
        out.append((rel, int(moved.sum().item())))
    return out


@dataclass
class DecodeTiming:
    """Milliseconds of each timed run (warm-up excluded), interleaved cached/uncached, and the
    last run of each: its tokens, logits and the positions it processed."""

    cache_ms: tuple[float, ...]
    no_cache_ms: tuple[float, ...]
    with_cache: GenerationResult
    without_cache: GenerationResult
    cache_bytes: int  # bytes the cached run's KVCache held at the end


# --8<-- [start:time_decode]
def _clock(fn, dev: torch.device):
    """(result, milliseconds). CUDA runs asynchronously: time it with events recorded on the
    stream and synchronise before reading them; on a CPU the wall clock is the work."""
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        end.record()
        torch.cuda.synchronize(dev)
        return out, start.elapsed_time(end)
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1000


@torch.no_grad()
def time_decode(model: DecoderLM, prompt: torch.Tensor, steps: int, repeats: int = 3,
                warmup_steps: int = 8) -> DecodeTiming:
    """Greedy generation of `steps` tokens from prompt (B, T_prompt), with and without a cache.

    One short warm-up of each first (allocator, first-call costs), then `repeats` runs of each,
    alternated so both are sampled over the same stretch of time."""
    dev = prompt.device
    for use_cache in (True, False):
        generate(model, prompt, min(warmup_steps, steps), use_cache=use_cache, greedy=True)
    cache_ms, no_cache_ms = [], []
    for _ in range(repeats):
        cached, ms = _clock(lambda: generate(model, prompt, steps, use_cache=True, greedy=True), dev)
        cache_ms.append(ms)
        uncached, ms = _clock(lambda: generate(model, prompt, steps, use_cache=False, greedy=True), dev)
        no_cache_ms.append(ms)
    return DecodeTiming(tuple(cache_ms), tuple(no_cache_ms), cached, uncached, cached.cache.nbytes())
# --8<-- [end:time_decode]


# --8<-- [start:step_times]
@torch.no_grad()
def step_times(model: DecoderLM, prompt: torch.Tensor, steps: int,
               use_cache: bool) -> tuple[list[float], torch.Tensor]:
    """Greedy generation of `steps` tokens from prompt (B, T_prompt), as ``generate`` does it
    (the same model calls, cache and inputs), with each step timed on its own.

    Returns (milliseconds of each step, tokens (B, T_prompt + steps)). Step i writes position
    T_prompt + i: without a cache it runs all T_prompt + i positions so far, with one it runs the
    prompt at step 0 (prefill) and one position after that (decode)."""
    dev = prompt.device
    tokens, cache = prompt, (model.new_cache() if use_cache else None)
    step_input, ms = tokens, []

    def one_step():
        logits = model(step_input, cache=cache, logits_to_keep=1).logits[:, -1, :]  # (B, V)
        return logits.argmax(dim=-1, keepdim=True)  # (B, 1): greedy

    for _ in range(steps):
        next_id, t = _clock(one_step, dev)
        ms.append(t)
        tokens = torch.cat((tokens, next_id), dim=1)
        step_input = next_id if use_cache else tokens
    return ms, tokens
# --8<-- [end:step_times]
