"""Widget: the MLP's parameters, plain (two matrices) against gated SwiGLU (three).

Counts come from the book's own modules built on the meta device (no memory is allocated, so
the largest sizes cost nothing). Also carries the block chapter's fixed measurements: the MLP's
share of two real Llama models, and the gradient reaching layer 0 of a deep stack wired with and
without the residual (computed once per process).
"""

from __future__ import annotations

from functools import lru_cache

from backend.compute.spec import Depends, Output, Param, WidgetSpec
from backend.compute.style import COLORS, base_layout
from backend.reference import counting, presets
from backend.reference.block import block_parameter_split
from backend.reference.mlp import gated_width_for_equal_params, swiglu_hidden_size, worked_example
from backend.reference.residual import WIRINGS, activation_norms, gradient_by_layer

MLP_MATRICES = ("gate_proj", "up_proj", "down_proj", "fc1", "fc2")
SHORT = {"q_proj": "Q", "k_proj": "K", "v_proj": "V", "o_proj": "O", "gate_proj": "gate",
         "up_proj": "up", "down_proj": "down", "fc1": "W₁", "fc2": "W₂"}
HEAD_DIM = 128  # Llama's head width: n_heads = d / 128 (Llama-2-7B and Llama-3-8B: 32 heads)
D_MIN, D_MAX = 128, 16384


def _divisors(n: int) -> tuple[int, ...]:
    return tuple(k for k in range(1, n + 1) if n % k == 0)


SPEC = WidgetSpec(
    name="mlp",
    try_next=(
        "Switch `kind` to plain: a gated MLP has three matrices where the plain one has two, so "
        "at the same `d_ff` it holds 1.5 times the parameters."
    ),
    title="The MLP: two matrices or three",
    description="Parameters of a plain and a gated (SwiGLU) MLP, and the MLP's share of a block.",
    params=(
        Param("d_model", "model width d", "int", default=4096, min=D_MIN, max=D_MAX, step=HEAD_DIM,
              help="Width of the residual stream (a multiple of 128: heads of 128, as in Llama)."),
        Param("d_ff", "MLP width d_ff", "int", default=14336, min=64, max=65536, step=64,
              help="Inner width of the MLP (Llama's intermediate_size)."),
        Param("kind", "MLP kind", "choice", default="gated", options=("gated", "plain"),
              help="gated: SwiGLU, three matrices; plain: two matrices and a ReLU, no biases."),
        Param("n_kv_heads", "key/value heads", "int", default=8, min=1, max=D_MAX // HEAD_DIM,
              step=1, help="Grouped-query attention shares each key/value head among several "
                           "query heads (Llama-3-8B: 8 for 32 query heads); as many as the query "
                           "heads (d / 128) is plain multi-head attention (Llama-2-7B).",
              depends=(Depends("d_model", {
                  d: {"allowed": _divisors(d // HEAD_DIM),
                      "note": (f"d = {d} has {d // HEAD_DIM} query "
                               f"head{'s' if d // HEAD_DIM > 1 else ''} of 128, and the "
                               "key/value heads must divide "
                               f"{'them' if d // HEAD_DIM > 1 else 'it'}")}
                  for d in range(D_MIN, D_MAX + 1, HEAD_DIM)}),)),
    ),
    outputs=(
        Output("params_gated", "gated MLP parameters (3·d·d_ff)", ",d"),
        Output("params_plain", "plain MLP parameters (2·d·d_ff)", ",d"),
        Output("d_ff_equal_params", "gated width with the plain MLP's parameters", ",.1f"),
        Output("ratio_to_d", "d_ff ÷ d", ".3f"),
        Output("mlp_share", "MLP's share of the block (this kind)", ".1%"),
    ),
    bake=({},) + tuple({"d_ff": w} for w in (2048, 4096, 8192, 10944, 11008, 16384, 32768))
    + ({"kind": "plain"}, {"kind": "plain", "d_ff": 16384}, {"n_kv_heads": 32},
       {"n_kv_heads": 32, "d_ff": 11008}, {"n_kv_heads": 1},
       {"d_model": 512, "d_ff": 2048, "kind": "plain", "n_kv_heads": 4}),
)

# The two parameters of Meta's width rule (swiglu_hidden_size) in each model's published
# params.json, as (multiple_of, ffn_dim_multiplier); None: no multiplier. huggingface.co/meta-llama:
# Llama-2-{7b,13b,70b}/params.json, Meta-Llama-3-{8B,70B}/original/params.json,
# Llama-3.2-1B/original/params.json. A test holds each to its preset's d_ff.
META_WIDTH_RULE = {
    "llama-2-7b": (256, None),
    "llama-2-13b": (256, None),
    "llama-2-70b": (4096, 1.3),
    "llama-3-8b": (1024, 1.3),
    "llama-3-70b": (4096, 1.3),
    "llama-3.2-1b": (256, 1.5),
}

RESIDUAL_DEPTH = 32  # layers in the gradient experiment
RESIDUAL_WIDTH = (64, 176)  # (d_model, d_ff) of its layers: small, so it runs in about a second
CURVE_POINTS = 41


@lru_cache(maxsize=1)
def block_facts() -> dict:
    """Fixed measurements the chapter quotes (the same for every slider position)."""
    v = {}
    for name in ("llama-2-7b", "llama-3-8b"):
        c = presets.get_preset(name)
        n = counting.count_parameters(c)
        key = name.replace("-", "_").replace("llama_", "l")  # l2_7b, l3_8b
        v[f"{key}_d_ff"] = c.d_ff
        v[f"{key}_ratio"] = c.d_ff / c.d_model
        v[f"{key}_mlp_share_block"] = n.mlp / c.n_layers / n.per_layer
        v[f"{key}_mlp_share_model"] = n.mlp / n.total
        v[f"{key}_mlp_per_layer"] = n.mlp // c.n_layers
    v["two_thirds_4d_4096"] = 2 * 4 * 4096 / 3
    v["meta_rule_l2_7b"] = swiglu_hidden_size(4096)
    v["meta_rule_l3_8b"] = swiglu_hidden_size(4096, multiple_of=1024, ffn_dim_multiplier=1.3)
    v["meta_rule_l3_8b_before_rounding"] = int(1.3 * int(2 * 4 * 4096 / 3))
    v["meta_rule_l3_8b_no_multiplier"] = swiglu_hidden_size(4096, multiple_of=1024)
    # Llama-2-70B: the same multiplier as Llama-3-8B, rounded to 4,096
    l2_70b = presets.get_preset("llama-2-70b")
    multiple, multiplier = META_WIDTH_RULE["llama-2-70b"]
    v["l2_70b_d_model"], v["l2_70b_d_ff"] = l2_70b.d_model, l2_70b.d_ff
    v["l2_70b_ratio"] = l2_70b.d_ff / l2_70b.d_model
    v["l2_70b_multiple_of"], v["l2_70b_multiplier"] = multiple, multiplier
    v["two_thirds_4d_l2_70b"] = 2 * 4 * l2_70b.d_model / 3
    v["meta_rule_l2_70b"] = swiglu_hidden_size(l2_70b.d_model, multiple, multiplier)
    v["meta_rule_l2_70b_before_rounding"] = int(multiplier * int(2 * 4 * l2_70b.d_model / 3))
    v["meta_rule_l2_70b_no_multiplier"] = swiglu_hidden_size(l2_70b.d_model, multiple)
    base = block_parameter_split(512, 2048, "plain")  # the 2017 base model's MLP, biases aside
    v["base_mlp_share_block"] = base["mlp"] / sum(base.values())
    v["base_mlp_share_matrices"] = base["mlp"] / (base["mlp"] + base["attention"])  # no norms
    v["residual_depth"] = RESIDUAL_DEPTH
    d, f = RESIDUAL_WIDTH
    for wiring in WIRINGS:
        grads = gradient_by_layer(RESIDUAL_DEPTH, d, f, wiring)
        v[f"grad_layer0_{wiring}"] = grads[0]
        v[f"grad_layer{RESIDUAL_DEPTH // 2}_{wiring}"] = grads[RESIDUAL_DEPTH // 2]
    acts = activation_norms(RESIDUAL_DEPTH, d, f, "plain")  # the plain stack's forward pass
    v["act_norm_plain_layer0"] = acts[0]
    v["act_norm_plain_layer4"] = acts[4]
    # the norm of a row of tiny entries underflows (its squares fall below float32's smallest
    # subnormal) a layer before the entries themselves are all exactly 0
    v["act_first_zero_layer_plain"] = next(i for i, a in enumerate(acts) if a == 0.0)
    v["act_all_zero_layer_plain"] = _first_all_zero_layer(RESIDUAL_DEPTH, d, f)
    return v


def _first_all_zero_layer(depth: int, d: int, d_ff: int, seed: int = 0) -> int:
    """The first layer whose input is exactly 0 in every entry (the plain stack, seed 0; the
    same stack and input activation_norms builds)."""
    import torch

    from backend.reference.residual import Stack
    from backend.reference.rng import isolated_rng

    gen = torch.Generator().manual_seed(seed)
    with isolated_rng(seed):
        stack = Stack(depth, d, d_ff, "plain")
    x = torch.randn(64, d, generator=gen)
    with torch.no_grad():
        states = stack(x)
    return next(i for i, s in enumerate(states) if bool((s == 0).all()))


def compute(params: dict) -> dict:
    d, d_ff, kind, n_kv = params["d_model"], params["d_ff"], params["kind"], params["n_kv_heads"]
    heads = {"n_heads": d // HEAD_DIM, "n_kv_heads": n_kv}
    gated = block_parameter_split(d, d_ff, "gated", by_matrix=True, **heads)
    plain = block_parameter_split(d, d_ff, "plain", by_matrix=True, **heads)
    split = gated if kind == "gated" else plain
    totals = {k: split[k] for k in ("attention", "mlp", "norms")}
    values = {
        "params_gated": gated["mlp"],
        "params_plain": plain["mlp"],
        "d_ff_equal_params": gated_width_for_equal_params(d_ff),
        "ratio_to_d": d_ff / d,
        "mlp_share": split["mlp"] / sum(totals.values()),
        "mlp_share_gated": gated["mlp"] / (gated["attention"] + gated["mlp"] + gated["norms"]),
        "mlp_share_plain": plain["mlp"] / (plain["attention"] + plain["mlp"] + plain["norms"]),
        # one block by matrix (this kind): q/k/v/o_proj, then gate/up/down_proj or fc1/fc2
        **{f"block_{k}": n for k, n in split.items() if k not in totals},
        "largest_mlp_matrix": max(n for k, n in split.items() if k in MLP_MATRICES),
        "attention_params": split["attention"],
        "n_heads": d // HEAD_DIM,
        "n_kv_heads": n_kv,
        "norm_params": split["norms"],
    }
    return {"values": values, "figure": _figure(d, d_ff, kind, values, split),
            "summary": _summary(d, d_ff, kind, values), "table": _table(d, d_ff, values, split)}


def _figure(d, d_ff, kind, v, split) -> dict:
    top = max(2 * d_ff, 6 * d)
    xs = [round(top * i / (CURVE_POINTS - 1)) for i in range(CURVE_POINTS)]
    gated_c, plain_c, guide = COLORS["scaled"], COLORS["unscaled"], COLORS["guide"]
    mine = v["params_gated"] if kind == "gated" else v["params_plain"]
    data = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": [3 * d * x for x in xs],
         "name": "gated: 3·d·d_ff", "line": {"color": gated_c, "width": 2}},
        {"type": "scatter", "mode": "lines", "x": xs, "y": [2 * d * x for x in xs],
         "name": "plain: 2·d·d_ff", "line": {"color": plain_c, "width": 2}},
        {"type": "scatter", "mode": "markers", "x": [d_ff], "y": [mine], "name": f"your d_ff ({kind})",
         "marker": {"size": 13, "color": COLORS["accent"], "symbol": "circle-open", "line": {"width": 3}},
         "hovertemplate": "d_ff=%{x:,}<br>%{y:,} parameters<extra></extra>"},
        # from the plain line at your d_ff across to the gated line, at the same parameter count
        {"type": "scatter", "mode": "lines+markers", "x": [d_ff, v["d_ff_equal_params"]],
         "y": [v["params_plain"], v["params_plain"]], "name": "same count, gated width",
         "line": {"color": guide, "dash": "dash"}, "marker": {"size": 7, "color": guide},
         "hovertemplate": "d_ff=%{x:,.0f}: %{y:,}<extra></extra>"},
        *_block_segments(split, kind),
    ]
    layout = base_layout(
        420,
        xaxis={"domain": [0, 0.6], "title": {"text": "MLP width d_ff"}, "rangemode": "tozero"},
        yaxis={"title": {"text": "MLP parameters"}, "rangemode": "tozero", "automargin": True},
        xaxis2={"domain": [0.72, 1], "anchor": "y2", "type": "category"},
        barmode="stack",
        yaxis2={"anchor": "x2", "title": {"text": "parameters in one block"}, "rangemode": "tozero",
                "automargin": True},
        annotations=[
            {"text": f"d = {d:,}", "showarrow": False, "x": 0.3, "y": 1.08, "xref": "paper",
             "yref": "paper", "xanchor": "center"},
            {"text": f"MLP = {v['mlp_share']:.1%} of the block", "showarrow": False, "x": 0.86,
             "y": 1.08, "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
        # a segment label that does not fit its bar unrotated is hidden (its hover stays)
        uniformtext={"minsize": 9, "mode": "hide"},
    )
    # Phone: the charts stack; the legend names the top chart's lines, so it sits under that chart,
    # and the block chart's "MLP = …" label sits just above that chart, below the legend
    narrow = {"height": 780, "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.62, 1]},
              "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.27], "title": {"text": "one block"}},
              "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 0.52, "yanchor": "top"},
              "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.04},
                              {**layout["annotations"][1], "x": 0.5, "y": 0.29, "yanchor": "bottom"}]}
    return {"data": data, "layout": layout, "narrow": narrow}


def _block_segments(split: dict, kind: str) -> list[dict]:
    """One block's bars, each cut into its matrices: Q, K, V, O on attention; gate, up, down (or
    the plain MLP's two) on the MLP; the norms' two gains. Stacked, one trace per matrix."""
    mlp_c = COLORS["scaled"] if kind == "gated" else COLORS["unscaled"]
    tones = {"q_proj": COLORS["purple"], "k_proj": COLORS["brown"], "v_proj": COLORS["pink"],
             "o_proj": COLORS["purple"]}
    out = []
    for name, n in split.items():
        if name in ("attention", "mlp", "norms"):
            continue
        bar = "MLP" if name in MLP_MATRICES else "attention"
        out.append({"type": "bar", "x": [bar], "y": [n], "xaxis": "x2", "yaxis": "y2",
                    "name": SHORT[name], "showlegend": False, "text": [SHORT[name]],
                    "textposition": "inside", "insidetextanchor": "middle", "textangle": 0,
                    "marker": {"color": tones.get(name, mlp_c), "line": {"width": 1, "color": COLORS["guide"]}},
                    "hovertemplate": f"{bar} {SHORT[name]}: %{{y:,}}<extra></extra>"})
    out.append({"type": "bar", "x": ["norms"], "y": [split["norms"]], "xaxis": "x2", "yaxis": "y2",
                "name": "norms", "showlegend": False, "marker": {"color": COLORS["guide"]},
                "hovertemplate": "norms: %{y:,}<extra></extra>"})
    return out


def _summary(d, d_ff, kind, v) -> str:
    return (f"At d = {d:,} and d_ff = {d_ff:,}, a gated MLP has {v['params_gated']:,} parameters and "
            f"a plain one {v['params_plain']:,}; a gated MLP {v['d_ff_equal_params']:,.0f} wide "
            f"would match the plain count. With {_count(v['n_heads'], 'query head')} and "
            f"{_count(v['n_kv_heads'], 'key/value head')}, the {kind} MLP is {v['mlp_share']:.1%} of the block.")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _table(d, d_ff, v, split) -> dict:
    return {
        "caption": f"MLP parameters at d = {d:,}, d_ff = {d_ff:,}, and one block split by part.",
        "columns": ["quantity", "value"],
        "rows": [["gated MLP (3·d·d_ff)", f"{v['params_gated']:,}"],
                 ["plain MLP (2·d·d_ff)", f"{v['params_plain']:,}"],
                 ["gated width with the plain count", f"{v['d_ff_equal_params']:,.1f}"],
                 ["query heads / key-value heads", f"{v['n_heads']} / {v['n_kv_heads']}"],
                 ["attention in the block", f"{split['attention']:,}"],
                 ["norms in the block", f"{split['norms']:,}"],
                 ["MLP's share of the block", f"{v['mlp_share']:.1%}"]],
    }


def facts(params: dict) -> dict:
    """Values only the prose quotes: the chapter's SwiGLU worked by hand (d = 2, d_ff = 3), and
    the published models' widths and shares (`block_facts`, the same at every setting: they were
    sent with every answer, 39 of its values)."""
    return {"worked": worked_example(), **block_facts()}
