"""Attention masks as boolean predicates, composed, then converted once to an additive mask.

Convention: True = "this query may attend to this key", the same as
``F.scaled_dot_product_attention`` and Hugging Face's ``masking_utils``. (``nn.MultiheadAttention``
and many tutorials use the opposite: True = blocked.) Every mask here is broadcastable to the
score shape (B, n_heads, T_q, T_kv).
"""

from __future__ import annotations

import functools
import math

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


def left_padding_mask(lengths: torch.Tensor, t_kv: int) -> torch.Tensor:
    """Padding at the *front*, as batched generation pads prompts so they all end together."""
    kv_pos = torch.arange(t_kv, device=lengths.device)  # (T_kv,)
    valid = kv_pos[None, :] >= (t_kv - lengths)[:, None]  # (B, T_kv)
    return valid[:, None, None, :]  # (B, 1, 1, T_kv)


def cross_mask(src_lengths: torch.Tensor, t_tgt: int, t_src: int) -> torch.Tensor:
    """Decoder queries look at encoder keys: no causality, only the source padding is hidden."""
    return padding_mask(src_lengths, t_src).expand(-1, 1, t_tgt, t_src)  # (B, 1, T_tgt, T_src)
# --8<-- [end:padding_mask]


def sliding_window_mask(t_q: int, window: int, t_kv: int | None = None, device=None) -> torch.Tensor:
    """Causal, and only the last ``window`` positions, the query's own included (Mistral-style)."""
    t_kv = t_q if t_kv is None else t_kv
    q_pos = torch.arange(t_kv - t_q, t_kv, device=device)[:, None]  # (T_q, 1)
    kv_pos = torch.arange(t_kv, device=device)[None, :]  # (1, T_kv)
    distance = q_pos - kv_pos  # (T_q, T_kv): how far back the key is; negative = the future
    return (distance >= 0) & (distance < window)


# --8<-- [start:compose]
def and_masks(*masks: torch.Tensor) -> torch.Tensor:
    """Allowed only where every mask allows (e.g. causal AND not padding)."""
    return functools.reduce(torch.logical_and, masks)


def or_masks(*masks: torch.Tensor) -> torch.Tensor:
    """Allowed where any mask allows (e.g. causal OR a bidirectional prefix)."""
    return functools.reduce(torch.logical_or, masks)


def to_additive(allowed: torch.Tensor, dtype: torch.dtype, fill: float | None = None) -> torch.Tensor:
    """Convert once, at the boundary, in the *score* dtype: 0 where allowed, `fill` where not.

    `fill` defaults to finfo(dtype).min rather than -inf: that keeps a fully masked row finite
    (uniform, not NaN). Pass fill=float("-inf") for the textbook form.
    """
    fill = torch.finfo(dtype).min if fill is None else fill
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    blocked = torch.full((), fill, dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, blocked)
# --8<-- [end:compose]


# --8<-- [start:weights]
def softmax_rows(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the keys, computed in float32 and returned in the scores' dtype."""
    return torch.softmax(scores.float(), dim=-1).to(scores.dtype)  # (..., T_q, T_kv)


def weights_additive(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Additive form: `mask` holds 0 where allowed and a large negative number where not."""
    return softmax_rows(scores + mask)


def weights_boolean(scores: torch.Tensor, allowed: torch.Tensor, fill: float | None = None) -> torch.Tensor:
    """Boolean form: keep the predicate (True = may attend); masked_fill writes the sentinel.

    The sentinel defaults to the scores' own dtype minimum; older code often writes -1e4 instead.
    """
    fill = torch.finfo(scores.dtype).min if fill is None else fill
    return softmax_rows(scores.masked_fill(~allowed, fill))


def weights_zeroed_after(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """The mistake: softmax over every key, then zero the blocked weights. Rows no longer sum to 1."""
    return softmax_rows(scores) * allowed
# --8<-- [end:weights]


# --8<-- [start:sdpa_weights]
def sdpa_weights(q: torch.Tensor, k: torch.Tensor, allowed: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """PyTorch's fused attention hands back outputs, not weights; with V = I the output *is* the weights."""
    eye = torch.eye(k.size(-2), dtype=q.dtype, device=q.device)  # (T_kv, T_kv): value j = one-hot j
    return torch.nn.functional.scaled_dot_product_attention(q, k, eye, attn_mask=allowed, scale=scale)
# --8<-- [end:sdpa_weights]


# --8<-- [start:pitfall]
def dtype_pitfall(t: int = 4, dtype: torch.dtype = torch.float16) -> dict:
    """What goes wrong when the additive mask is built in float32 but the scores are `dtype`.

    The sum silently becomes float32 (a full T x T upcast), and float32's most negative number
    does not fit in float16 *or* bfloat16 (bfloat16's largest finite number is a little smaller),
    so casting it down gives -inf: the "safe" minimum becomes the NaN-prone -inf.
    """
    scores = torch.zeros(t, t, dtype=dtype)  # (T, T)
    mask32 = to_additive(causal_mask(t), torch.float32)  # (T, T), float32: the usual default
    mask_ok = to_additive(causal_mask(t), dtype)  # built in the scores' own dtype
    fp32_min_cast = torch.tensor(torch.finfo(torch.float32).min).to(dtype).item()
    info = torch.finfo(dtype)
    # Spacing between the two largest finite numbers; half of it is how far below finfo.min a
    # sum may fall before it rounds to -inf.
    top_spacing = 2.0 ** math.floor(math.log2(info.max)) * info.eps
    return {
        "scores_dtype": scores.dtype,
        "sum_with_fp32_mask_dtype": (scores + mask32).dtype,
        "sum_with_own_mask_dtype": (scores + mask_ok).dtype,
        "sum_with_fp16_mask_dtype": (scores.half() + to_additive(causal_mask(t), torch.float16)).dtype,
        "fp32_min_cast": fp32_min_cast,
        "fp32_min_cast_to_fp16": torch.tensor(torch.finfo(torch.float32).min).to(torch.float16).item(),
        "dtype_min": info.min,
        "min_overflow_margin": top_spacing / 2,
        "fp16_min": torch.finfo(torch.float16).min,
    }
# --8<-- [end:pitfall]
