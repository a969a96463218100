"""Multi-head attention, the 2017 way: h heads of width d/h are one reshape, not h modules.

Vaswani et al. (2017), §3.2.2. Used by the encoder-decoder (with biases, any source of keys);
the Llama-style decoder uses grouped_query.py, which adds RoPE, GQA and a KV cache.
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .config import ModelConfig


# --8<-- [start:split_heads]
def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, n_heads * d_head) -> (B, n_heads, T, d_head). The view moves no data."""
    B, T, _ = x.shape
    return x.view(B, T, n_heads, -1).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, n_heads, T, d_head) -> (B, T, n_heads * d_head): the concatenation of heads."""
    B, _, T, _ = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, -1)
# --8<-- [end:split_heads]


class MultiHeadAttention(nn.Module):
    """Self-attention (x_kv is x_q) or cross-attention (x_kv is the encoder output)."""

    def __init__(self, config: ModelConfig, bias: bool = True):
        super().__init__()
        self.n_heads = config.n_heads
        self.dropout = config.dropout
        d = config.d_model
        self.q_proj = nn.Linear(d, d, bias=bias)
        self.k_proj = nn.Linear(d, d, bias=bias)
        self.v_proj = nn.Linear(d, d, bias=bias)
        self.o_proj = nn.Linear(d, d, bias=bias)

    # --8<-- [start:mha_forward]
    def forward(
        self, x_q: torch.Tensor, x_kv: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # x_q: (B, T_q, d_model)   x_kv: (B, T_kv, d_model)
        q = split_heads(self.q_proj(x_q), self.n_heads)  # (B, n_heads, T_q, d_head)
        k = split_heads(self.k_proj(x_kv), self.n_heads)  # (B, n_heads, T_kv, d_head)
        v = split_heads(self.v_proj(x_kv), self.n_heads)  # (B, n_heads, T_kv, d_head)
        out, weights = scaled_dot_product_attention(
            q, k, v, mask, dropout_p=self.dropout, training=self.training
        )  # out: (B, n_heads, T_q, d_head)   weights: (B, n_heads, T_q, T_kv)
        return self.o_proj(merge_heads(out)), weights  # (B, T_q, d_model)
    # --8<-- [end:mha_forward]
