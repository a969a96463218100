"""Sharing keys and values: turn a multi-head layer into a grouped-query one, and measure it.

Ainslie et al. (2023), "GQA", §2.1: a multi-head checkpoint becomes a grouped-query one by
mean-pooling the key and value projections of the heads in each group (then a short
"uptraining"; mean-pooling beat keeping one head of the group or starting fresh). Query and
output projections stay as they were. With n_kv = n_heads nothing is pooled.
"""

from __future__ import annotations

import zlib

import torch
from torch import nn

from backend.reference.rng import isolated_rng

from .config import ModelConfig
from .grouped_query import GroupedQueryAttention
from .kv_cache import KVCache
from .masks import causal_mask
from .rope import rope_cos_sin


def seeded_attention(config: ModelConfig, seed: int = 0) -> GroupedQueryAttention:
    """A GQA layer with N(0, 1/d_in) weights: unit-variance inputs give unit-variance q, k, v."""
    g = torch.Generator().manual_seed(seed)
    with isolated_rng():  # every weight is drawn from g below
        layer = GroupedQueryAttention(config)
    with torch.no_grad():
        for proj in (layer.q_proj, layer.k_proj, layer.v_proj, layer.o_proj):
            proj.weight.copy_(torch.randn(proj.weight.shape, generator=g) / proj.in_features ** 0.5)
    return layer


# --8<-- [start:mean_pool]
@torch.no_grad()
def mean_pool_kv(mha: GroupedQueryAttention, config: ModelConfig, n_kv: int) -> GroupedQueryAttention:
    """The GQA layer with n_kv key/value heads made from a multi-head layer (Ainslie et al.)."""
    gqa_config = config.replace(n_kv_heads=n_kv)
    with isolated_rng():  # every weight is copied in below
        gqa = GroupedQueryAttention(gqa_config)
    n_rep, d_head = gqa_config.n_rep, config.d_head
    gqa.q_proj.weight.copy_(mha.q_proj.weight)  # every query head keeps its own W_Q
    gqa.o_proj.weight.copy_(mha.o_proj.weight)
    for src, dst in ((mha.k_proj, gqa.k_proj), (mha.v_proj, gqa.v_proj)):
        w = src.weight.view(n_kv, n_rep, d_head, config.d_model)  # heads j*n_rep.. form group j
        dst.weight.copy_(w.mean(dim=1).reshape(n_kv * d_head, config.d_model))
    return gqa
# --8<-- [end:mean_pool]


@torch.no_grad()
def run_layer(layer: nn.Module, x: torch.Tensor, config: ModelConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal self-attention over x: (B, T, d) -> output (B, T, d), weights (B, h, T, T)."""
    B, T, _ = x.shape
    cos, sin = rope_cos_sin(torch.arange(T).expand(B, T), config.d_head, config.rope_theta)
    return layer(x, cos, sin, causal_mask(T))


# --8<-- [start:relative_error]
def relative_error(y: torch.Tensor, y_ref: torch.Tensor) -> float:
    """||y - y_ref||_F / ||y_ref||_F over every position and feature."""
    y, y_ref = y.detach(), y_ref.detach()
    return float(torch.linalg.norm(y - y_ref) / torch.linalg.norm(y_ref))
# --8<-- [end:relative_error]


@torch.no_grad()
def kv_bytes_per_token(layer: GroupedQueryAttention, x: torch.Tensor, config: ModelConfig,
                       dtype: torch.dtype = torch.bfloat16) -> float:
    """Bytes one layer's KV cache holds per token, measured: run the layer in `dtype` with a cache."""
    B, T, _ = x.shape
    with isolated_rng():  # the weights are loaded below
        cast = GroupedQueryAttention(config).to(dtype)
    cast.load_state_dict(layer.state_dict())  # same weights, stored in `dtype`
    cos, sin = rope_cos_sin(torch.arange(T).expand(B, T), config.d_head, config.rope_theta, dtype)
    cache = KVCache(n_layers=1)
    cast(x.to(dtype), cos, sin, causal_mask(T), cache=cache)
    return cache.nbytes() / (B * T)


def word_vectors(words: list[str], d_model: int) -> torch.Tensor:
    """(1, T, d) unit-variance vectors, one fixed draw per distinct word (same word, same vector)."""
    rows = [torch.randn(d_model, generator=torch.Generator().manual_seed(zlib.crc32(w.encode())))
            for w in words]
    return torch.stack(rows)[None]
