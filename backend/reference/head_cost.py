"""What heads cost: h heads of width d/h against one head of width d, counted from the modules.

Parameters come from the real ``MultiHeadAttention`` built on the meta device (shapes, no
storage); FLOPs from running its forward under ``torch.utils.flop_counter.FlopCounterMode``,
which adds up every matrix multiply PyTorch dispatches (softmax and other elementwise work is
not counted: it is O(h T^2), small beside the matmuls). Nothing here restates a formula.
"""

from __future__ import annotations

import functools

import torch
from torch.utils.flop_counter import FlopCounterMode

from .config import ModelConfig
from .grouped_query import GroupedQueryAttention
from .multi_head import MultiHeadAttention
from .presets import PRESETS

# --8<-- [start:shapes]
# Published widths and head counts. GPT-3 is not Llama-shaped (learned positions, LayerNorm,
# biases); only its attention shape is used here. Brown et al. (2020), Table 2.1.
GPT3_175B = ModelConfig(vocab_size=50257, d_model=12288, n_layers=96, n_heads=96, d_ff=49152,
                        max_seq_len=2048)
HEAD_SHAPES: dict[str, ModelConfig] = {
    "Transformer base (2017)": PRESETS["transformer-base"],  # d = 512, h = 8
    "Llama 2 7B / Llama 3 8B": PRESETS["llama-3-8b"],  # d = 4096, h = 32 in both; n_kv 32 / 8
    "GPT-3 175B": GPT3_175B,  # d = 12288, h = 96
}
# --8<-- [end:shapes]


# --8<-- [start:attention_cost]
@functools.lru_cache(maxsize=32)
def attention_cost(d_model: int, n_heads: int, seq_len: int) -> dict:
    """Parameters and matmul FLOPs of one self-attention layer over seq_len tokens (batch 1)."""
    config = ModelConfig(vocab_size=1, d_model=d_model, n_layers=1, n_heads=n_heads, d_ff=1)
    with torch.device("meta"):  # shapes only: a GPT-3-sized layer costs no memory
        layer = MultiHeadAttention(config, bias=False)
        x = torch.empty(1, seq_len, d_model)  # (B, T, d)
    with FlopCounterMode(display=False) as counter:
        _, weights = layer(x, x)  # weights: (B, h, T, T), one score matrix per head
    by_op = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    return {
        "params": sum(p.numel() for p in layer.parameters()),
        "flops": counter.get_total_flops(),
        "flops_projections": by_op.get("aten.mm", 0),  # W_Q, W_K, W_V, W_O: 4 of (T x d) @ (d x d)
        "flops_scores_and_mix": by_op.get("aten.bmm", 0),  # Q K^T and weights @ V, all heads
        "score_elements": weights.numel(),  # what the softmax runs over: h T^2, not T^2
    }
# --8<-- [end:attention_cost]


@functools.lru_cache(maxsize=4)
def head_table(seq_len: int = 2048) -> tuple[dict, ...]:
    """For each published shape: d, h, d_head = d / h, and the cost of h heads vs one head."""
    rows = []
    for name, cfg in HEAD_SHAPES.items():
        many = attention_cost(cfg.d_model, cfg.n_heads, seq_len)
        one = attention_cost(cfg.d_model, 1, seq_len)
        rows.append({"model": name, "d_model": cfg.d_model, "n_heads": cfg.n_heads,
                     "d_head": cfg.d_head, "width": cfg.n_heads * cfg.d_head,
                     "n_kv_heads": cfg.n_kv_heads, "n_rep": cfg.n_rep,
                     "params_heads": many["params"], "params_one_head": one["params"],
                     "flops_heads": many["flops"], "flops_one_head": one["flops"],
                     "scores_heads": many["score_elements"],
                     "scores_one_head": one["score_elements"], "flops_projections": many["flops_projections"],
                     "params_shared_kv": shared_kv_params(cfg)})
    return tuple(rows)


def shared_kv_params(config: ModelConfig) -> int:
    """Parameters of the real (Llama-style) attention layer with the config's n_kv heads."""
    with torch.device("meta"):
        return sum(p.numel() for p in GroupedQueryAttention(config).parameters())


def init_stds(d_model: int, n_heads: int) -> dict:
    """Standard deviations for W_Q: the handout's sqrt(2/(d_model + d_k)), He's sqrt(2/fan-in)
    and Glorot's sqrt(2/(fan-in + fan-out)) for the whole d_model x d_model matrix."""
    d_k = d_model // n_heads
    return {"d_model": d_model, "d_k": d_k, "handout": (2 / (d_model + d_k)) ** 0.5,
            "he": (2 / d_model) ** 0.5, "glorot_whole": (2 / (2 * d_model)) ** 0.5,
            "glorot_per_head": (2 / (d_model + d_k)) ** 0.5}
