"""Llama-style causal self-attention: grouped-query attention with RoPE and a KV cache.

GQA (Ainslie et al., 2023): every query head has its own W_Q, but groups of n_rep query heads
share one key/value head. Only n_kv heads are projected and cached; ``repeat_kv`` broadcasts
them back up for the matmul. n_kv = n_heads is ordinary multi-head attention, n_kv = 1 is
multi-query attention (Shazeer, 2019).
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .config import ModelConfig
from .rope import apply_rope


# --8<-- [start:repeat_kv]
def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, n_kv, T, d_head) -> (B, n_kv * n_rep, T, d_head); kv head j serves query heads j*n_rep.. ."""
    if n_rep == 1:
        return x  # plain multi-head attention pays nothing
    B, n_kv, T, d_head = x.shape
    x = x[:, :, None, :, :].expand(B, n_kv, n_rep, T, d_head)  # a stride-0 view, no copy yet
    return x.reshape(B, n_kv * n_rep, T, d_head)  # this reshape does copy
# --8<-- [end:repeat_kv]


class GroupedQueryAttention(nn.Module):
    """Causal self-attention of one decoder layer (named after the idea; HF calls it LlamaAttention)."""

    def __init__(self, config: ModelConfig, layer_idx: int = 0):
        super().__init__()
        self.layer_idx = layer_idx
        self.n_heads = config.n_heads
        self.n_kv_heads = config.n_kv_heads
        self.d_head = config.d_head
        bias = config.attention_bias
        self.q_proj = nn.Linear(config.d_model, config.n_heads * config.d_head, bias=bias)
        self.k_proj = nn.Linear(config.d_model, config.n_kv_heads * config.d_head, bias=bias)
        self.v_proj = nn.Linear(config.d_model, config.n_kv_heads * config.d_head, bias=bias)
        self.o_proj = nn.Linear(config.n_heads * config.d_head, config.d_model, bias=bias)

    # --8<-- [start:gqa_forward]
    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor | None = None,
        cache=None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, _ = x.shape  # x: (B, T, d_model)
        q = self.q_proj(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, n_heads, T, d_head)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)  # (B, n_kv, T, d_head)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)  # (B, n_kv, T, d_head)

        q, k = apply_rope(q, k, cos, sin)  # positions enter here, and only here
        if cache is not None:
            k, v = cache.update(self.layer_idx, k, v)  # (B, n_kv, T_kv, d_head): the whole history

        n_rep = self.n_heads // self.n_kv_heads
        out, weights = scaled_dot_product_attention(
            q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), mask
        )  # out: (B, n_heads, T, d_head)   weights: (B, n_heads, T, T_kv)
        out = out.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head)  # concatenate heads
        return self.o_proj(out), weights  # (B, T, d_model)
    # --8<-- [end:gqa_forward]
