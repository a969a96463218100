"""Widget: speculative decoding's arithmetic. An acceptance rate, a draft length and what a draft
step costs give the tokens one target pass yields and the speed-up over plain decoding, across
every draft length (backend/reference/speculative.py). Closed forms: microseconds."""

from __future__ import annotations

from backend.compute.spec import Output, Param, WidgetSpec
from backend.compute.style import COLORS, SERIES, base_layout
from backend.reference import speculative as sd

K_MAX = 16

SPEC = WidgetSpec(
    name="speculative",
    try_next=(
        "Lower `alpha` to 0.5 with `draft_cost` at 0.05: the best draft length falls to a few "
        "tokens, because a long draft is mostly refused; then raise `draft_cost` until no draft "
        "length beats plain decoding."
    ),
    title="Speculative decoding: tokens per target pass",
    description="Tokens one pass of the large model yields, and the speed-up over plain "
                "decoding, for an acceptance rate, a draft length and a draft model's cost.",
    params=(
        Param("alpha", "acceptance rate α", "float", default=0.8, min=0.0, max=0.99, step=0.01,
              help="The chance the large model keeps a drafted token (the same at every "
                   "position): the overlap of the two models' next-token distributions."),
        Param("k", "draft length k", "int", default=4, min=1, max=K_MAX, step=1, unit="tokens",
              help="Tokens the draft model proposes before the large model checks them."),
        Param("draft_cost", "draft step cost", "float", default=0.05, min=0.0, max=1.0,
              step=0.01, unit="× a target step",
              help="Time of one draft-model step as a share of one large-model step."),
    ),
    outputs=(
        Output("tokens_per_pass", "tokens per target pass", ".2f"),
        Output("speedup", "speed-up over plain decoding (×)", ".2f"),
        Output("best_k", "best draft length", "d"),
        Output("best_speedup", "speed-up at the best length (×)", ".2f"),
    ),
    bake=(
        tuple({"alpha": a} for a in (0.0, 0.3, 0.5, 0.6, 0.7, 0.9, 0.95, 0.99))
        + tuple({"k": k} for k in (1, 2, 3, 5, 6, 8, 12, 16))
        + tuple({"draft_cost": c} for c in (0.0, 0.01, 0.1, 0.2, 0.3, 0.5, 1.0))
        + ({"alpha": 0.5, "draft_cost": 0.05},)
    ),
)


def compute(params: dict) -> dict:
    alpha, k, c = params["alpha"], params["k"], params["draft_cost"]
    curve = [sd.speedup(alpha, j, c) for j in range(1, K_MAX + 1)]
    best = sd.best_k(alpha, c, K_MAX)
    v = {
        "alpha": alpha, "k": k, "draft_cost": c,
        "tokens_per_pass": sd.expected_tokens(alpha, k),
        "accepted_per_pass": sd.expected_tokens(alpha, k) - 1,
        "all_kept": alpha ** k,  # the chance all k are kept, and the free token comes
        "round_cost": k * c + 1.0,
        "speedup": sd.speedup(alpha, k, c),
        "best_k": best, "best_speedup": sd.speedup(alpha, best, c),
        "best_tokens_per_pass": sd.expected_tokens(alpha, best),
        "break_even_alpha": sd.break_even_alpha(k, c),
        "pays": sd.speedup(alpha, k, c) > 1.0,
        "any_pays": max(curve) > 1.0,
        "curve": curve,
        "tokens_curve": [sd.expected_tokens(alpha, j) for j in range(1, K_MAX + 1)],
    }
    return {"values": v, "figure": _figure(v), "summary": _summary(v), "table": _table(v)}


def _summary(v: dict) -> str:
    verdict = (f"{v['speedup']:.2f} times as fast as plain decoding" if v["pays"] else
               f"slower than plain decoding ({v['speedup']:.2f}×)")
    return (f"With α = {v['alpha']:.2f}, drafting k = {v['k']} tokens yields "
            f"{v['tokens_per_pass']:.2f} tokens per pass of the large model, for a round costing "
            f"{v['round_cost']:.2f} of its steps: {verdict}. The best draft length here is "
            f"{v['best_k']} ({v['best_speedup']:.2f}×).")


def _table(v: dict) -> dict:
    rows = [[str(j), f"{t:.2f}", f"{s:.2f}×"]
            for j, (t, s) in enumerate(zip(v["tokens_curve"], v["curve"]), start=1)]
    return {"caption": f"Speculative decoding at α = {v['alpha']:.2f}, draft step cost "
                       f"{v['draft_cost']:.2f}",
            "columns": ["draft length k", "tokens per target pass", "speed-up"], "rows": rows}


def _figure(v: dict) -> dict:
    ks = list(range(1, K_MAX + 1))
    data = [
        {"type": "scatter", "mode": "lines+markers", "x": ks, "y": v["curve"],
         "name": "speed-up", "line": {"color": COLORS["scaled"]},
         "hovertemplate": "k = %{x}: %{y:.2f}×<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [1, K_MAX], "y": [1, 1],
         "name": "plain decoding", "line": {"color": COLORS["unscaled"], "dash": "dot"},
         "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers", "x": [v["k"]], "y": [v["speedup"]],
         "name": f"k = {v['k']}", "marker": {"size": 13, "color": SERIES[3], "symbol": "circle-open",
                                              "line": {"width": 3}},
         "hovertemplate": "your k: %{y:.2f}×<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": [v["best_k"]], "y": [v["best_speedup"]],
         "name": f"best, k = {v['best_k']}", "marker": {"size": 10, "color": SERIES[2],
                                                       "symbol": "star"},
         "hovertemplate": "best k: %{y:.2f}×<extra></extra>"},
    ]
    top = max(max(v["curve"]), 1.0)
    layout = base_layout(
        380, xaxis={"title": {"text": "draft length k (tokens)"}, "dtick": 1, "range": [0.5, K_MAX + 0.5]},
        yaxis={"title": {"text": "speed-up (×)"}, "range": [0, 1.15 * top], "rangemode": "tozero"},
    )
    return {"data": data, "layout": layout,
            "narrow": {"xaxis": {"dtick": 2}, "legend": {"orientation": "h", "y": -0.3},
                       "margin": {"b": 90}}}
