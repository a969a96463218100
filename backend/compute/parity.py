"""Widget: the book's model against Hugging Face's Llama, same weights, same tokens, measured live.

`compute` builds the book's `DecoderLM` with seeded random weights, loads the very same tensors
into the installed `transformers.LlamaForCausalLM` (eager attention) and runs
`backend.reference.llama_compare.compare`: the largest absolute differences in logits,
attention weights, logits decoded one token at a time through the book's KV cache (against
Llama's full forward), logits of a left-padded batch, and the loss. The `fault` control breaks
one piece of the book's model, from outside the reference code (`parity_faults.break_model`
swaps that piece for a broken subclass), and the figure shows where the logits part from
Llama's: |Δ logit| at each position, and each layer's hidden state. `dtype` runs both in
bfloat16, where the RMSNorm's float32 upcast starts to matter. The work is bounded by the slider
ranges and a parameter budget (a spec `Limit`: each slider that grows the model stops at the
budget, on the page and in the API), so one request answers in about a second on a CPU.
"""

from __future__ import annotations

import math
import threading

import torch

from backend.compute.parity_faults import FAULTS, break_model
from backend.compute.shapes import check_heads
from backend.compute.spec import (
    Depends,
    Limit,
    Output,
    Param,
    ParamError,
    WidgetSpec,
    seed_param,
)
from backend.compute.style import COLORS, SERIES
from backend.hf_import import LOCK as HF_IMPORT_LOCK
from backend.reference.config import ModelConfig
from backend.reference.counting import count_parameters
from backend.reference.llama_compare import (
    ATTENTION_TOLERANCE,
    DECODE_STEPS,
    GAIN_STD,
    LOSS_TOLERANCE,
    build_pair,
    compare,
)

MAX_PARAMS = 1_000_000  # two float32 copies and a 64-token batch: about a second on one CPU core
# The trained model's logits reach tens (about 40 on random tokens): the cache's order of the
# same float32 arithmetic, through 30 layers, moves them by 6e-5 at 16 tokens and 1.1e-4 at 64
# (measured). 1e-3 is 2.5e-5 of the largest logit: rounding, where every break moves whole logits.
TRAINED_LOGIT_TOLERANCE = 1e-3
MODELS = ("random", "smollm2")
# the size controls describe a random model; the trained one has its own
FOR_RANDOM = Depends("model", {"smollm2": {
    "disabled": True, "note": "SmolLM2-135M has its own: 30 layers, width 576, 9 query heads "
                              "sharing 3 key/value heads, d_ff 1,536, 49,152 tokens, θ 100,000"}})
FLOOR = 1e-10  # where an exact 0 is drawn on the log axis
WIDTHS = range(16, 257, 16)  # the width slider's values
HEADS = range(1, 17)  # the query-head slider's values
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
IDENTICAL = "0 (identical)"  # a difference of exactly 0, said as such (never "0.0e+00")


def _diff(x: float) -> str:
    """A difference as the values list writes it: two significant figures, or identical."""
    return IDENTICAL if x == 0 else f"{x:.1e}"


BROKEN = {  # fault -> what the book's model does instead (the figure's and summary's words)
    "none": "nothing broken",
    "rope_layout": "RoPE on adjacent pairs",
    "norm_upcast": "RMSNorm without the float32 upcast",
    "repeat_kv": "K/V heads tiled (repeat, not repeat_interleave)",
    "causal_mask": "no causal mask",
}


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
    try_next=(
        "Pick a `fault`, such as rope_layout, and watch the book's model and Llama part ways: the "
        "logits no longer agree within the tolerance."
    ),
    title="The book's model against Llama",
    description="The book's DecoderLM and transformers' LlamaForCausalLM with the same weights "
                "(random, or SmolLM2-135M's), run on the same tokens: the largest differences, "
                "measured.",
    params=(
        Param("model", "weights", "choice", default="random", options=MODELS,
              option_labels=("random, of the sizes below", "SmolLM2-135M, trained"),
              help="random: both models get the same seeded random weights, at the sizes the "
                   "controls below set. SmolLM2-135M: both hold the trained model's weights "
                   "(float32), so a broken piece shows on a model trained on real text."),
        Param("n_layers", "layers L", "int", default=2, min=1, max=4, step=1, limits=(BUDGET,), depends=(FOR_RANDOM,)),
        Param("d_model", "width d_model", "int", default=64, min=16, max=256, step=16,
              limits=(BUDGET,), depends=(FOR_RANDOM,)),
        Param("n_heads", "query heads h", "int", default=8, min=1, max=16, step=1,
              help="Must divide d_model, and d_model / h must be even (RoPE rotates pairs).",
              depends=(Depends("d_model", {d: {"allowed": head_counts(d),
                                               "note": "h must divide it and d_model / h must be even"}
                                           for d in WIDTHS}), FOR_RANDOM)),
        Param("n_kv", "key/value heads", "int", default=2, min=1, max=16, step=1,
              help="Must divide the number of query heads (1 = multi-query attention).",
              depends=(Depends("n_heads", {h: {"allowed": kv_counts(h), "note": "it must divide them"}
                                           for h in HEADS}), FOR_RANDOM), limits=(BUDGET,)),
        Param("d_ff", "MLP width d_ff", "int", default=172, min=8, max=1024, step=4,
              limits=(BUDGET,), depends=(FOR_RANDOM,)),
        Param("vocab", "vocabulary |Σ|", "int", default=512, min=16, max=4096, step=16,
              limits=(BUDGET,), depends=(FOR_RANDOM,)),
        Param("rope_theta", "RoPE base θ", "float", default=10000.0, min=100.0, max=1_000_000.0,
              step=100.0, depends=(FOR_RANDOM,)),
        Param("tied", "tie the LM head to the embedding", "bool", default=False,
              depends=(FOR_RANDOM,)),
        Param("seq_len", "tokens T", "int", default=16, min=2, max=64, step=1),
        seed_param(999, label="seed (weights and tokens)",
                   help="Which random weights and tokens; with SmolLM2-135M, the tokens only."),
        Param("fault", "break one piece", "choice", default="none", options=FAULTS,
              help="none; rope_layout: RoPE rotates adjacent pairs instead of rotate-half; "
                   "norm_upcast: RMSNorm computed in the input dtype; repeat_kv: K/V heads tiled "
                   "in the wrong order; causal_mask: every position sees the future."),
        Param("dtype", "number format", "choice", default="float32", options=tuple(DTYPES),
              help="Both models' weights and activations.",
              depends=(Depends("model", {"smollm2": {
                  "allowed": ("float32",), "note": "the trained model is compared in float32"}}),)),
    ),
    outputs=(
        Output("max_abs_logit_diff", "largest |Δ logit|", ".1e", zero=IDENTICAL),
        Output("max_abs_attention_diff", "largest |Δ attention weight|", ".1e", zero=IDENTICAL),
        Output("cached_vs_uncached_diff", "largest |Δ logit|, book cached vs Llama full", ".1e", zero=IDENTICAL),
        Output("max_abs_padded_logit_diff", "largest |Δ logit|, left-padded batch", ".1e", zero=IDENTICAL),
        Output("abs_loss_diff", "|Δ loss|", ".1e", zero=IDENTICAL),
    ),
    bake=({"n_kv": 8}, {"n_kv": 1}, {"tied": True}, {"seq_len": 64},
          *({"fault": f} for f in FAULTS[1:]), {"dtype": "bfloat16"},
          {"dtype": "bfloat16", "fault": "norm_upcast"},
          *({"model": "smollm2", "fault": f} for f in FAULTS)),
    cost_hint="heavy",
    warm=lambda point: point["model"] == "random",
)

LABELS = {p.name: p.label for p in SPEC.params}
_TRAINED_LOCK = threading.Lock()


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
            f"'{LABELS['vocab']}', '{LABELS['d_model']}', '{LABELS['d_ff']}', '{LABELS['n_kv']}' "
            f"or '{LABELS['n_layers']}'",
            "vocab")
    return cfg


def compute(params: dict) -> dict:
    fault, dtype = params["fault"], params["dtype"]
    trained = params["model"] == "smollm2"
    with HF_IMPORT_LOCK:  # transformers resolves names lazily; not safe from two threads
        import transformers
        # its warnings are for a developer, not the server's log (set here, not in os.environ:
        # the oracle only builds models from a config, so nothing is ever downloaded)
        transformers.logging.set_verbosity_error()
    if trained:
        from backend.smollm2 import load

        cfg = load.model()[0].config
        with _TRAINED_LOCK:  # the Llama side is built once and shared: one comparison at a time
            r = compare(cfg, seed=params["seed"], seq_len=params["seq_len"],
                        pair=(break_model(load.own_module(), fault), load.llama()),
                        tolerance=TRAINED_LOGIT_TOLERANCE)
    else:
        cfg = config_of(params)
        ours, theirs = build_pair(cfg, params["seed"], DTYPES[dtype])
        r = compare(cfg, seed=params["seed"], seq_len=params["seq_len"], dtype=DTYPES[dtype],
                    pair=(break_model(ours, fault), theirs))

    per_pos, per_layer, changed = r.position_logit_diff, r.layer_hidden_diff, r.position_argmax_changed
    over = [t for t, g in enumerate(per_pos) if g > r.tolerance]
    values = {
        "max_abs_logit_diff": r.max_abs_logit_diff,
        "max_abs_attention_diff": r.max_abs_attention_diff,
        "cached_vs_uncached_diff": r.max_abs_cached_logit_diff,
        "max_abs_padded_logit_diff": r.max_abs_padded_logit_diff,
        "abs_loss_diff": r.abs_loss_diff,
        "loss": r.loss, "hf_loss": r.hf_loss,
        "n_params": r.n_params, "hf_n_params": r.hf_n_params,
        "logit_tolerance": r.tolerance, "attention_tolerance": ATTENTION_TOLERANCE,
        "model": params["model"],
        "loss_tolerance": LOSS_TOLERANCE, "max_params": MAX_PARAMS,
        "gain_std": GAIN_STD,  # the random model's RMSNorm gains: 1 + N(0, gain_std)
        "ok": r.ok, "transformers_version": transformers.__version__,
        "uniform_loss": math.log(cfg.vocab_size),
        "fault": fault, "dtype": dtype, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
        "n_kv": cfg.n_kv_heads, "seq_len": params["seq_len"],
        "position_logit_diff": per_pos, "layer_hidden_diff": per_layer,
        "position_argmax_changed": changed,
        "first_logit_diff": per_pos[0], "last_logit_diff": per_pos[-1],
        "n_positions_over_tolerance": len(over), "n_positions": len(per_pos),
        "n_positions_argmax_changed": sum(changed),
        "first_layer_hidden_diff": per_layer[0], "last_layer_hidden_diff": per_layer[-1],
        "head_dim": cfg.d_model // cfg.n_heads,
        # the cached check feeds all but the last DECODE_STEPS positions in one forward, then one at a time
        "decode_steps": DECODE_STEPS, "longest_decoded_one_at_a_time": DECODE_STEPS + 1,
    }
    return {"values": values, "figure": _figure(params, r, values, transformers.__version__),
            "summary": _summary(params, r, values), "table": _table(r)}


def _bars(r) -> list[tuple[str, float, float]]:
    return [("logits", r.max_abs_logit_diff, r.tolerance),
            ("attention weights", r.max_abs_attention_diff, ATTENTION_TOLERANCE),
            ("cached decode", r.max_abs_cached_logit_diff, r.tolerance),
            ("left-padded", r.max_abs_padded_logit_diff, r.tolerance),
            ("loss", r.abs_loss_diff, LOSS_TOLERANCE)]


def _figure(params, r, v, hf_version) -> dict:
    """|Δ logit| against position (left; the top token's changes marked), each layer's hidden-state
    gap (right), on one log axis; exact zeros are drawn at FLOOR and labelled 0."""
    T, L = len(r.position_logit_diff), len(r.layer_hidden_diff)
    pos = list(range(T))
    changed = [t for t in pos if r.position_argmax_changed[t]]
    y = [max(g, FLOOR) for g in r.position_logit_diff]
    text = [_diff(g) for g in r.position_logit_diff]
    top = max([*r.position_logit_diff, *r.layer_hidden_diff, r.tolerance])
    data = [
        {"type": "scatter", "mode": "lines+markers", "x": pos, "y": y, "text": text,
         "name": "|Δ logit| at each position", "line": {"color": SERIES[0], "width": 2},
         "hovertemplate": "position %{x}: %{text}<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": changed, "y": [y[t] for t in changed],
         "name": "top token changes", "marker": {"symbol": "x", "size": 11, "color": COLORS["unscaled"]},
         "hovertemplate": "position %{x}: the most likely next token differs<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [0, T - 1], "y": [r.tolerance] * 2,
         "name": "tolerance", "line": {"color": COLORS["guide"], "dash": "dash"},
         "hovertemplate": "tolerance %{y:.0e}<extra></extra>"},
        {"type": "bar", "x": [f"layer {i}" for i in range(L)],
         "y": [max(g, FLOOR) for g in r.layer_hidden_diff], "xaxis": "x2", "yaxis": "y2",
         "name": "each layer's output, largest |Δ|", "marker": {"color": COLORS["purple"]},
         "text": ["0" if g == 0 else f"{g:.1e}" for g in r.layer_hidden_diff],
         "hovertemplate": "%{x}: %{text}<extra></extra>"},
    ]
    zeros = [t for t in pos if r.position_logit_diff[t] == 0]
    if zeros:  # an exact 0 has no place on a log axis: drawn at FLOOR, written "0" (the bars say "0" too)
        data.append({"type": "scatter", "mode": "markers+text", "x": zeros, "y": [FLOOR] * len(zeros),
                     "text": ["0"] * len(zeros), "textposition": "top center",
                     "marker": {"symbol": "circle-open", "size": 9, "color": SERIES[0]},
                     "name": "exact 0 (drawn at 10⁻¹⁰)",
                     "hovertemplate": "position %{x}: exactly 0<extra></extra>"})
    yrange = [-10.5, max(-3.0, math.log10(top) + 0.5)]
    verdict = "all within tolerance" if r.ok else "outside tolerance"
    layout = {
        "title": {"text": ("SmolLM2-135M, " if params["model"] == "smollm2" else "")
                  + f"{BROKEN[params['fault']]}, {params['dtype']}: {verdict}"},
        "xaxis": {"domain": [0, 0.62], "title": {"text": "position t"}},
        "yaxis": {"type": "log", "range": yrange, "title": {"text": "largest |difference|", "standoff": 8},
                  "exponentformat": "power", "automargin": True},
        "xaxis2": {"domain": [0.72, 1], "anchor": "y2", "type": "category"},
        "yaxis2": {"type": "log", "range": yrange, "anchor": "x2", "exponentformat": "power",
                   "automargin": True},
        "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
        "legend": {"orientation": "h", "y": -0.25},
        "annotations": [{"text": f"vs transformers {hf_version}", "showarrow": False, "x": 1,
                         "y": 1.02, "xref": "paper", "yref": "paper", "xanchor": "right",
                         "font": {"size": 11}}],
    }
    # on a phone the charts stack; the legend sits between them, below the x-axis title (not on it).
    # The runtime sets margin.l to 45 there: the y axes' automargin widens it to fit the 10⁻ⁿ tick
    # labels and the title beside them
    narrow = {"height": 720, "margin": {"b": 60}, "title": {"font": {"size": 12}},
              "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.56, 1], "title": {"text": "largest |Δ|"}},
              "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.26]},
              "legend": {"orientation": "h", "x": 0, "y": 0.43, "yanchor": "top"}}
    return {"data": data, "layout": layout, "narrow": narrow}


def _summary(params, r, v) -> str:
    head = (("With SmolLM2-135M's" if params["model"] == "smollm2" else "With the same")
            + f" {r.n_params:,} weights and {params['seq_len']} tokens in {params['dtype']}"
            + (f", and the book's model broken ({BROKEN[params['fault']]})" if params["fault"] != "none" else "")
            + f", the largest logit difference is {_diff(r.max_abs_logit_diff)}")
    if r.ok:
        return (head + f", the largest attention-weight difference {_diff(r.max_abs_attention_diff)}, and "
                f"decoding through the book's cache differs from Llama's full forward by at most "
                f"{_diff(r.max_abs_cached_logit_diff)}: every one within tolerance."
                + (" " + _why_no_effect(params, v) if params["fault"] != "none" else ""))
    return (head + f": {v['n_positions_over_tolerance']} of {v['n_positions']} positions are outside "
            f"the tolerance (position 0: {_diff(v['first_logit_diff'])}, the last: {_diff(v['last_logit_diff'])}), "
            f"the most likely next token changes at {v['n_positions_argmax_changed']} of {v['n_positions']} "
            f"position{'s' if v['n_positions'] != 1 else ''}, and the hidden "
            f"state differs by {_diff(v['first_layer_hidden_diff'])} after layer 0 and "
            f"{_diff(v['last_layer_hidden_diff'])} after the last layer.")


def _why_no_effect(params, v) -> str:
    """Why a broken piece changes nothing at these settings (the summary's last sentence)."""
    fault = params["fault"]
    if fault == "rope_layout" and v["head_dim"] == 2:
        return ("The break does nothing here: with d_model / h = 2 each head has a single pair of "
                "coordinates, and a single pair is both the adjacent pair and the two halves.")
    if fault == "repeat_kv" and v["n_kv"] in (1, v["n_heads"]):
        return ("The break does nothing here: with "
                + ("one key/value head" if v["n_kv"] == 1 else "as many key/value heads as query heads")
                + ", tiling and repeat_interleave put the heads in the same order.")
    if fault == "norm_upcast" and params["model"] == "smollm2":
        return ("The break does nothing in float32, and the trained model is compared in float32 "
                "only: pick random weights and bfloat16 to see it.")
    if fault == "norm_upcast" and params["dtype"] == "float32":
        return ("The break does nothing in float32: upcasting float32 to float32 changes nothing; "
                "switch the number format to bfloat16 to see it.")
    return "The break does not show at these settings."


def _table(r) -> dict:
    return {
        "caption": "Largest absolute differences, book's model vs LlamaForCausalLM",
        "columns": ["quantity", "largest |difference|", "tolerance"],
        "rows": [[b[0], f"{b[1]:.2e}", f"{b[2]:.0e}"] for b in _bars(r)],
    }
