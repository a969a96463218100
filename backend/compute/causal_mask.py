"""Widget: one sentence's attention weights under a mask, four ways of applying it, three dtypes.

The words are the river-bank chapter's hand-picked embeddings ("the river bank", and the fourth
word "flooded" of exercise 05's "Try"); the scores are E Eᵀ / √4. Every number comes from
`backend/reference/masks.py`. The work is a 5 x 5 matrix at most, plus a fixed 2 x 4
cross-attention example (two target words over the padded source "the river bank <pad>").
"""

from __future__ import annotations

import itertools
import math

import torch

from backend.compute.spec import Output, Param, WidgetSpec, dtype_param
from backend.compute.style import COLORS, WEIGHT_SCALE, base_layout
from backend.reference import masks
from backend.reference.encoder_decoder import seq2seq_masks

# The hand-picked embeddings: (water, money, generic, unused). A padding token is all zeros, as
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
FORMS = ("additive", "additive_min", "additive_min_fp32", "boolean", "fill_1e4", "after_softmax")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
D = 4  # values per vector: the scores are divided by sqrt(4) = 2
# Cross-attention: decoder queries from a target sentence, encoder keys and values from the
# source, padded to four positions as in a batch whose longest source has four tokens.
CROSS_SOURCE = ("the", "river", "bank", "<pad>")
CROSS_TARGET = ("bank", "flooded")

MASK_WORDS = {
    "none": "no mask (encoder)",
    "causal": "causal mask (decoder)",
    "padding": "padding mask, pad at the end (encoder batch)",
    "causal_padding": "causal and padding mask, pad at the front (decoder batch)",
}
FORM_WORDS = {
    "additive": "additive, 0 / −∞",
    "additive_min": "additive, 0 / dtype minimum",
    "additive_min_fp32": "additive, float32's minimum cast to the dtype",
    "boolean": "boolean, masked_fill",
    "fill_1e4": "boolean, masked_fill with −1e4",
    "after_softmax": "zeroed after the softmax",
}

SPEC = WidgetSpec(
    name="causal_mask",
    try_next=(
        "Set `mask` to causal_padding with the longer sentence in `words`, then compare `form` "
        "additive with after_softmax: masking after the softmax leaves rows that no longer sum to "
        "1."
    ),
    title="Masks: who may look at whom",
    description="Attention weights of the river-bank sentence under no mask, a causal mask or a "
                "padding mask, applied additively, as a boolean, or (wrongly) after the softmax.",
    params=(
        Param("words", "sentence", "choice", default=SENTENCES[0], options=SENTENCES,
              help="The river-bank chapter's three words, or with a fourth word, 'flooded'."),
        Param("mask", "mask", "choice", default="causal", options=MASKS,
              help="none: everyone sees everyone (encoder). causal: each word sees itself and "
                   "earlier words (decoder). padding: one <pad> appended, hidden as a key. "
                   "causal_padding: one <pad> in front, as batched generation pads, plus causal."),
        Param("form", "how the mask is applied", "choice", default="additive", options=FORMS,
              help="additive: add 0 / −∞ before the softmax. additive_min: add 0 / the dtype's "
                   "most negative number. additive_min_fp32: the same mask built in float32 "
                   "and then cast to the score dtype. boolean: masked_fill a True-means-attend "
                   "predicate with the dtype's minimum. fill_1e4: masked_fill with −1e4, a "
                   "sentinel common in older code. after_softmax: the mistake, zeroing weights after the "
                   "softmax."),
        dtype_param(DTYPES, "float32", label="score dtype",
                    help="The dtype the embeddings, scores and mask are held in."),
    ),
    outputs=(
        Output("row_sums_text", "row sums", ""),
        Output("nan_rows", "rows that are NaN", ".0f"),
        Output("empty_rows", "rows with nothing to attend to", ".0f"),
        Output("same_as_boolean", "same weights as boolean masked_fill", ""),
        Output("sum_dtype_with_fp32_mask", "scores + a float32 mask come out as", ""),
    ),
    # Every combination (144 tiny results), so the page never snaps to a different setting.
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
    if form == "additive_min_fp32":  # the trap: built in float32 (the default), then cast down
        return masks.weights_additive(scores, masks.to_additive(allowed, torch.float32).to(scores.dtype))
    if form == "boolean":
        return masks.weights_boolean(scores, allowed)
    if form == "fill_1e4":
        return masks.weights_boolean(scores, allowed, fill=-1e4)
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
    w_cast = weights_for("additive_min_fp32", scores, allowed)
    pitfall = masks.dtype_pitfall(T, dtype)
    # PyTorch's own fused attention on the same mask (float32): what it makes of an empty row.
    E = torch.tensor([EMBEDDINGS[w] for w in tokens])[None, None]  # (1, 1, T, d)
    sdpa = masks.sdpa_weights(E, E, allowed[None, None])[0, 0]  # (T, T)
    sdpa_empty = [sdpa[i] for i in range(T) if not bool(allowed[i].any())]
    # The encoder-decoder's three masks for a batch of two (source lengths 5 and 3, four target tokens).
    shapes = seq2seq_masks(torch.tensor([5, 3]), 5, 4)
    padded_decoder = seq2seq_masks(torch.tensor([5, 3]), 5, 4, tgt_lengths=torch.tensor([4, 2])).decoder
    # The exact (float32) weights, rounded to `dtype` only at the end: what rounding costs the
    # weights themselves, as against rounding the embeddings and scores first.
    w_own = weights_for(form, scores_for(tokens, torch.float32), allowed).to(dtype).float()
    masked_kept = [float(weights[i, j]) for i in range(T) for j in range(T)
                   if not allowed[i, j] and bool(allowed[i].any())]

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
        "same_as_boolean": same(weights_for(form, scores, allowed), w_bool),
        "largest_masked_weight": max(masked_kept, default=0.0),
        # uniform to the dtype's precision (1/5 is not exact in float16 or bfloat16)
        "empty_row_is_uniform": bool(empty) and all(
            torch.allclose(weights[i], torch.full((T,), 1 / T), rtol=torch.finfo(dtype).eps, atol=0)
            for i in empty),
        "scores": [[_num(float(x)) for x in row] for row in scores.float()],
        "weights_rounded_after": [[_num(float(x)) for x in row] for row in w_own],
        "torch_version": torch.__version__.split("+")[0],
        "sdpa_empty_row": ("none" if not sdpa_empty else "NaN" if any(bool(r.isnan().any()) for r in sdpa_empty)
                           else "all zeros" if all(bool((r == 0).all()) for r in sdpa_empty) else "other"),
        "shape_encoder": str(tuple(shapes.encoder.shape)),
        "shape_decoder": str(tuple(shapes.decoder.shape)),
        "shape_decoder_padded": str(tuple(padded_decoder.shape)),
        "shape_cross": str(tuple(shapes.cross.shape)),
        "sum_dtype_with_fp32_mask": str(pitfall["sum_with_fp32_mask_dtype"]).removeprefix("torch."),
        "fp32_min_fits": math.isfinite(pitfall["fp32_min_cast"]),
        "dtype_min": pitfall["dtype_min"],
        "min_overflow_margin": pitfall["min_overflow_margin"],
        "nan_rows_fp32_min_cast": sum(bool(w_cast[i].isnan().any()) for i in range(T)),
        "cross": cross_example(),
    }
    title = f"{MASK_WORDS[mask]} · {FORM_WORDS[form]} · {dtype_name}"
    return {
        "values": values,
        "figure": figure(tokens, weights, allowed, sums, title),
        "summary": summary(words, mask, form, dtype_name, values),
        "table": table(tokens, values, title),
    }


def facts(params: dict) -> dict:
    """Values only the prose quotes, worked out when the book is built: the softmax of the scores
    as the dtype holds them, computed and kept in float32. The widget's weights are these stored
    back in the dtype, which moves them by up to half a step of its precision."""
    tokens = tokens_for(params["words"], params["mask"])
    scores = scores_for(tokens, DTYPES[params["dtype"]]).float()  # (T, T), the dtype's values
    w = weights_for(params["form"], scores, allowed_for(params["mask"], len(tokens)))  # float32
    return {"weights_before_storing": [[_num(float(x)) for x in row] for row in w]}


def cross_example() -> dict:
    """Two target words' queries over the padded source: the cross mask at work, in float32."""
    q = torch.tensor([EMBEDDINGS[w] for w in CROSS_TARGET])  # (T_tgt, d) decoder queries
    kv = torch.tensor([EMBEDDINGS[w] for w in CROSS_SOURCE])  # (T_src, d) encoder keys = values
    src_lengths = torch.tensor([CROSS_SOURCE.index("<pad>")])  # one source of 3 real tokens
    allowed = masks.cross_mask(src_lengths, len(CROSS_TARGET), len(CROSS_SOURCE))  # (1, 1, T_tgt, T_src)
    scores = q @ kv.T / math.sqrt(D)  # (T_tgt, T_src): not square
    w = masks.weights_boolean(scores, allowed[0, 0])  # (T_tgt, T_src)
    sdpa = masks.sdpa_weights(q[None, None], kv[None, None], allowed)[0, 0]
    out = w @ kv  # (T_tgt, d): each target word's mix of source vectors
    return {
        "queries": list(CROSS_TARGET),
        "keys": list(CROSS_SOURCE),
        "mask_shape": str(tuple(allowed.shape)),
        "weights_shape": str(tuple(w.shape)),
        "allowed": allowed[0, 0].tolist(),
        "weights": [[_num(float(x)) for x in row] for row in w],
        "row_sums": [_num(float(s)) for s in w.sum(-1)],
        "outputs": [[_num(float(x)) for x in row] for row in out],
        "same_as_sdpa": bool(torch.allclose(w, sdpa, atol=1e-6)),
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
    empty = [not bool(allowed[i].any()) for i in idx]
    shown = [[w[i][j] if allowed[i, j] and not nan[i, j] else None for j in idx] for i in idx]
    blocked = [[1 if not allowed[i, j] and not nan[i, j] else None for j in idx] for i in idx]
    nans = [[1 if nan[i, j] else None for j in idx] for i in idx]
    text = [[_cell(w[i][j], bool(allowed[i, j])).replace("masked ", "masked<br>") for j in idx]
            for i in idx]
    hover = [[f"{tokens[i]} → {tokens[j]}: {text[i][j].replace('<br>', ' ')}" for j in idx] for i in idx]
    sums_ok = [None if math.isnan(float(s)) else round(float(s), 3) for s in sums]
    # Green: a proper distribution. Orange: a row with nothing to attend to, whatever it sums
    # to (its 1.00 under the dtype minimum is not "fine"). Red: a row that lost weight.
    bar_colors = [COLORS["accent"] if empty[i] else
                  COLORS["good"] if s is not None and abs(s - 1) < 5e-3 else COLORS["unscaled"]
                  for i, s in enumerate(sums_ok)]
    bar_text = [("NaN" if s is None else f"{s:.2f}") + (" (empty)" if empty[i] else "")
                for i, s in enumerate(sums_ok)]
    cell = {"x": idx, "y": idx, "hovertext": hover, "hoverinfo": "text", "xgap": 2, "ygap": 2,
            "showscale": False}
    data = [
        # weight 1 stops at mid-blue (zmax 2), so the theme's text colour reads on every cell
        {"type": "heatmap", "z": shown, "zmin": 0.0, "zmax": 2.0, "colorscale": WEIGHT_SCALE,
         "reversescale": True, "name": "weight", **cell},
        {"type": "heatmap", "z": blocked, "zmin": 0, "zmax": 1, "opacity": 0.35,
         "colorscale": [[0, COLORS["guide"]], [1, COLORS["guide"]]], "name": "masked", **cell},
        {"type": "heatmap", "z": nans, "zmin": 0, "zmax": 1, "opacity": 0.45,
         "colorscale": [[0, COLORS["unscaled"]], [1, COLORS["unscaled"]]], "name": "NaN", **cell},
        # The cells' text, drawn once, in the theme's own text colour (the runtime sets it).
        {"type": "scatter", "mode": "text", "name": "labels",
         "x": [j for i in idx for j in idx], "y": [i for i in idx for j in idx],
         "text": [text[i][j] for i in idx for j in idx], "textfont": {"size": 11},
         "hoverinfo": "skip", "showlegend": False},
        {"type": "bar", "orientation": "h", "x": [0 if s is None else s for s in sums_ok], "y": idx,
         "xaxis": "x2", "yaxis": "y", "marker": {"color": bar_colors}, "name": "row sum",
         "text": bar_text, "textposition": "outside", "textfont": {"size": 11},
         "cliponaxis": False, "hovertemplate": "row sum %{text}<extra></extra>"},
    ]
    axis = {"tickmode": "array", "tickvals": idx, "ticktext": tokens, "showgrid": False,
            "zeroline": False, "automargin": True}
    layout = base_layout(
        height=120 + 62 * T,
        title={"text": title, "font": {"size": 13}},
        showlegend=False,
        margin={"l": 70, "r": 60, "t": 50, "b": 60},
        xaxis={**axis, "domain": [0, 0.7], "title": {"text": "key (looked at)"}},
        yaxis={**axis, "autorange": "reversed", "title": {"text": "query (looking)"}},
        xaxis2={"domain": [0.76, 1], "range": [0, 1.45], "tickvals": [0, 1], "anchor": "y",
                "title": {"text": "row sum"}, "showgrid": False},
        shapes=[{"type": "line", "xref": "x2", "yref": "paper", "x0": 1, "x1": 1, "y0": 0,
                 "y1": 1, "line": {"color": COLORS["guide"], "dash": "dot", "width": 1}}],
    )
    narrow = {"margin": {"l": 58, "r": 44, "t": 78, "b": 60},
              "title": {"text": title.replace(" · ", "<br>"), "font": {"size": 11}},
              "xaxis": {"domain": [0, 0.66], "tickangle": -45}, "xaxis2": {"domain": [0.7, 1]}}
    return {"data": data, "layout": layout, "narrow": narrow}


def summary(words, mask, form, dtype_name, v) -> str:
    sums = v["row_sums_text"]
    text = (f"Attention weights of '{words}' with {MASK_WORDS[mask]}, {FORM_WORDS[form]}, in "
            f"{dtype_name}. Row sums: {sums}.")
    if v["nan_rows"]:
        text += f" {v['nan_rows']} row is NaN: {', '.join(v['nan_row_tokens'])} has nothing to attend to."
    elif v["empty_rows"]:
        text += (f" {v['empty_rows']} row has nothing to attend to but stays finite; its weights "
                 "are not a meaningful distribution.")
    return text


def table(tokens, v, title) -> dict:
    rows = []
    for i, tok in enumerate(tokens):
        cells = [_cell(v["weights"][i][j], v["allowed"][i][j]) for j in range(len(tokens))]
        s = v["row_sums"][i]
        rows.append([tok, *cells, "NaN" if s is None else f"{s:.2f}"])
    return {"caption": f"Attention weights, one row per query word: {title}",
            "columns": ["query \\ key", *tokens, "row sum"], "rows": rows}
