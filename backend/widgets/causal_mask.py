"""Widget: one sentence's attention weights under a mask, four ways of applying it, three dtypes.

The words are the LLM-101 handout's hand-picked embeddings ("the river bank", and the fourth
word "flooded" of exercise 05's "Try"); the scores are E Eᵀ / √4, as in the handout. Every
number comes from `backend/reference/masks.py`. The work is a 5 x 5 matrix at most.
"""

from __future__ import annotations

import itertools
import math

import torch

from backend.reference import masks
from backend.widgets.spec import Output, Param, WidgetSpec
from backend.widgets.style import COLORS, WEIGHT_SCALE, base_layout

# The handout's embeddings: (water, money, generic, unused). A padding token is all zeros, as
# nn.Embedding(padding_idx=...) leaves it.
EMBEDDINGS = {
    "the": (0.3, 0.3, 2.5, 0.0),
    "river": (2.6, 0.0, 0.5, 0.0),
    "bank": (1.6, 1.6, 0.8, 0.0),
    "flooded": (2.4, 0.0, 0.6, 0.0),
    "<pad>": (0.0, 0.0, 0.0, 0.0),
}
SENTENCES = ("the river bank", "the river bank flooded")
MASKS = ("none", "causal", "padding", "causal_padding")
FORMS = ("additive", "additive_min", "boolean", "after_softmax")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
D = 4  # values per vector: the scores are divided by sqrt(4) = 2

MASK_WORDS = {
    "none": "no mask (encoder)",
    "causal": "causal mask (decoder)",
    "padding": "padding mask, pad at the end (encoder batch)",
    "causal_padding": "causal and padding mask, pad at the front (decoder batch)",
}
FORM_WORDS = {
    "additive": "additive, 0 / −∞",
    "additive_min": "additive, 0 / dtype minimum",
    "boolean": "boolean, masked_fill",
    "after_softmax": "zeroed after the softmax",
}

SPEC = WidgetSpec(
    name="causal_mask",
    title="Masks: who may look at whom",
    description="Attention weights of the river-bank sentence under no mask, a causal mask or a "
                "padding mask, applied additively, as a boolean, or (wrongly) after the softmax.",
    params=(
        Param("words", "sentence", "choice", default=SENTENCES[0], options=SENTENCES,
              help="The handout's three words, or with its fourth word 'flooded'."),
        Param("mask", "mask", "choice", default="causal", options=MASKS,
              help="none: everyone sees everyone (encoder). causal: each word sees itself and "
                   "earlier words (decoder). padding: one <pad> appended, hidden as a key. "
                   "causal_padding: one <pad> in front, as batched generation pads, plus causal."),
        Param("form", "how the mask is applied", "choice", default="additive", options=FORMS,
              help="additive: add 0 / −∞ before the softmax. additive_min: add 0 / the dtype's "
                   "most negative number. boolean: masked_fill a True-means-attend predicate. "
                   "after_softmax: the mistake, zeroing weights after the softmax."),
        Param("dtype", "score dtype", "choice", default="float32", options=tuple(DTYPES),
              help="The dtype the embeddings, scores and mask are held in."),
    ),
    outputs=(
        Output("row_sums_text", "row sums", ""),
        Output("nan_rows", "rows that are NaN", ".0f"),
        Output("empty_rows", "rows with nothing to attend to", ".0f"),
        Output("additive_equals_boolean", "additive −∞ = boolean", ""),
        Output("sum_dtype_with_fp32_mask", "scores + a float32 mask come out as", ""),
    ),
    # Every combination (96 tiny results), so the page never snaps to a different setting.
    bake=tuple({"words": w, "mask": m, "form": f, "dtype": d}
               for w, m, f, d in itertools.product(SENTENCES, MASKS, FORMS, DTYPES)),
)


def tokens_for(words: str, mask: str) -> list[str]:
    tokens = words.split()
    if mask == "padding":
        return tokens + ["<pad>"]
    if mask == "causal_padding":
        return ["<pad>"] + tokens
    return tokens


def allowed_for(mask: str, t: int) -> torch.Tensor:
    """(T, T) boolean, True = this query (row) may attend to this key (column)."""
    real = torch.tensor([t - 1])  # one pad token in a padded batch
    if mask == "none":
        return torch.ones(t, t, dtype=torch.bool)
    if mask == "causal":
        return masks.causal_mask(t)
    if mask == "padding":
        return masks.padding_mask(real, t)[0, 0].expand(t, t)
    return masks.and_masks(masks.causal_mask(t), masks.left_padding_mask(real, t))[0, 0]


def scores_for(tokens: list[str], dtype: torch.dtype) -> torch.Tensor:
    E = torch.tensor([EMBEDDINGS[w] for w in tokens], dtype=dtype)  # (T, d)
    return E @ E.T / math.sqrt(D)  # (T, T), one score per (query, key)


def weights_for(form: str, scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    if form == "additive":
        return masks.weights_additive(scores, masks.to_additive(allowed, scores.dtype, float("-inf")))
    if form == "additive_min":
        return masks.weights_additive(scores, masks.to_additive(allowed, scores.dtype))
    if form == "boolean":
        return masks.weights_boolean(scores, allowed)
    return masks.weights_zeroed_after(scores, allowed)


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal cell by cell, a NaN matching only a NaN."""
    return bool(((a == b) | (a.isnan() & b.isnan())).all())


def _num(x: float, digits: int = 4):
    return None if math.isnan(x) else round(x, digits)


def compute(params: dict) -> dict:
    words, mask, form, dtype_name = params["words"], params["mask"], params["form"], params["dtype"]
    dtype = DTYPES[dtype_name]
    tokens = tokens_for(words, mask)
    T = len(tokens)
    scores = scores_for(tokens, dtype)  # (T, T)
    allowed = allowed_for(mask, T)  # (T, T)
    weights = weights_for(form, scores, allowed).float()  # (T, T)
    sums = weights.sum(-1)  # (T,)

    w_inf = weights_for("additive", scores, allowed)
    w_min = weights_for("additive_min", scores, allowed)
    w_bool = weights_for("boolean", scores, allowed)
    # The trap: the dtype-minimum mask built in float32, then cast to the scores' dtype.
    mask_cast = masks.to_additive(allowed, torch.float32).to(dtype)
    w_cast = masks.weights_additive(scores, mask_cast)
    pitfall = masks.dtype_pitfall(T, dtype)

    nan_rows = [i for i in range(T) if bool(weights[i].isnan().any())]
    empty = [i for i in range(T) if not bool(allowed[i].any())]
    row_sums = [_num(float(s)) for s in sums]
    values = {
        "tokens": tokens,
        "weights": [[_num(float(w)) for w in row] for row in weights],
        "allowed": allowed.tolist(),
        "row_sums": row_sums,
        "row_sums_text": " · ".join("NaN" if s is None else f"{s:.2f}" for s in row_sums),
        "nan_rows": len(nan_rows),
        "nan_row_tokens": [tokens[i] for i in nan_rows],
        "empty_rows": len(empty),
        "additive_equals_boolean": same(w_inf, w_bool),
        "additive_min_equals_boolean": same(w_min, w_bool),
        "sum_dtype_with_fp32_mask": str(pitfall["sum_with_fp32_mask_dtype"]).removeprefix("torch."),
        "fp32_min_fits": math.isfinite(pitfall["fp32_min_cast"]),
        "dtype_min": pitfall["dtype_min"],
        "min_overflow_margin": pitfall["min_overflow_margin"],
        "nan_rows_fp32_min_cast": sum(bool(w_cast[i].isnan().any()) for i in range(T)),
    }
    title = f"{MASK_WORDS[mask]} · {FORM_WORDS[form]} · {dtype_name}"
    return {
        "values": values,
        "figure": figure(tokens, weights, allowed, sums, title),
        "summary": summary(words, mask, form, dtype_name, values),
        "table": table(tokens, values, title),
    }


# --- what the reader sees ------------------------------------------------------------------

def _cell(w: float | None, ok: bool) -> str:
    if w is None:
        return "NaN"
    return f"{w:.2f}" if ok else f"masked ({w:.2f})"


def figure(tokens, weights: torch.Tensor, allowed: torch.Tensor, sums: torch.Tensor, title: str) -> dict:
    T = len(tokens)
    idx = list(range(T))
    w = [[_num(float(x), 3) for x in row] for row in weights]
    nan = weights.isnan()
    shown = [[w[i][j] if allowed[i, j] and not nan[i, j] else None for j in idx] for i in idx]
    blocked = [[1 if not allowed[i, j] and not nan[i, j] else None for j in idx] for i in idx]
    nans = [[1 if nan[i, j] else None for j in idx] for i in idx]
    text = [[_cell(w[i][j], bool(allowed[i, j])).replace("masked ", "masked<br>") for j in idx]
            for i in idx]
    hover = [[f"{tokens[i]} → {tokens[j]}: {text[i][j].replace('<br>', ' ')}" for j in idx] for i in idx]
    sums_ok = [None if math.isnan(float(s)) else round(float(s), 3) for s in sums]
    bar_colors = [COLORS["good"] if s is not None and abs(s - 1) < 5e-3 else COLORS["unscaled"]
                  for s in sums_ok]
    data = [
        {"type": "heatmap", "z": shown, "x": idx, "y": idx, "zmin": 0.0, "zmax": 2.0,  # weight 1 stops at mid-blue, so the cell's text stays legible
         "colorscale": WEIGHT_SCALE, "reversescale": True, "showscale": False,
         "text": text, "texttemplate": "%{text}", "hovertext": hover, "hoverinfo": "text",
         "xgap": 2, "ygap": 2, "name": "weight"},
        {"type": "heatmap", "z": blocked, "x": idx, "y": idx, "zmin": 0, "zmax": 1,
         "colorscale": [[0, COLORS["guide"]], [1, COLORS["guide"]]], "showscale": False, "opacity": 0.4,
         "text": text, "texttemplate": "%{text}", "hovertext": hover, "hoverinfo": "text",
         "xgap": 2, "ygap": 2, "name": "masked"},
        {"type": "heatmap", "z": nans, "x": idx, "y": idx, "zmin": 0, "zmax": 1,
         "colorscale": [[0, COLORS["unscaled"]], [1, COLORS["unscaled"]]], "showscale": False,
         "text": text, "texttemplate": "%{text}", "hovertext": hover, "hoverinfo": "text",
         "xgap": 2, "ygap": 2, "name": "NaN"},
        {"type": "bar", "orientation": "h", "x": [0 if s is None else s for s in sums_ok], "y": idx,
         "xaxis": "x2", "yaxis": "y", "marker": {"color": bar_colors}, "name": "row sum",
         "text": ["NaN" if s is None else f"{s:.2f}" for s in sums_ok], "textposition": "outside",
         "cliponaxis": False, "hovertemplate": "row sum %{text}<extra></extra>"},
    ]
    axis = {"tickmode": "array", "tickvals": idx, "ticktext": tokens, "showgrid": False,
            "zeroline": False, "automargin": True}
    layout = base_layout(
        height=120 + 62 * T,
        title={"text": title, "font": {"size": 13}},
        showlegend=False,
        margin={"l": 70, "r": 30, "t": 50, "b": 60},
        xaxis={**axis, "domain": [0, 0.74], "title": {"text": "key (looked at)"}},
        yaxis={**axis, "autorange": "reversed", "title": {"text": "query (looking)"}},
        xaxis2={"domain": [0.8, 1], "range": [0, 1.45], "tickvals": [0, 1], "anchor": "y",
                "title": {"text": "row sum"}, "showgrid": False},
        shapes=[{"type": "line", "xref": "x2", "yref": "paper", "x0": 1, "x1": 1, "y0": 0,
                 "y1": 1, "line": {"color": COLORS["guide"], "dash": "dot", "width": 1}}],
    )
    narrow = {"margin": {"l": 62, "r": 26, "t": 78, "b": 60},
              "title": {"text": title.replace(" · ", "<br>"), "font": {"size": 11}},
              "xaxis": {"domain": [0, 0.7], "tickangle": -45}, "xaxis2": {"domain": [0.76, 1]}}
    return {"data": data, "layout": layout, "narrow": narrow}


def summary(words, mask, form, dtype_name, v) -> str:
    sums = v["row_sums_text"]
    text = (f"Attention weights of '{words}' with {MASK_WORDS[mask]}, {FORM_WORDS[form]}, in "
            f"{dtype_name}. Row sums: {sums}.")
    if v["nan_rows"]:
        text += f" {v['nan_rows']} row is NaN: {', '.join(v['nan_row_tokens'])} has nothing to attend to."
    elif v["empty_rows"]:
        text += f" {v['empty_rows']} row has nothing to attend to but stays finite."
    return text


def table(tokens, v, title) -> dict:
    rows = []
    for i, tok in enumerate(tokens):
        cells = [_cell(v["weights"][i][j], v["allowed"][i][j]) for j in range(len(tokens))]
        s = v["row_sums"][i]
        rows.append([tok, *cells, "NaN" if s is None else f"{s:.2f}"])
    return {"caption": f"Attention weights, one row per query word: {title}",
            "columns": ["query \\ key", *tokens, "row sum"], "rows": rows}
