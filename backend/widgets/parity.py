"""Widget: the book's model against Hugging Face's Llama, same weights, same tokens, measured live.

`compute` builds the book's `DecoderLM` with seeded random weights, loads the very same tensors
into the installed `transformers.LlamaForCausalLM` (eager attention) and runs
`backend.reference.llama_compare.compare`: the largest absolute differences in logits,
attention weights, logits decoded one token at a time through the book's KV cache (against
Llama's full forward), logits of a left-padded batch, and the loss. The work is bounded by the
slider ranges and a parameter budget (a spec `Limit`: each slider that grows the model stops at
the budget, on the page and in the API), so one request answers in about a second on a CPU.
"""

from __future__ import annotations

import math
import os

from backend.reference.config import ModelConfig
from backend.reference.counting import count_parameters
from backend.reference.llama_compare import ATTENTION_TOLERANCE, LOGIT_TOLERANCE, LOSS_TOLERANCE, compare
from backend.widgets.shapes import check_heads
from backend.widgets.spec import Depends, Limit, Output, Param, ParamError, WidgetSpec
from backend.widgets.style import COLORS, SERIES

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

MAX_PARAMS = 1_000_000  # two float32 copies and a 64-token batch: about a second on one CPU core
FLOOR = 1e-10  # where an exact 0 is drawn on the log axis
WIDTHS = range(16, 257, 16)  # the width slider's values
HEADS = range(1, 17)  # the query-head slider's values


def head_counts(d: int) -> tuple[int, ...]:
    """Query-head counts the width d allows: h divides d and d / h is even (RoPE rotates pairs)."""
    return tuple(h for h in HEADS if d % h == 0 and (d // h) % 2 == 0)


def kv_counts(h: int) -> tuple[int, ...]:
    """Key/value-head counts h query heads allow: the divisors of h."""
    return tuple(k for k in HEADS if h % k == 0)


# The parameter count of the book's model (counting.count_parameters, pinned by a test): the
# embedding, an untied head, per layer the q and o projections, k and v (n_kv heads of d / h),
# the MLP's three matrices and two norms, and the final norm. As a spec Limit it caps each
# slider that grows the model, so the page never offers a model over the live check's budget.
BUDGET = Limit(MAX_PARAMS, (
    (1, ("vocab", "d_model")),
    (1, ("vocab", "d_model", ("tied", {True: 0, False: 1}))),
    (2, ("n_layers", "d_model", "d_model")),
    (2, ("n_layers", "d_model", "d_model", "n_kv", ("n_heads", -1))),
    (3, ("n_layers", "d_model", "d_ff")),
    (2, ("n_layers", "d_model")),
    (1, ("d_model",)),
), note=f"the live check allows at most {MAX_PARAMS:,} parameters")

SPEC = WidgetSpec(
    name="parity",
    title="The book's model against Llama",
    description="The book's DecoderLM and transformers' LlamaForCausalLM with the same random "
                "weights, run on the same tokens: the largest differences, measured.",
    params=(
        Param("n_layers", "layers L", "int", default=2, min=1, max=4, step=1, limits=(BUDGET,)),
        Param("d_model", "width d_model", "int", default=64, min=16, max=256, step=16,
              limits=(BUDGET,)),
        Param("n_heads", "query heads h", "int", default=8, min=1, max=16, step=1,
              help="Must divide d_model, and d_model / h must be even (RoPE rotates pairs).",
              depends=(Depends("d_model", {d: {"allowed": head_counts(d),
                                               "note": "h must divide it and d_model / h must be even"}
                                           for d in WIDTHS}),)),
        Param("n_kv", "key/value heads", "int", default=2, min=1, max=16, step=1,
              help="Must divide the number of query heads (1 = multi-query attention).",
              depends=(Depends("n_heads", {h: {"allowed": kv_counts(h), "note": "it must divide them"}
                                           for h in HEADS}),), limits=(BUDGET,)),
        Param("d_ff", "MLP width d_ff", "int", default=172, min=8, max=1024, step=4,
              limits=(BUDGET,)),
        Param("vocab", "vocabulary |Σ|", "int", default=512, min=16, max=4096, step=16,
              limits=(BUDGET,)),
        Param("rope_theta", "RoPE base θ", "float", default=10000.0, min=100.0, max=1_000_000.0,
              step=100.0),
        Param("tied", "tie the LM head to the embedding", "bool", default=False),
        Param("seq_len", "tokens T", "int", default=16, min=2, max=64, step=1),
        Param("seed", "seed (weights and tokens)", "int", default=0, min=0, max=999, step=1),
    ),
    outputs=(
        Output("max_abs_logit_diff", "largest |Δ logit|", ".1e"),
        Output("max_abs_attention_diff", "largest |Δ attention weight|", ".1e"),
        Output("cached_vs_uncached_diff", "largest |Δ logit|, book cached vs Llama full", ".1e"),
        Output("max_abs_padded_logit_diff", "largest |Δ logit|, left-padded batch", ".1e"),
        Output("abs_loss_diff", "|Δ loss|", ".1e"),
    ),
    bake=({"n_kv": 8}, {"n_kv": 1}, {"tied": True}, {"seq_len": 64}),
    cost_hint="heavy",
)

LABELS = {p.name: p.label for p in SPEC.params}


def config_of(params: dict) -> ModelConfig:
    """The ModelConfig the controls describe, or a ParamError naming the control at fault."""
    d, h, kv = params["d_model"], params["n_heads"], params["n_kv"]
    check_heads(d, h, kv, LABELS)
    cfg = ModelConfig(vocab_size=params["vocab"], d_model=d, n_layers=params["n_layers"], n_heads=h,
                      n_kv_heads=kv, d_ff=params["d_ff"], max_seq_len=params["seq_len"],
                      rope_theta=float(params["rope_theta"]), tie_embeddings=params["tied"])
    n = count_parameters(cfg).total
    if n > MAX_PARAMS:
        raise ParamError(
            f"this model has {n:,} parameters; the live check allows at most {MAX_PARAMS:,}: lower "
            f"'{LABELS['vocab']}', '{LABELS['d_model']}', '{LABELS['d_ff']}', '{LABELS['n_kv']}' or '{LABELS['n_layers']}'",
            "vocab")
    return cfg


def compute(params: dict) -> dict:
    cfg = config_of(params)
    r = compare(cfg, seed=params["seed"], seq_len=params["seq_len"])
    import transformers

    values = {
        "max_abs_logit_diff": r.max_abs_logit_diff,
        "max_abs_attention_diff": r.max_abs_attention_diff,
        "cached_vs_uncached_diff": r.max_abs_cached_logit_diff,
        "max_abs_padded_logit_diff": r.max_abs_padded_logit_diff,
        "abs_loss_diff": r.abs_loss_diff,
        "loss": r.loss, "hf_loss": r.hf_loss,
        "n_params": r.n_params, "hf_n_params": r.hf_n_params,
        "logit_tolerance": LOGIT_TOLERANCE, "attention_tolerance": ATTENTION_TOLERANCE,
        "loss_tolerance": LOSS_TOLERANCE, "max_params": MAX_PARAMS,
        "ok": r.ok, "transformers_version": transformers.__version__,
        "uniform_loss": math.log(cfg.vocab_size),
    }
    bars = [("logits", r.max_abs_logit_diff, LOGIT_TOLERANCE),
            ("attention weights", r.max_abs_attention_diff, ATTENTION_TOLERANCE),
            ("cached decode", r.max_abs_cached_logit_diff, LOGIT_TOLERANCE),
            ("left-padded", r.max_abs_padded_logit_diff, LOGIT_TOLERANCE),
            ("loss", r.abs_loss_diff, LOSS_TOLERANCE)]
    names = [b[0].replace(" ", "<br>") for b in bars]  # two short lines: no rotated labels on a phone
    fig = {
        "data": [
            {"type": "bar", "x": names, "y": [max(b[1], FLOOR) for b in bars], "name": "measured",
             "marker": {"color": [SERIES[0] if b[1] <= b[2] else COLORS["unscaled"]
                                  for b in bars]},
             "text": ["0 (identical)" if b[1] == 0 else f"{b[1]:.1e}" for b in bars],
             "textposition": "outside", "cliponaxis": False,
             "hovertemplate": "%{x}: %{text}<extra></extra>"},
            {"type": "scatter", "mode": "markers", "x": names, "y": [b[2] for b in bars],
             "name": "tolerance", "marker": {"symbol": "line-ew-open", "size": 28,
                                              "color": COLORS["guide"], "line": {"width": 2}},
             "hovertemplate": "%{x}: tolerance %{y:.0e}<extra></extra>"},
        ],
        "layout": {
            "title": {"text": f"book vs transformers {transformers.__version__}: "
                              + ("all within tolerance" if r.ok else "outside tolerance")},
            "yaxis": {"type": "log", "range": [-10.5, -3], "title": {"text": "largest |difference|"},
                      "exponentformat": "power"},
            "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
            "xaxis": {"tickangle": 0},
            "legend": {"orientation": "h", "y": -0.25},
        },
        "narrow": {"margin": {"l": 55, "r": 8, "b": 80}, "title": {"font": {"size": 12}},
                   "xaxis": {"tickangle": 0, "tickfont": {"size": 10}},
                   "legend": {"orientation": "h", "y": -0.35}},
    }
    summary = (f"With the same {r.n_params:,} weights and {params['seq_len']} tokens, the largest logit "
               f"difference is {r.max_abs_logit_diff:.1e}, the largest attention-weight difference "
               f"{r.max_abs_attention_diff:.1e}, and decoding through the book's cache differs from "
               f"Llama's full forward by at most {r.max_abs_cached_logit_diff:.1e}: "
               + ("every one within tolerance." if r.ok else "not all within tolerance."))
    table = {
        "caption": "Largest absolute differences, book's model vs LlamaForCausalLM",
        "columns": ["quantity", "largest |difference|", "tolerance"],
        "rows": [[b[0], f"{b[1]:.2e}", f"{b[2]:.0e}"] for b in bars],
    }
    return {"values": values, "figure": fig, "summary": summary, "table": table}
