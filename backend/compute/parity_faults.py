"""The parity widget's faults: one piece of the book's model broken on purpose, from outside it.

The reference model (`backend/reference/`) is the clean one the chapters print; nothing in it
knows about these faults. `break_model(model, fault)` swaps the class of every piece of one kind
in a built `DecoderLM` for a subclass that changes that piece only:

- rope_layout: the attention layer rotates adjacent pairs (2i, 2i+1) instead of the two halves
  (the RoFormer paper's and Meta's layout), wrong for weights laid out for rotate-half;
- norm_upcast: every RMSNorm computes in its input's own dtype (`norms.rmsnorm_no_upcast`);
- repeat_kv: the attention layer tiles the key/value heads (`repeat`: 0, 1, 0, 1, ...) where each
  should serve a run of neighbouring query heads (`repeat_interleave`: 0, 0, 1, 1, ...);
- causal_mask: the model builds no causal mask, so every position sees the future.

The subclasses add no parameters or buffers, so a swap keeps every weight, whether drawn before
or after it. The attention and model subclasses run the reference `forward` itself, its code
object unchanged, with one global name it reads (`apply_rope`, `repeat_kv`, `causal_mask`) bound
to the broken function: the rest of the model is the book's code as printed, not a second copy.
"""

from __future__ import annotations

import types

import torch

from backend.reference.grouped_query import GroupedQueryAttention
from backend.reference.masks import causal_mask
from backend.reference.model import DecoderLM
from backend.reference.norms import RMSNorm, rmsnorm_no_upcast

FAULTS = ("none", "rope_layout", "norm_upcast", "repeat_kv", "causal_mask")


def interleave(table: torch.Tensor) -> torch.Tensor:
    """A rotate-half cos/sin table (a_0..a_{n-1}, a_0..a_{n-1}) laid out for adjacent pairs:
    (a_0, a_0, a_1, a_1, ...)."""
    half = table[..., : table.size(-1) // 2]
    return half.repeat_interleave(2, dim=-1)


def rotate_pairs(x: torch.Tensor) -> torch.Tensor:
    """(x_0, x_1, x_2, x_3, ...) -> (-x_1, x_0, -x_3, x_2, ...): a quarter turn of every adjacent pair
    (the layout of the original RoFormer and Meta's Llama code, whose checkpoints HF permutes)."""
    pairs = x.unflatten(-1, (-1, 2))  # (..., d_head/2, 2)
    return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)


def apply_rope_interleaved(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """`rope.apply_rope` with pairs (2i, 2i+1) instead of (i, i + d_head/2): the other convention."""
    cos, sin = interleave(cos.unsqueeze(1)), interleave(sin.unsqueeze(1))  # (B, 1, T, d_head)
    return q * cos + rotate_pairs(q) * sin, k * cos + rotate_pairs(k) * sin


def tiled_repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """`grouped_query.repeat_kv` in the wrong order: kv heads 0, 1, .., 0, 1, .. (repeat, not
    repeat_interleave), so query head 1 reads kv head 1 where it should read kv head 0."""
    if n_rep == 1:
        return x
    return x.repeat(1, n_rep, 1, 1)


def causal_mask_off(t_q: int, t_kv: int | None = None, device=None) -> torch.Tensor:
    """`masks.causal_mask`'s shape, every entry True: every position sees every key, the future too."""
    return torch.ones_like(causal_mask(t_q, t_kv, device))


def _rebound(function, **names):
    """`function`'s own code with some of the global names it reads bound to other objects. A
    copy of the function with its own globals, so the reference module (and every other model in
    the process: requests run on threads) still sees the originals, as patching it would not."""
    unread = set(names) - set(function.__code__.co_names)
    if unread:  # the reference code no longer calls it by that name: the break would do nothing
        raise TypeError(f"{function.__qualname__} reads no global named {sorted(unread)}")
    rebound = types.FunctionType(function.__code__, {**function.__globals__, **names},
                                 function.__name__, function.__defaults__, function.__closure__)
    rebound.__kwdefaults__, rebound.__qualname__ = function.__kwdefaults__, function.__qualname__
    rebound.__doc__ = function.__doc__
    return rebound


class InterleavedRoPEAttention(GroupedQueryAttention):
    """The attention layer with RoPE on adjacent pairs (fault rope_layout)."""

    forward = _rebound(GroupedQueryAttention.forward, apply_rope=apply_rope_interleaved)


class TiledKVAttention(GroupedQueryAttention):
    """The attention layer with the key/value heads tiled (fault repeat_kv)."""

    forward = _rebound(GroupedQueryAttention.forward, repeat_kv=tiled_repeat_kv)


class NoUpcastRMSNorm(RMSNorm):
    """RMSNorm with every step in the input's dtype (fault norm_upcast)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm_no_upcast(x, self.weight, self.eps)


class UnmaskedDecoderLM(DecoderLM):
    """The model without its causal mask; a padding mask still applies (fault causal_mask)."""

    forward = _rebound(DecoderLM.forward, causal_mask=causal_mask_off)


# fault -> (the reference class of the piece it breaks, the subclass put in its place)
SWAPS = {
    "rope_layout": (GroupedQueryAttention, InterleavedRoPEAttention),
    "norm_upcast": (RMSNorm, NoUpcastRMSNorm),
    "repeat_kv": (GroupedQueryAttention, TiledKVAttention),
    "causal_mask": (DecoderLM, UnmaskedDecoderLM),
}


def break_model(model: DecoderLM, fault: str) -> DecoderLM:
    """`model`, with every piece of the kind `fault` names swapped for its broken subclass, in
    place ("none": unchanged). Only the module objects change: shared weight tensors stay shared,
    and a model built from the same tensors elsewhere is untouched."""
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {FAULTS}, got {fault!r}")
    if fault == "none":
        return model
    piece, broken = SWAPS[fault]
    for module in model.modules():
        if type(module) is piece:
            module.__class__ = broken
    return model
