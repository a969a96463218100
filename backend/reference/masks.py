"""Attention masks as boolean predicates, composed, then converted once to an additive mask.

Convention: True = "this query may attend to this key", the same as
``F.scaled_dot_product_attention`` and Hugging Face's ``masking_utils``. (``nn.MultiheadAttention``
and many tutorials use the opposite: True = blocked.) Every mask here is broadcastable to the
score shape (B, n_heads, T_q, T_kv).
"""

from __future__ import annotations

import functools

import torch


# --8<-- [start:causal_mask]
def causal_mask(t_q: int, t_kv: int | None = None, device=None) -> torch.Tensor:
    """Query i may see keys 0..i. With a cache the T_q queries are the *last* T_q positions."""
    t_kv = t_q if t_kv is None else t_kv
    q_pos = torch.arange(t_kv - t_q, t_kv, device=device)[:, None]  # (T_q, 1) absolute positions
    kv_pos = torch.arange(t_kv, device=device)[None, :]  # (1, T_kv)
    return kv_pos <= q_pos  # (T_q, T_kv), lower triangular when T_q == T_kv
# --8<-- [end:causal_mask]


# --8<-- [start:padding_mask]
def padding_mask(lengths: torch.Tensor, t_kv: int) -> torch.Tensor:
    """Keys at or beyond each sequence's true length are padding: nobody may attend to them."""
    kv_pos = torch.arange(t_kv, device=lengths.device)  # (T_kv,)
    valid = kv_pos[None, :] < lengths[:, None]  # (B, T_kv)
    return valid[:, None, None, :]  # (B, 1, 1, T_kv): same for every head and every query


def cross_mask(src_lengths: torch.Tensor, t_tgt: int, t_src: int) -> torch.Tensor:
    """Decoder queries look at encoder keys: no causality, only the source padding is hidden."""
    return padding_mask(src_lengths, t_src).expand(-1, 1, t_tgt, t_src)  # (B, 1, T_tgt, T_src)
# --8<-- [end:padding_mask]


def sliding_window_mask(t_q: int, window: int, t_kv: int | None = None, device=None) -> torch.Tensor:
    """Causal, and only the last ``window`` positions (Mistral-style local attention)."""
    t_kv = t_q if t_kv is None else t_kv
    q_pos = torch.arange(t_kv - t_q, t_kv, device=device)[:, None]
    kv_pos = torch.arange(t_kv, device=device)[None, :]
    return (q_pos - kv_pos) < window  # combine with causal_mask via and_masks


# --8<-- [start:compose]
def and_masks(*masks: torch.Tensor) -> torch.Tensor:
    """Allowed only where every mask allows (e.g. causal AND not padding)."""
    return functools.reduce(torch.logical_and, masks)


def or_masks(*masks: torch.Tensor) -> torch.Tensor:
    """Allowed where any mask allows (e.g. causal OR a bidirectional prefix)."""
    return functools.reduce(torch.logical_or, masks)


def to_additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Convert once, at the boundary, in the *score* dtype: 0 where allowed, finfo(dtype).min where not.

    finfo.min rather than -inf keeps a fully masked row finite (uniform, not NaN).
    """
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    blocked = torch.full((), torch.finfo(dtype).min, dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, blocked)
# --8<-- [end:compose]


def dtype_pitfall(t: int = 4) -> dict:
    """What goes wrong when the additive mask is built in float32 but the scores are float16.

    Returns the facts the book states: the sum silently becomes float32 (a full T x T upcast), and
    float32's most negative number does not fit in float16, so casting it down gives -inf.
    """
    scores = torch.zeros(t, t, dtype=torch.float16)
    mask32 = to_additive(causal_mask(t), torch.float32)
    mask16 = to_additive(causal_mask(t), torch.float16)
    fp32_min_in_fp16 = torch.tensor(torch.finfo(torch.float32).min).to(torch.float16)
    return {
        "scores_dtype": scores.dtype,
        "sum_with_fp32_mask_dtype": (scores + mask32).dtype,
        "sum_with_fp16_mask_dtype": (scores + mask16).dtype,
        "fp32_min_cast_to_fp16": fp32_min_in_fp16.item(),
        "fp16_min": torch.finfo(torch.float16).min,
    }
