"""Scaled dot-product attention, written out: softmax(Q K^T / sqrt(d_k) + M) V.

Vaswani et al. (2017), eq. 1. The fused ``F.scaled_dot_product_attention`` computes the same
thing without ever materializing the (T_q, T_kv) weights; this version keeps them, because
the book draws them.
"""

from __future__ import annotations

import torch


# --8<-- [start:sdpa]
def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
    dropout_p: float = 0.0,
    training: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention for any leading batch/head axes; returns (output, weights).

    ``mask`` is either boolean (True = may attend, as in ``F.scaled_dot_product_attention``)
    or additive (0 where allowed, a large negative number where not), broadcastable to the
    scores. The softmax runs in at least float32, the same stability upcast Hugging Face's Llama
    uses (float64 input stays float64).
    """
    # q: (..., T_q, d_k)   k: (..., T_kv, d_k)   v: (..., T_kv, d_v)
    if scale is None:
        scale = q.size(-1) ** -0.5
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale  # (..., T_q, T_kv)
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + mask
    upcast = torch.promote_types(scores.dtype, torch.float32)  # float32 at least, never down
    weights = torch.softmax(scores, dim=-1, dtype=upcast).to(q.dtype)  # rows sum to 1
    weights = torch.nn.functional.dropout(weights, p=dropout_p, training=training)
    output = torch.matmul(weights, v)  # (..., T_q, d_v)
    return output, weights
# --8<-- [end:sdpa]
