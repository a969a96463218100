"""One pre-norm decoder block: x + attn(norm(x)), then x + mlp(norm(x)).

Pre-norm (Xiong et al., 2020) keeps the residual stream free of any normalization, so the
identity path from the last layer to the first is exactly the identity. Note the names: the
second norm is the MLP's *pre*-norm (Hugging Face calls it post_attention_layernorm).
"""

from __future__ import annotations

import torch
from torch import nn

from .config import ModelConfig
from .grouped_query import GroupedQueryAttention
from .mlp import SwiGLU
from .norms import RMSNorm


class DecoderBlock(nn.Module):
    def __init__(self, config: ModelConfig, layer_idx: int = 0):
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = GroupedQueryAttention(config, layer_idx)
        self.mlp_norm = RMSNorm(config.d_model, config.norm_eps)
        self.mlp = SwiGLU(config)

    # --8<-- [start:block_forward]
    def forward(self, x, cos, sin, mask=None, cache=None) -> tuple[torch.Tensor, torch.Tensor]:
        # x: (B, T, d_model) in and out
        attn_out, weights = self.attn(self.attn_norm(x), cos, sin, mask, cache)
        x = x + attn_out  # positions talk to each other here, and only here
        x = x + self.mlp(self.mlp_norm(x))  # per-position computation
        return x, weights
    # --8<-- [end:block_forward]
