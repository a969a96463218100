"""Widget: why attention divides by sqrt(d_k).

Draws random unit-variance queries and keys at the chosen head size, measures the variance of
their dot products with and without the 1/sqrt(d_k) factor, and shows what each does to a
softmax over `n_positions` scores.
"""

from __future__ import annotations

import math
from functools import lru_cache

from backend.device import device
from backend.reference import scaling
from backend.widgets.spec import Output, Param, WidgetSpec

SPEC = WidgetSpec(
    name="attention_scaling",
    title="Why divide by √dₖ",
    description="Variance of q·k and the softmax it feeds, with and without the 1/√d_k factor.",
    params=(
        Param("d_k", "head dim d_k", "int", default=64, min=1, max=1024, step=1, scale="log2",
              help="Length of each query and key vector."),
        Param("n_positions", "positions", "int", default=8, min=2, max=512, step=1,
              scale="log2", help="How many keys one query's softmax spreads over."),
        Param("seed", "seed", "int", default=0, min=0, max=9999, step=1,
              help="Seed of the random draw; the same seed always gives the same numbers."),
    ),
    outputs=(
        Output("var_unscaled", "Var(q·k)", ".2f"),
        Output("var_scaled", "Var(q·k/√d_k)", ".3f"),
        Output("max_prob_unscaled", "max weight, unscaled", ".4f"),
        Output("max_prob_scaled", "max weight, scaled", ".4f"),
        Output("entropy_unscaled", "entropy, unscaled", ".3f", "nats"),
        Output("entropy_scaled", "entropy, scaled", ".3f", "nats"),
        Output("entropy_uniform", "entropy, uniform", ".3f", "nats"),
        Output("grad_unscaled", "‖∂softmax/∂score‖, unscaled", ".3g"),
        Output("grad_scaled", "‖∂softmax/∂score‖, scaled", ".3g"),
        Output("saturated_unscaled", "rows ≥ 99% on one key, unscaled", ".1%"),
        Output("saturated_scaled", "rows ≥ 99% on one key, scaled", ".1%"),
    ),
    # Baked for readers without the API: every power-of-two head size, and a sweep of context
    # lengths at the default head size. The page snaps to the nearest of these when offline.
    bake=tuple({"d_k": 2 ** i} for i in range(11))
    + tuple({"n_positions": 2 ** i} for i in range(1, 10)),
)

# Work per request is bounded by element budgets, not by trusting the sliders' ranges alone.
VARIANCE_ELEMENTS = 640_000   # d_k * n_pairs per operand: 10,000 pairs at d_k = 64
MAX_PAIRS = 10_000
SCORE_FLOPS = 16_000_000      # n_sequences * n_queries * n_positions * d_k
CURVE_DIMS = tuple(2 ** i for i in range(11))  # 1 .. 1024


def n_pairs_for(d_k: int) -> int:
    return min(MAX_PAIRS, max(1000, VARIANCE_ELEMENTS // d_k))


def curve_pairs_for(d_k: int) -> int:
    """Fewer pairs per point of the background curve: eleven points are drawn per seed."""
    return min(4000, n_pairs_for(d_k))


def queries_for(d_k: int, n_positions: int) -> tuple[int, int]:
    """(n_sequences, n_queries): as many queries as the budget allows, at least 64 in all."""
    per_query = n_positions * d_k
    total = max(64, min(4096, SCORE_FLOPS // per_query))
    n_sequences = min(32, total // 8) or 1
    return n_sequences, max(1, total // n_sequences)


@lru_cache(maxsize=32)
def variance_curve(seed: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Var(q.k) unscaled and scaled for d_k = 1, 2, 4, ..., 1024 (cached: depends on seed only)."""
    g = scaling.make_generator(seed + 1, device())
    unscaled, scaled = [], []
    for d in CURVE_DIMS:
        u, s = scaling.dot_product_variance(d, curve_pairs_for(d), g, device())
        unscaled.append(u)
        scaled.append(s)
    return tuple(unscaled), tuple(scaled)


def compute(params: dict) -> dict:
    d_k, n_pos, seed = params["d_k"], params["n_positions"], params["seed"]
    dev = device()
    g = scaling.make_generator(seed, dev)

    n_pairs = n_pairs_for(d_k)
    var_unscaled, var_scaled = scaling.dot_product_variance(d_k, n_pairs, g, dev)

    n_seq, n_q = queries_for(d_k, n_pos)
    scores = scaling.random_scores(d_k, n_pos, n_seq, n_q, g, dev)  # (S, Q, T)
    raw = scaling.softmax_stats(scores)
    cooled = scaling.softmax_stats(scores / math.sqrt(d_k))

    values = {
        "var_unscaled": var_unscaled,
        "var_scaled": var_scaled,
        "max_prob_unscaled": raw.max_prob,
        "max_prob_scaled": cooled.max_prob,
        "entropy_unscaled": raw.entropy,
        "entropy_scaled": cooled.entropy,
        "entropy_uniform": scaling.uniform_entropy(n_pos),
        "grad_unscaled": raw.jacobian_norm,
        "grad_scaled": cooled.jacobian_norm,
        "saturated_unscaled": raw.saturated,
        "saturated_scaled": cooled.saturated,
        "n_pairs": n_pairs,
        "n_queries": n_seq * n_q,
    }
    return {"values": values, "figure": _figure(d_k, n_pos, seed, values, raw, cooled)}


UNSCALED, SCALED, GUIDE = "#d62728", "#1f77b4", "#7f7f7f"


def _figure(d_k, n_pos, seed, values, raw, cooled) -> dict:
    curve_u, curve_s = variance_curve(seed)
    ranks = list(range(1, n_pos + 1))
    data = [
        {"type": "scatter", "mode": "lines", "x": list(CURVE_DIMS), "y": list(CURVE_DIMS),
         "name": "d_k (theory)", "line": {"color": GUIDE, "dash": "dot"}, "hoverinfo": "skip",
         "legendgroup": "var"},
        {"type": "scatter", "mode": "lines+markers", "x": list(CURVE_DIMS), "y": list(curve_u),
         "name": "Var(q·k)", "line": {"color": UNSCALED}, "legendgroup": "var"},
        {"type": "scatter", "mode": "lines+markers", "x": list(CURVE_DIMS), "y": list(curve_s),
         "name": "Var(q·k/√d_k)", "line": {"color": SCALED}, "legendgroup": "var"},
        {"type": "scatter", "mode": "markers", "x": [d_k, d_k],
         "y": [values["var_unscaled"], values["var_scaled"]], "name": f"d_k = {d_k}",
         "marker": {"size": 13, "symbol": "circle-open", "line": {"width": 3},
                    "color": "#000"}, "showlegend": False,
         "hovertemplate": "d_k=%{x}<br>variance %{y:.3f}<extra></extra>"},
        {"type": "bar", "x": ranks, "y": raw.sorted_probs, "name": "softmax(q·k)",
         "marker": {"color": UNSCALED}, "xaxis": "x2", "yaxis": "y2", "legendgroup": "sm"},
        {"type": "bar", "x": ranks, "y": cooled.sorted_probs, "name": "softmax(q·k/√d_k)",
         "marker": {"color": SCALED}, "xaxis": "x2", "yaxis": "y2", "legendgroup": "sm"},
        {"type": "scatter", "mode": "lines", "x": [0.5, n_pos + 0.5], "y": [1 / n_pos] * 2,
         "name": "uniform 1/T", "line": {"color": GUIDE, "dash": "dot"}, "xaxis": "x2",
         "yaxis": "y2", "hoverinfo": "skip", "legendgroup": "sm"},
    ]
    layout = {
        "margin": {"l": 55, "r": 10, "t": 40, "b": 50},
        "height": 420,
        "barmode": "group",
        "legend": {"orientation": "h", "y": -0.2},
        "xaxis": {"domain": [0, 0.45], "type": "log", "title": {"text": "head dim d_k"},
                  "tickvals": list(CURVE_DIMS)},
        "yaxis": {"type": "log", "title": {"text": "variance of the score"}},
        "xaxis2": {"domain": [0.58, 1], "title": {"text": "rank of the weight (largest first)"},
                   "anchor": "y2"},
        "yaxis2": {"anchor": "x2", "range": [0, 1], "title": {"text": "mean softmax weight"}},
        "annotations": [
            {"text": "score variance grows with d_k", "showarrow": False, "x": 0.22, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": f"softmax over {n_pos} positions at d_k = {d_k}", "showarrow": False,
             "x": 0.79, "y": 1.08, "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
    }
    # On a phone the two panels stack instead of sitting side by side.
    narrow = {
        "height": 700,
        "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.62, 1]},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.38]},
        "legend": {"y": -0.12},
        "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.04},
                        {**layout["annotations"][1], "x": 0.5, "y": 0.43}],
    }
    return {"data": data, "layout": layout, "narrow": narrow}
