"""Widget: every head of a trained Llama on the reader's text, scored by what it does.

SmolLM2-135M-Instruct (30 layers of 9 query heads sharing 3 key/value heads, `backend/smollm2`)
reads the text after `<|endoftext|>`. Each of its 270 heads gets four scores
(`backend/reference/head_roles.py`): previous-token, first-token, local and induction. The left
panel maps one score over every head; a click on a cell (or the layer and head controls) opens
that head's attention map on the text, alone or beside the other query heads that share its
keys and values.
"""

from __future__ import annotations

import html
import math

import torch

from backend.compute.attention_models import encode_smollm2
from backend.compute.spec import Output, Param, WidgetSpec
from backend.compute.style import COLORS, base_layout
from backend.errors import ParamError
from backend.reference.head_roles import LOCAL, ROLES, role_scores

LAYERS, HEADS, KV_HEADS = 30, 9, 3  # SmolLM2-135M (tests/claims/test_head_roles.py checks)
GROUP = HEADS // KV_HEADS
MAX_TOKENS = 64  # special token included: bounds the work and the maps the answer carries
MAX_CHARS = 400
TEXT = "The password is purple elephant seven. I repeat: the password is purple elephant seven."

ROLE_LABELS = ("previous-token", "first-token", "local", "induction")
ROLE_WORDS = dict(zip(ROLES, ROLE_LABELS, strict=True))
ROLE_HELP = {
    "previous_token": "the weight on the token just before",
    "first_token": "the weight on the first token, <|endoftext|>",
    "local": f"the weight on the token itself and the {LOCAL - 1} before it",
    "induction": "the weight on every token that followed an earlier copy of this token",
}

SPEC = WidgetSpec(
    name="head_roles",
    try_next=(
        "Click the brightest cell of the induction map (or set `layer` 18, `head` 6): its map "
        "puts each token of the repeat on the token that came next the first time. Then choose "
        "`view` group to see the two other heads that read the same keys and values."
    ),
    title="Every head of SmolLM2-135M on your text",
    description="Each of the 270 heads scored as previous-token, first-token, local and "
                "induction head, and the attention map of the head you pick.",
    params=(
        Param("text", "text", "text", default=TEXT, max_length=MAX_CHARS,
              help=f"Any text; at most {MAX_TOKENS} tokens. Repeat a phrase to give the "
                   "induction heads something to copy."),
        Param("role", "score heads by", "choice", default="induction", options=ROLES,
              option_labels=ROLE_LABELS,
              help="Which score the left map shows: " + "; ".join(
                  f"{w}: {ROLE_HELP[r]}" for r, w in zip(ROLES, ROLE_LABELS, strict=True)) + "."),
        Param("layer", "layer", "int", default=18, min=0, max=LAYERS - 1, step=1,
              help="The head whose map is drawn: its layer, counted from 0."),
        Param("head", "head", "int", default=6, min=0, max=HEADS - 1, step=1,
              help="Its query head within the layer, counted from 0."),
        Param("view", "show", "choice", default="head", options=("head", "group"),
              option_labels=("this head", "its key/value group"),
              help=f"group: the {GROUP} query heads that share this head's keys and values, "
                   "side by side."),
    ),
    outputs=(
        Output("n_tokens", "tokens", "d"),
        Output("top_head", "the highest-scoring head", ""),
        Output("top_score", "its score", ".2f"),
        Output("over_half", "heads scoring over 0.5", "d"),
        Output("head_score", "the chosen head's score", ".2f"),
    ),
    bake=(tuple({"role": r} for r in ROLES[:3])
          + ({"view": "group"}, {"layer": 16, "head": 0, "role": "previous_token"},
             {"layer": 3, "head": 0}, {"layer": 29, "head": 8})),
    cost_hint="heavy",
    warm=False,  # the page carries its results; warming would load SmolLM2 into every worker
)


def _label(token: str) -> str:
    return html.escape(token, quote=False)  # Plotly reads a few tags in labels


def compute(params: dict) -> dict:
    e = encode_smollm2(params["text"], MAX_TOKENS)
    L, h, T = e.maps.shape[0], e.maps.shape[1], e.maps.shape[-1]
    scores = role_scores(e.maps, e.ids)
    role, layer, head = params["role"], params["layer"], params["head"]
    shown = scores[role]
    if shown is None:
        why = ("no token occurs twice with another token between the copies; 'The' and 'the', "
               "or a word with and without a space before it, are different tokens: repeat a "
               "phrase of a few words"
               if role == "induction" else "the text is too short: type a few more words")
        article = "an" if ROLE_WORDS[role][0] in "aeiou" else "a"
        raise ParamError(f"no head has {article} {ROLE_WORDS[role]} score on this text ({why})",
                         "text")
    group = (head // GROUP) * GROUP
    heads = list(range(group, group + GROUP)) if params["view"] == "group" else [head]
    maps = e.maps[layer, heads]  # (len(heads), T, T)
    top = divmod(int(torch.argmax(shown)), h)
    values = {
        "n_tokens": T, "layers": L, "heads_per_layer": h, "heads": L * h,
        "kv_heads": e.info["n_kv_heads"], "group_size": GROUP,
        "tokens": e.tokens, "role": role,
        "top": {"layer": top[0], "head": top[1], "score": float(shown.max())},
        "top_head": f"layer {top[0]}, head {top[1]}",
        "top_score": float(shown.max()),
        "over_half": int((shown > 0.5).sum()),
        "head_score": float(shown[layer, head]),
        "mean_score": float(shown.mean()),
        "scores": {r: (None if s is None else [[round(float(x), 4) for x in row] for row in s])
                   for r, s in scores.items()},
        "chosen": {r: (None if s is None else float(s[layer, head])) for r, s in scores.items()},
        # by depth: each layer's strongest head per role, and the first layer holding a head
        # over one half (None: none does)
        "layer_max": {r: (None if s is None else [round(float(x), 4) for x in s.max(-1).values])
                      for r, s in scores.items()},
        "first_layer_over_half": {r: _first_over_half(s) for r, s in scores.items()},
        "thirds_mean": {r: (None if s is None else [float(part.mean()) for part in s.chunk(3)])
                        for r, s in scores.items()},
        "group_heads": list(range(group, group + GROUP)),
        "group_scores": {r: (None if s is None else [float(s[layer, k])
                                                     for k in range(group, group + GROUP)])
                         for r, s in scores.items()},
    }
    return {"values": values, "figure": _figure(params, e, shown, maps, heads),
            "summary": _summary(params, values), "table": _table(values)}


def _first_over_half(s) -> int | None:
    if s is None:
        return None
    layers = (s > 0.5).any(-1).nonzero()
    return int(layers[0]) if len(layers) else None


def _figure(params, e, shown, maps, heads) -> dict:
    L, h = shown.shape
    layer, head, role = params["layer"], params["head"], params["role"]
    label = ROLE_WORDS[role]
    T = len(e.tokens)
    labels = [_label(t) for t in e.tokens]
    cats = [f"{lab} (#{i})" for i, lab in enumerate(labels)]
    n = len(heads)
    left, start = 0.22, 0.36  # the score map's share of the width; the maps' labels between
    data = [{
        "type": "heatmap", "z": [[round(float(x), 3) for x in row] for row in shown],
        "x": list(range(h)), "y": list(range(L)), "zmin": 0, "zmax": 1,
        "colorscale": "Blues", "xaxis": "x", "yaxis": "y",
        # its own scale, across the top of the score map (the maps' is the weight's)
        "colorbar": {"orientation": "h", "x": 0, "xanchor": "left", "y": 0.91,
                     "yanchor": "bottom", "len": left, "thickness": 6,
                     "title": {"text": "score", "side": "right"}, "tickfont": {"size": 9}},
        "hovertemplate": f"layer %{{y}}, head %{{x}}<br>{label} score %{{z:.2f}}"
                         "<br>click to open its map<extra></extra>",
    }, {
        "type": "scatter", "mode": "markers", "x": heads, "y": [layer] * n, "xaxis": "x",
        "yaxis": "y", "name": "shown on the right", "showlegend": False,
        "marker": {"symbol": "square-open", "size": 12, "line": {"width": 2},
                   "color": COLORS["accent"]},
        "hovertemplate": "shown: layer %{y}, head %{x}<extra></extra>",
    }]
    # the maps share one colour axis: weights from 0 to 1, the same in every panel
    gap = 0.03
    width = (1 - start - 0.06 - gap * (n - 1)) / n
    layout_axes = {}
    annotations = []
    for k, (hd, m) in enumerate(zip(heads, maps, strict=True)):
        ax = k + 2
        x0 = start + k * (width + gap)
        data.append({
            "type": "heatmap", "z": [[round(float(w), 3) for w in r] for r in m],
            "x": cats, "y": cats, "xaxis": f"x{ax}", "yaxis": f"y{ax}",
            "coloraxis": "coloraxis",
            "hovertemplate": f"head {hd}<br>from %{{y}}<br>to %{{x}}<br>weight %{{z:.3f}}"
                             "<extra></extra>",
        })
        every = math.ceil(T / (54 // n))  # a label per token while they fit
        ticks = {"tickmode": "array", "tickvals": cats[::every], "ticktext": labels[::every]}
        layout_axes[f"xaxis{ax}"] = {"domain": [x0, x0 + width], "anchor": f"y{ax}",
                                     "type": "category", "tickangle": -60, "showgrid": False,
                                     "tickfont": {"size": 9}, **ticks}
        layout_axes[f"yaxis{ax}"] = {"domain": [0, 0.9], "anchor": f"x{ax}", "type": "category",
                                     "autorange": "reversed", "showgrid": False,
                                     "showticklabels": k == 0, "tickfont": {"size": 9}, **ticks}
        annotations.append({"xref": "paper", "yref": "paper", "x": x0 + width / 2, "y": 0.92,
                            "xanchor": "center", "yanchor": "bottom", "showarrow": False,
                            "text": f"L{layer} head {hd}" + (" (chosen)" if hd == head and n > 1
                                                             else "")})
    c = COLORS["scaled"].lstrip("#")
    r, g, b = (int(c[i: i + 2], 16) for i in (0, 2, 4))
    layout = base_layout(
        height=540,
        margin={"l": 55, "r": 10, "t": 40, "b": 90},  # room for <|endoftext|> turned on its side
        title={"text": f"{label.capitalize()} score of every head · attention of layer {layer}"},
        xaxis={"domain": [0, left], "title": {"text": "head"}, "dtick": 1},
        yaxis={"domain": [0, 0.9], "title": {"text": "layer"}, "autorange": "reversed",
               "dtick": 5},
        coloraxis={"cmin": 0, "cmax": 1,
                   "colorscale": [[0, f"rgba({r},{g},{b},0)"], [0.5, f"rgba({r},{g},{b},0.6)"],
                                  [1, f"rgba({r},{g},{b},1)"]],
                   "colorbar": {"title": {"text": "weight"}, "thickness": 10, "len": 0.8}},
        annotations=annotations,
        **layout_axes,
    )
    # a phone: the score map on top, each head's map below it, in pixels of the whole height
    top_px, map_px, gap_px = 400, 320, 110
    total = top_px + n * (map_px + gap_px) + 60
    narrow = {"height": total, "title": {"text": f"{label.capitalize()} scores · layer {layer}"},
              "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [1 - top_px / total, 1]},
              "coloraxis": {"colorbar": {"orientation": "h", "x": 0.5, "xanchor": "center",
                                         "y": 0, "yanchor": "top", "len": 1, "thickness": 8}},
              "annotations": []}
    narrow["margin"] = {"t": 90}
    narrow_traces = [{"colorbar": {"len": 1, "y": 1.0, "yanchor": "bottom"}}]
    # A phone's labels are 11 px (widgets/runtime/theme.js MIN_TICK_PX): at most 16 a map, so
    # they never touch across its ~330 px.
    every = math.ceil(T / 16)
    phone_ticks = {"tickvals": cats[::every], "ticktext": labels[::every]}
    for k, a in enumerate(annotations):
        y1 = 1 - (top_px + gap_px + k * (map_px + gap_px)) / total
        narrow[f"xaxis{k + 2}"] = {"domain": [0.12, 1], **phone_ticks}
        narrow[f"yaxis{k + 2}"] = {"domain": [y1 - map_px / total, y1], "showticklabels": True,
                                   **phone_ticks}
        narrow["annotations"].append(dict(a, x=0.56, y=y1))
    # a click on the score map opens that head: its x is the head, its y the layer
    click = {"trace": 0, "x": "head", "y": "layer"}
    return {"data": data, "layout": layout, "narrow": narrow, "narrow_traces": narrow_traces,
            "click": click}


def _summary(params, v) -> str:
    t = v["top"]
    label = ROLE_WORDS[params["role"]]
    words = (f"On {v['n_tokens']} tokens, SmolLM2-135M's highest {label} score is layer "
             f"{t['layer']}, head {t['head']} ({t['score']:.2f}); {v['over_half']} of its "
             f"{v['heads']} heads {'scores' if v['over_half'] == 1 else 'score'} over 0.5. "
             f"The map shows layer {params['layer']}, head {params['head']}")
    if params["view"] == "group":
        words += (f" and the other query heads of its key/value group "
                  f"({', '.join(str(k) for k in v['group_heads'])})")
    return words + f"; the chosen head's {label} score is {v['head_score']:.2f}."


def _table(v) -> dict:
    rows = [[ROLE_WORDS[r], v["chosen"][r], (None if v["scores"][r] is None else
                                             max(max(row) for row in v["scores"][r]))]
            for r in ROLES]
    return {"caption": "The chosen head's four scores, and the highest of each over all "
                       f"{v['heads']} heads ('—': the text has no row for that score)",
            "columns": ["score", "chosen head", "highest score"],
            "rows": [[a, "—" if b is None else round(b, 3), "—" if c is None else round(c, 3)]
                     for a, b, c in rows]}
