"""What the cost chapter quotes beside the attention-cost widget and never needs per request:
handout 003's 8,000 / 16,000 / 128,000 table and Llama-3-8B's crossovers. The widget's
`facts()` adds them to its values when the book is built (`{{ value(...) }}`), not per request.
"""

from __future__ import annotations

import torch

from backend.reference import attention_cost as ac
from backend.reference import context
from backend.reference.presets import PRESETS
from backend.reference.serving import CARDS

TABLE_LENGTHS = (8_000, 16_000, 128_000)  # handout 003's table, in memory terms


def table_values() -> dict:
    """Handout 003's 8,000 / 16,000 / 128,000 table in bytes: one head's scores in bfloat16."""
    table = {}
    for n in TABLE_LENGTHS:
        text, work = context.growth(n, TABLE_LENGTHS[0])
        table[str(n)] = {"text": text, "work": work,
                         "score_bytes": ac.score_bytes(n, 1, 1, torch.bfloat16),
                         "score_bytes_32": ac.score_bytes(n, 32, 1, torch.bfloat16),
                         "flops_32": ac.score_flops(n, 128, 32, 1)}
        table[str(n)]["score_gb"] = table[str(n)]["score_bytes"] / 1e9
        table[str(n)]["score_gb_32"] = table[str(n)]["score_bytes_32"] / 1e9
        table[str(n)]["tflop_32"] = table[str(n)]["flops_32"] / 1e12
    # the 128,000-token layer of scores against what an H200 reports (serving.CARDS)
    h200 = CARDS["141"].memory_bytes
    return {"table": table, "h200_gb": h200 / 1e9,
            "h200s_for_128k_layer": table["128000"]["score_bytes_32"] / h200}


def llama_crossover() -> dict:
    """Llama-3-8B's own crossover: 32 heads of 128 with K and V shared by groups of four heads
    (8 KV heads), so the projections cost 2T(2d^2 + 2 d d/4) = 5 T d^2 and T = 1.25 d."""
    cfg = PRESETS["llama-3-8b"]
    d_head = cfg.d_model // cfg.n_heads
    return {"llama_width": cfg.d_model, "llama_heads": cfg.n_heads, "llama_d_head": d_head,
            "llama_kv_heads": cfg.n_kv_heads,
            "llama_crossover_full_kv": ac.crossover_context(d_head, cfg.n_heads),
            "llama_crossover_T": ac.crossover_context(d_head, cfg.n_heads, cfg.n_kv_heads),
            # against the whole layer's matmuls (projections and the SwiGLU MLP), with every
            # pair scored and with the causal half skipped
            "llama_d_ff": cfg.d_ff,
            "llama_layer_crossover_T": ac.layer_crossover_context(d_head, cfg.n_heads,
                                                                  cfg.n_kv_heads, cfg.d_ff),
            "llama_layer_crossover_causal_T": ac.layer_crossover_context(
                d_head, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff, causal=True)}
