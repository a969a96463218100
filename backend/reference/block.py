"""One pre-norm decoder block: x + attn(norm(x)), then x + mlp(norm(x)).

Pre-norm (Xiong et al., 2020) keeps the residual stream free of any normalization: the
residual adds carry a gradient from the top of the stack to the embedding untouched. Note the names: the
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


def block_parameter_split(d_model: int, d_ff: int, kind: str = "gated", n_heads: int | None = None,
                          n_kv_heads: int | None = None, by_matrix: bool = False) -> dict[str, int]:
    """Parameters of one block by part, counted from the real modules on the meta device.

    kind "gated" is the block above (SwiGLU); "plain" swaps in the two-matrix MLP without biases.
    n_heads defaults to d_model / 64 (the count of a plain multi-head block does not depend on it).
    """
    from .mlp import MLP

    n_heads = n_heads or max(1, d_model // 64)
    config = ModelConfig(vocab_size=1, d_model=d_model, n_layers=1, n_heads=n_heads,
                         n_kv_heads=n_kv_heads, d_ff=d_ff)
    with torch.device("meta"):
        block = DecoderBlock(config)
        if kind == "plain":
            block.mlp = MLP(config, bias=False)
        elif kind != "gated":
            raise ValueError(f"kind must be 'gated' or 'plain', got {kind!r}")

    def count(m: nn.Module) -> int:
        return sum(p.numel() for p in m.parameters())

    split = {"attention": count(block.attn), "mlp": count(block.mlp),
             "norms": count(block.attn_norm) + count(block.mlp_norm)}
    if by_matrix:  # each matrix too, under its module name (q_proj .. o_proj; gate/up/down or fc1, fc2)
        split.update({name: count(m) for name, m in (*block.attn.named_children(),
                                                      *block.mlp.named_children())
                      if isinstance(m, nn.Linear)})
    return split
