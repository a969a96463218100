"""Widget: where a decoder-only model's parameters live, counted part by part.

The count is the reference model itself (`backend.reference.model.DecoderLM`), built on PyTorch's
meta device by `backend.reference.counting.count_parameters`: shapes, no storage, so a 70B
model costs nothing to count and the count cannot drift from the code.

Preset and fields never contradict each other. A preset fixes every numeric field to its
published value (each field's range shrinks to that one value: the page moves the sliders
there); the request may omit the fields and they are filled in from the preset. The pins are
declared with `release=custom`: moving a slider under a preset switches the page to custom,
starting from the preset's values (one line says so), so the API only ever sees a preset with
its own values or custom. The ``tied`` checkbox has no slider to move, so under a preset it is
declared disabled (showing the preset's value) and the preset's own value replaces whatever
the request sent. In ``custom`` (where the page starts, at Llama-2-7B's values) every field is
free, and a preset chosen later moves them all at once. Head counts are spec data too: the
query heads must divide the width with an even quotient, the key/value heads the query heads.
"""

from __future__ import annotations

import json

import torch

from backend.bookmodel import WEIGHTS_DIR
from backend.compute import presets
from backend.compute.shapes import check_heads, heads_depend_on_width, kv_depend_on_heads
from backend.compute.spec import Depends, Output, Param, WidgetSpec
from backend.compute.style import ATTENTION_SHADES, COLORS, PART_COLORS
from backend.reference.config import ModelConfig
from backend.reference.counting import build_on_meta, count_by_matrix, count_parameters
from backend.reference.presets import PRESETS

BOOK = ModelConfig(**json.loads((WEIGHTS_DIR / "config.json").read_text()))
CHOICES = {  # preset name -> config; the first is the page's start
    "llama-2-7b": PRESETS["llama-2-7b"],
    "llama-2-13b": PRESETS["llama-2-13b"],
    "llama-2-70b": PRESETS["llama-2-70b"],
    "llama-3-8b": PRESETS["llama-3-8b"],
    "llama-3.2-1b": PRESETS["llama-3.2-1b"],
    "smollm2-135m": PRESETS["smollm2-135m"],
    "book": BOOK,
}
CUSTOM = presets.CUSTOM
FIELDS = {  # widget param -> ModelConfig field
    "n_layers": "n_layers", "d_model": "d_model", "n_heads": "n_heads", "n_kv": "n_kv_heads",
    "d_ff": "d_ff", "vocab": "vocab_size", "tied": "tie_embeddings",
}
LOGIT_TOKENS = 4096  # prompt length for the logits_to_keep comparison


def _locks(param: str) -> tuple[Depends, ...]:
    return presets.locks(CHOICES, FIELDS, param)


D = PRESETS["llama-2-7b"]
SPEC = WidgetSpec(
    name="model_params",
    try_next=(
        "Turn `tied` on: the LM head then shares the embedding's matrix, so the count drops by "
        "`vocab` × `d_model`."
    ),
    title="Where the parameters are",
    description="A decoder-only model's parameters by part, counted on the meta device by the "
                "book's own model class.",
    params=(
        Param("preset", "model", "choice", default=CUSTOM, options=(*CHOICES, CUSTOM),
              help="A real model's published config.json, or custom to set every field yourself."),
        Param("n_layers", "layers L", "int", default=D.n_layers, min=1, max=128, step=1,
              depends=_locks("n_layers")),
        Param("d_model", "width d_model", "int", default=D.d_model, min=64, max=16384, step=64,
              depends=_locks("d_model")),
        Param("n_heads", "query heads h", "int", default=D.n_heads, min=1, max=128, step=1,
              help="Must divide d_model; d_model / h must be even (RoPE rotates pairs).",
              depends=_locks("n_heads") + (heads_depend_on_width(range(64, 16385, 64), 128),)),
        Param("n_kv", "key/value heads", "int", default=D.n_kv_heads, min=1, max=128, step=1,
              help="Must divide the number of query heads.",
              depends=_locks("n_kv") + (kv_depend_on_heads(128),)),
        Param("d_ff", "MLP width d_ff", "int", default=D.d_ff, min=16, max=65536, step=16,
              depends=_locks("d_ff")),
        Param("vocab", "vocabulary |Σ|", "int", default=D.vocab_size, min=256, max=262144, step=1,
              depends=_locks("vocab")),
        Param("tied", "tie the LM head to the embedding", "bool", default=D.tie_embeddings,
              depends=_locks("tied")),
    ),
    outputs=(
        Output("total_params", "total parameters", ",d"),
        Output("embedding", "embedding", ",d"),
        Output("attention", "attention (all layers)", ",d"),
        Output("mlp", "MLP (all layers)", ",d"),
        Output("norms", "norms", ",d"),
        Output("lm_head", "LM head (0 when tied)", ",d"),
        Output("per_layer", "one block", ",d"),
        Output("fraction_in_blocks", "share in the blocks", ".1%"),
    ),
    bake=tuple({"preset": name} for name in CHOICES),
    cost_hint="light",
    prepare=presets.fill_from(CHOICES, FIELDS, forced=("tied",)),
)


def config_of(params: dict) -> ModelConfig:
    """The ModelConfig the widget's fields describe (a ParamError naming the control if invalid)."""
    labels = {p.name: p.label for p in SPEC.params}
    d, h, kv = params["d_model"], params["n_heads"], params["n_kv"]
    check_heads(d, h, kv, labels)
    base = CHOICES.get(params["preset"], D)
    return base.replace(**{f: params[p] for p, f in FIELDS.items()}, max_seq_len=LOGIT_TOKENS)


def logits_shapes(cfg: ModelConfig, n_tokens: int = LOGIT_TOKENS) -> tuple[tuple, tuple]:
    """The logits tensor's shape for an n-token prompt, without and with logits_to_keep=1,
    read off a meta-device forward of the reference model (one layer is enough: the head's
    output does not depend on depth)."""
    model = build_on_meta(cfg.replace(n_layers=1))
    ids = torch.zeros(1, n_tokens, dtype=torch.long, device="meta")
    return tuple(model(ids).logits.shape), tuple(model(ids, logits_to_keep=1).logits.shape)


def human(n: int) -> str:
    """A parameter count in the unit that reads best: 6.74B, 1.31M, 900K."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.3g}{unit}" if n < 100 * size else f"{n / size:,.0f}{unit}"
    return f"{n:,}"


def kv_cache_bytes_per_token(cfg: ModelConfig, bytes_per_value: int = 2) -> int:
    """Keys and values cached per token, all layers, in 16-bit floats: 2 * L * n_kv * d_head."""
    return 2 * cfg.n_layers * cfg.n_kv_heads * cfg.d_head * bytes_per_value


# Each bar of the figure, cut into the matrices it holds: (row, part, short label, colour)
MATRIX_LABELS = {"q_proj": "Q", "k_proj": "K", "v_proj": "V", "o_proj": "O",
                 "gate_proj": "gate", "up_proj": "up", "down_proj": "down"}
# the parts' colours are the diagrams' (style.PART_COLORS); Q, K, V, O are shades of attention's
SEGMENTS = (("embedding", "embedding", "embedding", PART_COLORS["embedding"]),
            *(("attention", k, MATRIX_LABELS[k], ATTENTION_SHADES[k])
              for k in ("q_proj", "k_proj", "v_proj", "o_proj")),
            *(("MLP", k, MATRIX_LABELS[k], PART_COLORS["mlp"]) for k in ("gate_proj", "up_proj", "down_proj")),
            ("norms", "norms", "norms", PART_COLORS["norms"]),
            ("LM head", "lm_head", "LM head", PART_COLORS["lm_head"]))
TIED_LABEL = "tied: counted once, as the embedding"


# The x axis's unit, chosen from the longest bar so that its ticks are plain numbers under 1,000
# (plotly would write 4,000 millions as "4k": "k millions").
UNITS = ((1e9, "billions"), (1e6, "millions"), (1e3, "thousands"))


def axis_unit(longest: int) -> tuple[float, str]:
    """(size, word) of the unit a bar `longest` parameters long is drawn in: 4.3e9 -> billions."""
    for size, word in UNITS:
        if longest >= size:
            return size, word
    return 1.0, ""


def _stacked(cfg: ModelConfig, c, m: dict, unit: float) -> list[dict]:
    """One trace per segment: the embedding, Q/K/V/O stacked on the attention bar, gate/up/down on
    the MLP bar, the norms, the head (a tied head draws nothing and says so); x in `unit`s."""
    L, d, dk = cfg.n_layers, cfg.d_model, cfg.d_head
    shapes = {"q_proj": f"{L} × ({cfg.n_heads}·{dk}) × {d}", "k_proj": f"{L} × ({cfg.n_kv_heads}·{dk}) × {d}",
              "v_proj": f"{L} × ({cfg.n_kv_heads}·{dk}) × {d}", "o_proj": f"{L} × {d} × ({cfg.n_heads}·{dk})",
              "gate_proj": f"{L} × {cfg.d_ff} × {d}", "up_proj": f"{L} × {cfg.d_ff} × {d}",
              "down_proj": f"{L} × {d} × {cfg.d_ff}", "embedding": f"{cfg.vocab_size} × {d}",
              "norms": f"({2 * L} + 1) × {d}",
              "lm_head": "tied: the embedding" if cfg.tie_embeddings else f"{cfg.vocab_size} × {d}"}
    traces = []
    for _i, (row, part, label, color) in enumerate(SEGMENTS):
        n = m[part]
        traces.append({
            "type": "bar", "orientation": "h", "y": [row], "x": [n / unit], "name": label,
            "marker": {"color": color, "line": {"width": 1, "color": COLORS["guide"]}},
            "text": ["" if part == "lm_head" and cfg.tie_embeddings  # a 0-wide bar shows no text
                     else f"{label} {n / c.total:.1%}" if part in MATRIX_LABELS else f"{n / c.total:.1%}"],
            "textposition": "inside" if part in MATRIX_LABELS else "auto", "insidetextanchor": "middle",
            "customdata": [shapes[part]],
            "hovertemplate": f"{label}: {n:,} parameters (%{{customdata}})<extra></extra>",
        })
    return traces


def _total(preset: str) -> int:
    return count_parameters(CHOICES[preset]).total


def compute(params: dict) -> dict:
    cfg = config_of(params)
    c = count_parameters(cfg)
    in_blocks = cfg.n_layers * c.per_layer
    full, last = logits_shapes(cfg)
    bytes_full, bytes_last = 4 * full[1] * full[2], 4 * last[1] * last[2]  # float32 logits
    name = params["preset"]
    values = {
        "total_params": c.total, "embedding": c.embedding, "attention": c.attention, "mlp": c.mlp,
        "norms": c.norms, "lm_head": c.lm_head, "per_layer": c.per_layer,
        "per_layer_gb_16bit": c.per_layer * 2 / 1e9,  # one block's weights at 2 bytes each
        "fraction_in_blocks": in_blocks / c.total, "params_in_blocks": in_blocks,
        "fraction_embedding": c.embedding / c.total,
        "fraction_embedding_and_head": (c.embedding + c.lm_head) / c.total,
        "tied_saving": cfg.vocab_size * cfg.d_model if not cfg.tie_embeddings else 0,
        "approx_12d2": cfg.n_layers * 12 * cfg.d_model ** 2
                       + (1 if cfg.tie_embeddings else 2) * cfg.vocab_size * cfg.d_model,
        "logits_shape_full": list(full), "logits_shape_last": list(last),
        "logits_mib_full": bytes_full / 2**20, "logits_mib_last": bytes_last / 2**20,
        "logit_tokens": LOGIT_TOKENS,
        "ratio_13b_over_7b": _total("llama-2-13b") / _total("llama-2-7b"),
        "ratio_70b_over_13b": _total("llama-2-70b") / _total("llama-2-13b"),
        "d_head": cfg.d_head, "tied": cfg.tie_embeddings, "preset": name,
        "n_layers": cfg.n_layers, "d_model": cfg.d_model, "n_heads": cfg.n_heads,
        "n_kv": cfg.n_kv_heads, "d_ff": cfg.d_ff, "vocab": cfg.vocab_size,
        "kv_cache_bytes_per_token": kv_cache_bytes_per_token(cfg),
        "kv_cache_bytes_per_token_mha": kv_cache_bytes_per_token(cfg.replace(n_kv_heads=cfg.n_heads)),
        "kv_group": cfg.n_heads // cfg.n_kv_heads,
        "ratio_over_7b": c.total / _total("llama-2-7b"),
    }
    values["approx_error"] = (values["approx_12d2"] - c.total) / c.total  # < 0: the rule is short
    values["approx_off"] = abs(values["approx_error"])
    m = count_by_matrix(cfg)  # the same model, split one matrix finer
    values.update({f"{k}_params": n for k, n in m.items() if k in MATRIX_LABELS})
    values.update({f"share_{k}": n / c.total for k, n in m.items()})
    values["share_attention"], values["share_mlp"] = c.attention / c.total, c.mlp / c.total
    values["k_over_q"] = m["k_proj"] / m["q_proj"]
    parts = [("embedding", c.embedding), ("attention", c.attention), ("MLP", c.mlp),
             ("norms", c.norms), ("LM head", c.lm_head)]
    same = [n for n, pc in CHOICES.items()  # the fields the widget shows, not e.g. rope_theta
            if all(getattr(pc, f) == getattr(cfg, f) for f in FIELDS.values())]
    label = name if name != CUSTOM else ("custom (as " + same[0] + ")" if same else "custom config")
    unit, word = axis_unit(max(c.embedding, c.attention, c.mlp, c.norms, c.lm_head))
    fig = {
        "data": _stacked(cfg, c, m, unit),
        "layout": {
            "title": {"text": f"{label}: {human(c.total)} parameters"
                              + (" (head tied)" if cfg.tie_embeddings else "")},
            "xaxis": {"title": {"text": f"parameters ({word})" if word else "parameters"},
                      "rangemode": "tozero"},
            "yaxis": {"autorange": "reversed", "automargin": True},
            "margin": {"l": 90, "r": 20, "t": 50, "b": 50},
            "showlegend": False, "barmode": "stack", "uniformtext": {"minsize": 9, "mode": "hide"},
            # a tied head has no bar to write on: the label sits on its row, from x = 0
            "annotations": [{"x": 0, "y": "LM head", "xref": "x", "yref": "y", "text": TIED_LABEL,
                             "showarrow": False, "xanchor": "left", "font": {"size": 11}}]
                           if cfg.tie_embeddings else [],
        },
        # under 560 px the runtime sets margin.l to 45: automargin widens it to fit "embedding"
        "narrow": {"yaxis": {"automargin": True, "tickfont": {"size": 11}},
                   "title": {"font": {"size": 13}}},
    }
    notice = (f"Preset {name} {'ties' if cfg.tie_embeddings else 'does not tie'} its LM head to "
              "the embedding." if name != CUSTOM else "")
    blocks = (f"its {cfg.n_layers} blocks ({c.per_layer:,} each)" if cfg.n_layers != 1
              else f"its one block ({c.per_layer:,})")
    summary = (f"{label} has {c.total:,} parameters; {in_blocks / c.total:.1%} sit in {blocks}, "
               f"{c.embedding / c.total:.1%} in the embedding"
               + ("; the LM head is tied to the embedding (counted once)." if cfg.tie_embeddings
                  else f" and {c.lm_head / c.total:.1%} in a separate LM head."))
    table = {
        "caption": f"Parameters of {label} by part",
        "columns": ["part", "parameters", "share"],
        "rows": [[p[0], f"{p[1]:,}", f"{p[1] / c.total:.2%}"] for p in parts[:1]]
                + [[f"attention {MATRIX_LABELS[k]}" if k[0] in "qkvo" else f"MLP {MATRIX_LABELS[k]}",
                    f"{m[k]:,}", f"{m[k] / c.total:.2%}"] for k in MATRIX_LABELS]
                + [[p[0], f"{p[1]:,}", f"{p[1] / c.total:.2%}"] for p in parts[3:]]
                + [["total", f"{c.total:,}", "100%"]],
    }
    out = {"values": values, "figure": fig, "summary": summary, "table": table}
    if notice:
        out["notice"] = notice
    return out
