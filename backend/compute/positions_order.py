"""Widget: dog bites man. Attention alone is blind to word order; a position signal is what
tells "dog" at the start of a sentence from "dog" at its end.

One control, the strength of the sinusoids added to the three word vectors. Left: "dog" after
attention in both word orders with no position signal (the bars coincide). Right: the same with
the signal at the chosen strength.
"""

from __future__ import annotations

from backend.compute.spec import Output, Param, WidgetSpec
from backend.compute.style import COLORS, base_layout
from backend.reference import order

SENTENCE, SWAPPED = ["dog", "bites", "man"], ["man", "bites", "dog"]
TINY = 0.01                                # the handout's "Try": a position signal 100x weaker
# order.WORD_VECTORS' four columns, named for what each hand-picked number says of a word (the
# chapter says so beside the table): dim 0 is large for an animal, dim 1 for an action, dim 2
# for a person; dim 3 is 0 in every word, so only a position signal can move it.
COORDS = ("dim 0 (animal)", "dim 1 (action)", "dim 2 (person)", "dim 3 (blank)")
TICKS = tuple(c.replace(" (", "<br>(") for c in COORDS)  # two lines: upright, never cut off

SPEC = WidgetSpec(
    name="positions_order",
    title="Dog bites man: what attention sees of word order",
    description="The vector attention gives \"dog\" in \"dog bites man\" and in \"man bites "
                "dog\", without a position signal and with one of the chosen strength.",
    try_next=(
        "Lower `strength` towards 0 and watch the two bars of each pair on the right close up: "
        "at 0 the two sentences give \"dog\" the same vector again."
    ),
    params=(
        Param("strength", "position signal strength", "float", default=1.0, min=0.0, max=2.0,
              step=0.01, help="How strongly the sinusoids are added to the three word vectors: "
                              "1 adds them as they are, 0 adds nothing."),
    ),
    outputs=(
        # one format for both: at strength 0 they are the same computation and must read the same
        # (".3f" showed 0.000 beside 5.6e-17)
        Output("order_gap_without", "largest difference between the two dogs, no position "
                                    "signal", ".3g"),
        Output("order_gap_with", "largest difference between the two dogs, with the signal",
               ".3g"),
    ),
    bake=tuple({"strength": v} for v in (0.0, 0.01, 0.05, 0.1, 0.2, 0.5, 0.75, 1.5, 2.0)),
)


def compute(params: dict) -> dict:
    strength = params["strength"]
    dog = {label: order.vector_of("dog", words, s)
           for label, words, s in (("without", SENTENCE, None),
                                   ("without_swapped", SWAPPED, None),
                                   ("with", SENTENCE, strength),
                                   ("with_swapped", SWAPPED, strength),
                                   ("tiny", SENTENCE, TINY),
                                   ("tiny_swapped", SWAPPED, TINY))}
    gap = lambda a, b: float((dog[a] - dog[b]).abs().max())  # noqa: E731
    values = {
        "dog": {key: vec.tolist() for key, vec in dog.items()},
        "order_gap_without": gap("without", "without_swapped"),
        "order_gap_with": gap("with", "with_swapped"),
        "order_gap_tiny": gap("tiny", "tiny_swapped"),
    }
    same = values["order_gap_with"] < 5e-4  # equal at the summary's three decimals
    return {
        "values": values,
        "figure": _figure(values["dog"], strength),
        "summary": (
            "Without a position signal, attention gives \"dog\" the same vector in \"dog bites "
            "man\" and \"man bites dog\" (the largest difference is "
            f"{values['order_gap_without']:.3g}, float64 rounding). With the sinusoids added at "
            f"strength {strength:g}, "
            + ("the two vectors are still the same." if same else
               f"the largest difference is {values['order_gap_with']:.3g}.")),
        "table": {
            "caption": "The vector of \"dog\" after attention",
            "columns": ["position signal", "sentence", *COORDS],
            "rows": [[label, sentence, *(round(x, 4) for x in values["dog"][key])]
                     for label, key, sentence in (
                         ("none", "without", "dog bites man"),
                         ("none", "without_swapped", "man bites dog"),
                         (f"strength {strength:g}", "with", "dog bites man"),
                         (f"strength {strength:g}", "with_swapped", "man bites dog"))],
        },
    }


def _figure(dog: dict, strength: float) -> dict:
    data = []
    for axis, (first, second), shown in (("", ("without", "without_swapped"), True),
                                         ("2", ("with", "with_swapped"), False)):
        for key, name, color in ((first, "dog bites man", COLORS["scaled"]),
                                 (second, "man bites dog", COLORS["accent"])):
            data.append({"type": "bar", "x": list(TICKS), "y": [round(v, 4) for v in dog[key]],
                         "name": name, "marker": {"color": color}, "legendgroup": name,
                         "showlegend": shown, "xaxis": f"x{axis}", "yaxis": f"y{axis}",
                         "hovertemplate": f"{name}<br>%{{x}}: %{{y}}<extra></extra>"})
    top = max(max(v) for v in dog.values() if v) * 1.1
    low = min(0.0, min(min(v) for v in dog.values() if v) * 1.1)
    layout = base_layout(
        380, barmode="group",
        xaxis={"domain": [0, 0.46]}, yaxis={"title": {"text": "\"dog\" after attention"},
                                            "range": [low, top]},
        xaxis2={"domain": [0.54, 1], "anchor": "y2"},
        yaxis2={"anchor": "x2", "range": [low, top], "matches": "y"},
        annotations=[
            {"text": "no position signal", "showarrow": False, "x": 0.23, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": f"sinusoids added, strength {strength:g}", "showarrow": False, "x": 0.77,
             "y": 1.08, "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
    )
    narrow = {
        "height": 620,
        "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.58, 1]},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.42]},
        "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.05},
                        {**layout["annotations"][1], "x": 0.5, "y": 0.46}],
    }
    return {"data": data, "layout": layout, "narrow": narrow}
