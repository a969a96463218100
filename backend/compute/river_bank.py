"""Widget: self-attention by hand, "the river bank".

"bank" (equally water and money) is rebuilt as a softmax-weighted mix of "the", its neighbour
and itself. The reader picks the neighbour (river, savings, or four numbers of their own) and
whether the scores are divided by sqrt(d); the page shows the three weights, where bank moves
in the water/money plane, and the handout's arithmetic table filled in with the live numbers.
Three words of four numbers: the work is a few dozen multiplications at any setting.
"""

from __future__ import annotations

import math

import torch

from backend.compute.spec import Depends, Output, Param, WidgetSpec
from backend.compute.style import COLORS, base_layout
from backend.reference import river_bank as rb

CUSTOM = "custom"
# The four custom sliders start at river's numbers, so "custom" begins where "river" is.
CUSTOM_PARAMS = tuple(zip(("water", "money", "generic", "fourth"), rb.WORDS["river"]))

SPEC = WidgetSpec(
    name="river_bank",
    try_next=(
        "Switch `neighbour` to savings and see “bank” lean towards money instead of water; then "
        "turn `scaled` off to see how much sharper the weights get without the division by √d."
    ),
    title="The river bank, by hand",
    description="Score, softmax and mix for the word 'bank' in 'the <neighbour> bank'.",
    params=(
        Param("neighbour", "neighbour word", "choice", default="river",
              options=("river", "savings", CUSTOM),
              help="The middle word of 'the ___ bank'. Choose custom to type its four numbers."),
        Param("scaled", "divide by √d", "bool", default=True,
              help="Divide the scores by √d = √4 = 2 before the softmax, as attention does."),
        # Greyed out (and ignored) unless the neighbour word is custom; they keep their values,
        # so switching back to custom restores the reader's word.
        *(Param(name, f"custom: {name}", "float", default=default, min=-3.0, max=3.0,
                step=0.1, help=f"The custom neighbour's '{name}' number; used only when the "
                               "neighbour word is custom.",
                depends=(Depends("neighbour", {
                    n: {"disabled": True, "note": "only the custom word uses these numbers"}
                    for n in ("river", "savings")}),))
          for name, default in CUSTOM_PARAMS),
    ),
    outputs=(
        Output("weight_the", "weight on 'the'", ".3f"),
        Output("weight_neighbour", "weight on the neighbour", ".3f"),
        Output("weight_bank", "weight on 'bank' itself", ".3f"),
        Output("water_after", "bank after: water", ".2f"),
        Output("money_after", "bank after: money", ".2f"),
        Output("fourth_after", "bank after: fourth", ".2f"),
        Output("leans", "bank now leans", ""),
    ),
    # Baked for readers without the API: both named neighbours with and without the division,
    # the custom word at its start, with bank's own numbers, with fourth 3 and at (3, 3, 3, 3)
    # undivided (the chapter's "try"s), and a sweep of the custom word's water and money numbers.
    bake=tuple({"neighbour": n, "scaled": s} for n in ("river", "savings", CUSTOM)
               for s in (True, False))
    + ({"neighbour": CUSTOM, "water": 1.6, "money": 1.6, "generic": 0.8, "fourth": 0.0},
       {"neighbour": CUSTOM, "fourth": 3.0},
       {"neighbour": CUSTOM, "water": 3.0, "money": 3.0, "generic": 3.0, "fourth": 3.0,
        "scaled": False})
    + tuple({"neighbour": CUSTOM, name: v} for name in ("water", "money")
            for v in (-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0)),
)

# The chapter's learned-projection example ("Queries, keys and values"): queries and values are
# the words themselves (W_Q = W_V = I), and every key is only its word's generic number, moved
# into the first slot: k_j = (generic_j, 0, 0, 0). What a word is found by is no longer what it
# contains, and the score table stops being symmetric.
W_K_GENERIC = tuple(tuple(1.0 if (i, j) == (2, 0) else 0.0 for j in range(4)) for i in range(4))

TIE = 1e-12  # |water - money| below this is a tie: it happens exactly when the inputs are symmetric


def neighbour_vector(params: dict) -> tuple[float, ...]:
    """The middle word's four numbers. The custom sliders define the custom word; it sits in the
    sentence only when the neighbour word is custom, so with river or savings chosen the sliders
    keep their values (for switching back) and the summary says they are not in play."""
    name = params["neighbour"]
    if name == CUSTOM:
        return tuple(params[p] for p, _ in CUSTOM_PARAMS)
    return rb.WORDS[name]


def compute(params: dict) -> dict:
    name = params["neighbour"]
    words = rb.sentence(neighbour_vector(params))                    # (3, 4)
    step = rb.bank_in_context(words, scaled=params["scaled"])
    _, matrix = rb.every_word_in_context(words, scaled=params["scaled"])  # (3, 3)
    scores = words @ words.T                                          # (3, 3)

    weights = step.weights.tolist()
    after = step.after.tolist()
    lean = after[0] - after[1]
    leans = "water" if lean > TIE else "money" if lean < -TIE else "neither (a tie)"
    labels = ["the", name if name != CUSTOM else "custom word", "bank"]
    values = {
        "words": labels,
        "vectors": words.tolist(),
        "sqrt_d": math.sqrt(words.shape[-1]),
        "scores": step.scores.tolist(),
        "divided": step.divided.tolist(),
        "exps": step.exps.tolist(),
        "exp_sum": step.exps.sum().item(),
        "weights": weights,
        "weight_sum": sum(weights),
        "weight_the": weights[0],
        "weight_neighbour": weights[1],
        "weight_bank": weights[2],
        "bank_before": {"water": step.before[0].item(), "money": step.before[1].item()},
        "bank_after": {"water": after[0], "money": after[1]},
        "bank_after_vector": after,
        "water_after": after[0],
        "money_after": after[1],
        "fourth_after": after[3],
        "lean": lean,
        "leans": leans,
        "moved": (step.after - step.before).norm().item(),            # over all four numbers
        "moved_plane": (step.after[:2] - step.before[:2]).norm().item(),  # the figure's arrow
        "matrix": matrix.tolist(),
        "score_matrix": scores.tolist(),   # X X^T: every word's step 1 at once
        # each word's score with itself minus its best score with another word (row by row)
        "self_margin": [scores[i, i].item() - max(scores[i, j].item() for j in range(3) if j != i)
                        for i in range(3)],
        "projected": _projected(words),
        "custom_in_play": name == CUSTOM,
        "custom_moved": any(params[p] != d for p, d in CUSTOM_PARAMS),
    }
    return {"values": values, "figure": _figure(values, params["scaled"]),
            "summary": _summary(values, params["scaled"]), "table": _table(values, params["scaled"])}


def _projected(words) -> dict:
    """self_attention with W_Q = W_V = I and W_K = W_K_GENERIC, always divided by sqrt(d_k)."""
    eye = torch.eye(4, dtype=words.dtype)
    w_k = torch.tensor(W_K_GENERIC, dtype=words.dtype)
    out, A = rb.self_attention(words, eye, w_k, eye)                  # (3, 4), (3, 3)
    keys = words @ w_k                                                # (3, 4)
    scores = words @ keys.T                                           # (3, 3) q_i . k_j
    return {"keys": keys.tolist(), "scores": scores.tolist(), "matrix": A.tolist(),
            "weights": A[-1].tolist(), "bank_after": {"water": out[-1, 0].item(),
                                                      "money": out[-1, 1].item()}}


def _summary(v: dict, scaled: bool) -> str:
    w, n = v["weights"], v["words"][1]
    how = "divided by √4 = 2" if scaled else "not divided"
    if v["custom_in_play"]:
        where = ("With the custom word (" + ", ".join(f"{c:g}" for c in v["vectors"][1])
                 + ") between 'the' and bank")
        who = "the custom word"
    else:
        where, who = f"In 'the {n} bank'", n
    return (f"{where}, with the scores {how}, bank gives weight {w[0]:.3f} to 'the', "
            f"{w[1]:.3f} to {who} and {w[2]:.3f} to itself. It moves from water "
            f"{v['bank_before']['water']:.2f}, money {v['bank_before']['money']:.2f} to water "
            f"{v['water_after']:.2f}, money {v['money_after']:.2f}: it leans {v['leans']}."
            + ("" if v["custom_in_play"] or not v["custom_moved"] else
               " The custom word's sliders are not used while a named word is chosen."))


def _cell(x: float, fmt: str) -> str:
    text = format(x, fmt)
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.000"


def _table(v: dict, scaled: bool) -> dict:
    rows = []
    for i, word in enumerate(v["words"]):
        x = v["vectors"][i]
        rows.append([word, ", ".join(f"{c:g}" for c in x), _cell(v["scores"][i], ".2f"),
                     _cell(v["divided"][i], ".2f"), _cell(v["exps"][i], ".2f"),
                     _cell(v["weights"][i], ".3f"),
                     *(_cell(v["weights"][i] * c, ".3f") for c in x)])
    rows.append(["sum", "", "", "", _cell(v["exp_sum"], ".2f"), _cell(sum(v["weights"]), ".3f"),
                 *(_cell(c, ".3f") for c in v["bank_after_vector"])])
    return {
        "caption": "bank's three steps: score each word, "
                   + ("divide by √4 = 2, " if scaled else "skip the division, ")
                   + "exponentiate and normalise, then mix. The last four columns add up to "
                     "bank's new vector (water, money, generic, fourth).",
        "columns": ["word", "water, money, generic, fourth", "score bank·word",
                    "score ÷ 2" if scaled else "score (not divided)", "eˣ", "weight",
                    *(f"weight × {f}" for f in rb.FEATURES)],
        "rows": rows,
    }


def _label_side(x: float, y: float, lo: float, hi: float) -> str:
    """Where a point's label goes so that it stays inside the panel: below a point near the
    top, to the right of one near the left edge, to the left of one near the right edge."""
    span = hi - lo
    vertical = "bottom" if y > hi - 0.2 * span else "top"
    horizontal = ("right" if x < lo + 0.3 * span else "left" if x > hi - 0.3 * span
                  else "center")
    return f"{vertical} {horizontal}"


def _figure(v: dict, scaled: bool) -> dict:
    words, w = v["words"], v["weights"]
    colour = COLORS["scaled"] if scaled else COLORS["unscaled"]
    xs = [row[0] for row in v["vectors"]] + [v["water_after"]]
    ys = [row[1] for row in v["vectors"]] + [v["money_after"]]
    # Room for a word's label at the slider extremes: labels sit on the side facing the middle.
    lo = min(0.0, *xs, *ys) - 0.6
    hi = max(*xs, *ys) + 0.6
    before, after = v["bank_before"], v["bank_after"]
    corners = [0, 1, 2, 0]  # the, neighbour, bank (before), back to the
    data = [
        {"type": "bar", "x": words, "y": w, "name": "softmax weight",
         "marker": {"color": colour}, "text": [f"{p:.3f}" for p in w], "textposition": "outside",
         "hovertemplate": "%{x}: weight %{y:.3f}<extra></extra>", "showlegend": False},
        {"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [lo, hi], "xaxis": "x2",
         "yaxis": "y2", "name": "water = money (ambiguous)", "hoverinfo": "skip",
         "line": {"color": COLORS["guide"], "dash": "dot"}},
        {"type": "scatter", "mode": "lines", "x": [xs[i] for i in corners],
         "y": [ys[i] for i in corners], "xaxis": "x2", "yaxis": "y2", "fill": "toself",
         "fillcolor": "rgba(127, 127, 127, 0.12)", "line": {"color": COLORS["guide"], "width": 1},
         "name": "the three words' triangle", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers+text", "x": xs[:2], "y": ys[:2], "xaxis": "x2",
         "yaxis": "y2", "text": words[:2], "name": "context words", "cliponaxis": False,
         "textposition": [_label_side(x, y, lo, hi) for x, y in zip(xs[:2], ys[:2])],
         "marker": {"color": COLORS["guide"], "size": 10},
         "hovertemplate": "%{text}: water %{x:.2f}, money %{y:.2f}<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": [before["water"]], "y": [before["money"]],
         "xaxis": "x2", "yaxis": "y2", "name": "bank before",
         "marker": {"color": COLORS["accent"], "size": 12, "symbol": "circle-open",
                    "line": {"width": 3}},
         "hovertemplate": "bank before: water %{x:.2f}, money %{y:.2f}<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": [after["water"]], "y": [after["money"]],
         "xaxis": "x2", "yaxis": "y2", "name": "bank after",
         "marker": {"color": colour, "size": 13},
         "hovertemplate": "bank after: water %{x:.2f}, money %{y:.2f}<extra></extra>"},
    ]
    arrow = {"x": after["water"], "y": after["money"], "ax": before["water"],
             "ay": before["money"], "xref": "x2", "yref": "y2", "axref": "x2", "ayref": "y2",
             "showarrow": True, "arrowhead": 3, "arrowwidth": 2, "arrowcolor": colour, "text": ""}
    titles = [
        {"text": "bank's weights" + (" (scores ÷ 2)" if scaled else " (scores not divided)"),
         "showarrow": False, "x": 0.2, "y": 1.08, "xref": "paper", "yref": "paper",
         "xanchor": "center"},
        {"text": f"bank moves: leans {v['leans']}", "showarrow": False, "x": 0.78, "y": 1.08,
         "xref": "paper", "yref": "paper", "xanchor": "center"},
    ]
    layout = base_layout(
        height=420,
        xaxis={"domain": [0, 0.4], "title": {"text": "word bank attends to"}},
        yaxis={"range": [0, 1.1], "title": {"text": "weight"}},
        xaxis2={"domain": [0.55, 1], "range": [lo, hi], "anchor": "y2",
                "title": {"text": "water"}},
        yaxis2={"range": [lo, hi], "anchor": "x2", "title": {"text": "money"}},
        annotations=[*titles, arrow],
    )
    # On a phone the two panels stack instead of sitting side by side.
    narrow = {
        "height": 720,
        "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.64, 1]},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.44]},
        "legend": {"y": -0.1},
        "annotations": [{**titles[0], "x": 0.5, "y": 1.04}, {**titles[1], "x": 0.5, "y": 0.5},
                        arrow],
    }
    return {"data": data, "layout": layout, "narrow": narrow}
