"""Widget: why attention divides by sqrt(d_k).

Draws random unit-variance queries and keys at the chosen head size, measures the variance of
their dot products with and without the 1/sqrt(d_k) factor, and shows what each does to a
softmax over `n_positions` scores: how peaked it is, and how much gradient reaches its scores
compared with an even (all-equal) row over the same number of positions.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from backend.compute.spec import Output, Param, WidgetSpec, seed_param
from backend.compute.style import COLORS, base_layout
from backend.device import device
from backend.reference import river_bank, scaling
from backend.reference.rng import isolated_rng

SPEC = WidgetSpec(
    name="attention_scaling",
    try_next=(
        "Raise `d_k` towards 1024: unscaled scores spread in proportion to √d_k and the softmax "
        "piles onto one position, while the scaled scores keep a spread near 1 at every width."
    ),
    title="Why divide by √dₖ",
    description="Variance of q·k and the softmax it feeds, with and without the 1/√d_k factor.",
    params=(
        Param("d_k", "head dim d_k", "int", default=64, min=1, max=1024, step=1, scale="log2",
              help="Length of each query and key vector: the d_k of one head, not the model's "
                   "width."),
        Param("n_positions", "positions", "int", default=8, min=2, max=512, step=1,
              scale="log2", help="How many keys one query's softmax spreads over."),
        seed_param(9999,
                   help="Seed of the random draw; the same seed always gives the same numbers."),
    ),
    # Pairs first (unscaled, then scaled), the references after them.
    outputs=(
        Output("var_unscaled", "Var(q·k)", ".2f"),
        Output("var_scaled", "Var(q·k/√d_k)", ".3f"),
        Output("max_prob_unscaled", "max weight, unscaled", ".4f"),
        Output("max_prob_scaled", "max weight, scaled", ".4f"),
        Output("entropy_unscaled", "entropy, unscaled", ".3f", "nats"),
        Output("entropy_scaled", "entropy, scaled", ".3f", "nats"),
        Output("saturated_unscaled", "rows ≥ 99% on one key, unscaled", ".0%"),
        Output("saturated_scaled", "rows ≥ 99% on one key, scaled", ".0%"),
        Output("grad_unscaled", "median score gradient ÷ even row's, unscaled", ".3g"),
        Output("grad_scaled", "median score gradient ÷ even row's, scaled", ".3g"),
        Output("starved_unscaled", "rows < 1/10 of even row's gradient, unscaled", ".0%"),
        Output("starved_scaled", "rows < 1/10 of even row's gradient, scaled", ".0%"),
        Output("grad_q_ratio", "median gradient at the query, unscaled ÷ scaled", ".2g"),
        Output("query_starved", "rows whose query gets < 1/10 of the scaled gradient, unscaled",
               ".0%"),
        Output("entropy_uniform", "entropy of an even row", ".3f", "nats"),
        Output("n_pairs", "pairs drawn for the variance", ",d"),
        Output("n_queries", "queries drawn for the softmax", ",d"),
        Output("n_key_sets", "key sets they are spread over", ",d"),
        Output("n_query_rows", "of them, rows measured at the query", ",d"),
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
MIN_QUERIES = 256             # the floor where the budget runs out (big heads, long rows)
KEY_ELEMENTS = 4_194_304      # n_sequences * n_positions * d_k: 8 key sets at 1024 x 512
QUERY_ROWS = 4096            # rows whose gradient at the query is measured (at most: all of them)
CURVE_DIMS = tuple(2 ** i for i in range(11))  # 1 .. 1024
TOP_RANKS = 16                # ranks drawn one by one; the rest are summed into one bar
HANDOUT_DIMS = (4, 64, 512)   # handout 003's experiment: NumPy default_rng(0), 100,000 pairs
HANDOUT_PAIRS = 100_000


def n_pairs_for(d_k: int) -> int:
    return min(MAX_PAIRS, max(1000, VARIANCE_ELEMENTS // d_k))


def curve_pairs_for(d_k: int) -> int:
    """Fewer pairs per point of the background curve: eleven points are drawn per seed."""
    return min(4000, n_pairs_for(d_k))


def queries_for(d_k: int, n_positions: int) -> tuple[int, int]:
    """(n_sequences, n_queries): as many queries as the budget allows, at least MIN_QUERIES."""
    per_query = n_positions * d_k
    total = max(MIN_QUERIES, min(4096, SCORE_FLOPS // per_query))
    n_sequences = max(1, min(32, total // 8, KEY_ELEMENTS // per_query))
    if total == MIN_QUERIES:  # at the floor, round up: never fewer than MIN_QUERIES
        return n_sequences, -(-total // n_sequences)
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


def handout_values() -> dict:
    """Handout 003's NumPy experiment, reproduced (seconds once per process, then cached)."""
    runs = scaling.numpy_variance_experiment(HANDOUT_DIMS, HANDOUT_PAIRS, 0)
    values = {"handout_pairs": HANDOUT_PAIRS}
    for d, (u, s) in zip(HANDOUT_DIMS, runs):
        values[f"handout_var_unscaled_{d}"] = u
        values[f"handout_var_scaled_{d}"] = s
    return values


INIT_D_MODEL = 512     # the width a 64-wide head is cut from, for the initialisation check
INIT_ROWS = 20_000
GPT2_D_MODEL, GPT2_STD = 768, 0.02   # GPT-2's initialisation: weights N(0, 0.02^2)


@lru_cache(maxsize=1)
def init_values() -> tuple:
    """What a query's entries look like at initialisation, rather than assumed unit-variance:
    Var(q) for q = W_Q x with PyTorch's default nn.Linear(512, 64) on unit-variance x (measured,
    seed 0, on the CPU), and GPT-2's N(0, 0.02^2) weights at width 768 (exact: d * std^2)."""
    with isolated_rng(0):
        layer = torch.nn.Linear(INIT_D_MODEL, 64, bias=False)
        x = torch.randn(INIT_ROWS, INIT_D_MODEL)
        with torch.no_grad():
            var_default = layer(x).double().var().item()
    return var_default, GPT2_D_MODEL * GPT2_STD ** 2


@lru_cache(maxsize=1)
def init_collapse() -> tuple:
    """(saturated, starved) shares of unscaled rows for a 64-wide head over 8 positions whose
    queries and keys have the variance PyTorch's default initialisation gives (init_values()),
    measured directly: 4,096 queries against 32 sets of keys, float64, seeded."""
    sd = init_values()[0] ** 0.5
    g = scaling.make_generator(7, "cpu")
    q = sd * torch.randn(32, 128, 64, generator=g, dtype=torch.float64)
    k = sd * torch.randn(32, 8, 64, generator=g, dtype=torch.float64)
    stats = scaling.weight_stats(torch.softmax(q @ k.transpose(-2, -1), -1))
    return stats.saturated, stats.starved


@lru_cache(maxsize=1)
def _handout_000() -> tuple:
    return tuple(scaling.handout_000_draw(0).items())


def handout_000_values() -> dict:
    """Handout 000's box (seeded torch draw), reproduced: keys prefixed with handout000_."""
    return {f"handout000_{k}": v for k, v in _handout_000()}


def compute(params: dict) -> dict:
    d_k, n_pos, seed = params["d_k"], params["n_positions"], params["seed"]
    dev = device()
    g = scaling.make_generator(seed, dev)

    n_pairs = n_pairs_for(d_k)
    var_unscaled, var_scaled = scaling.dot_product_variance(d_k, n_pairs, g, dev)

    n_seq, n_q = queries_for(d_k, n_pos)
    q, k = scaling.random_queries_and_keys(d_k, n_pos, n_seq, n_q, g, dev)
    scores = (q @ k.transpose(-2, -1)).double()                       # (S, Q, T)
    p_raw = torch.softmax(scores, dim=-1)
    p_cooled = torch.softmax(scores / math.sqrt(d_k), dim=-1)
    raw, cooled = scaling.weight_stats(p_raw), scaling.weight_stats(p_cooled)
    # One step further back: the gradient each row sends to its query (and so to W_Q), on the
    # first QUERY_ROWS queries (spread over every key set), to keep the request's work small.
    per_set = -(-QUERY_ROWS // n_seq)
    keys, sub = k.double(), slice(0, per_set)
    at_q = (scaling.query_gradient(p_raw[:, sub], keys, 1.0)
            / scaling.query_gradient(p_cooled[:, sub], keys, 1 / math.sqrt(d_k)))

    values = {
        "var_unscaled": var_unscaled,
        "var_scaled": var_scaled,
        "var_standard_error": scaling.variance_standard_error(d_k, n_pairs),
        "max_prob_unscaled": raw.max_prob,
        "max_prob_scaled": cooled.max_prob,
        "entropy_unscaled": raw.entropy,
        "entropy_scaled": cooled.entropy,
        "saturated_unscaled": raw.saturated,
        "saturated_scaled": cooled.saturated,
        "grad_unscaled": raw.gradient,
        "grad_scaled": cooled.gradient,
        "starved_unscaled": raw.starved,
        "starved_scaled": cooled.starved,
        "grad_q_ratio": at_q.flatten().median().item(),
        "query_starved": (at_q < scaling.STARVED).double().mean().item(),
        "score_sd": math.sqrt(var_unscaled),
        "sqrt_d_k": math.sqrt(d_k),
        "entropy_uniform": scaling.uniform_entropy(n_pos),
        "max_prob_uniform": 1 / n_pos,
        "n_pairs": n_pairs,
        "n_queries": n_seq * n_q,
        "n_key_sets": n_seq,
        "n_query_rows": at_q.numel(),
    }
    tail = _tail(raw.sorted_probs), _tail(cooled.sorted_probs)
    return {
        "values": values,
        "figure": _figure(d_k, n_pos, seed, values, raw, cooled, tail),
        "summary": _summary(d_k, n_pos, values),
        "table": _table(d_k, n_pos, values, tail),
    }


ALIGNED_CORRELATION = 0.5  # how far each key leans towards its query, entry by entry
OVERFLOW_DTYPES = {"float16": torch.float16, "float32": torch.float32}
SUMS_TO_ONE = 1e-2  # a row's weights sum to 1 within float16's rounding (far under this)


def overflow_values(d_k: int, n_pos: int, seed: int) -> dict:
    """On the widget's own draw (compute's generator order), the share of rows whose softmax,
    written out as the self-attention chapter's table computes it, is broken, unscaled and
    scaled; and the same with each row's largest score subtracted first. A row is broken when
    its weights do not sum to about 1: an e^x too large for the dtype makes that weight ∞/∞ =
    NaN (and the others finite/∞ = 0), and in float16 the row's sum can overflow with no single
    term overflowing, every weight then 0. Also the number of rows, and the largest score whose
    e^x each dtype holds, ln(its largest number)."""
    dev = device()
    g = scaling.make_generator(seed, dev)
    scaling.dot_product_variance(d_k, n_pairs_for(d_k), g, dev)
    scores = scaling.random_scores(d_k, n_pos, *queries_for(d_k, n_pos), g, dev)  # (S, Q, T)

    def broken(weights: torch.Tensor) -> float:
        sums = weights.double().sum(dim=-1)                       # NaN where a weight is NaN
        return (~((sums - 1).abs() < SUMS_TO_ONE)).double().mean().item()

    values = {"overflow_scaled": 0.0, "overflow_stable": 0.0,  # the larger of the two dtypes'
              "overflow_rows": scores[..., 0].numel()}
    for name, dtype in OVERFLOW_DTYPES.items():
        scaled = broken(river_bank.softmax_written_out((scores / math.sqrt(d_k)).to(dtype)))
        stable = broken(river_bank.softmax_stable(scores.to(dtype)))
        unscaled = broken(river_bank.softmax_written_out(scores.to(dtype)))
        values.update({
            f"overflow_{name}_unscaled": unscaled,
            f"overflow_{name}_unscaled_rows": round(unscaled * values["overflow_rows"]),
            f"overflow_{name}_scaled": scaled,
            f"overflow_{name}_stable": stable,
            "overflow_scaled": max(values["overflow_scaled"], scaled),
            "overflow_stable": max(values["overflow_stable"], stable),
            f"exp_limit_{name}": math.log(torch.finfo(dtype).max),
        })
    return values


def facts(params: dict) -> dict:
    """Values only the prose quotes (`{{ value(...) }}`), worked out when the book is built and
    never per request: the handouts' experiments reproduced (handout 003's NumPy draw alone
    takes seconds), what a query looks like at initialisation, and scores whose keys lean
    towards their queries, as training makes them."""
    d_k = params["d_k"]
    aligned = scaling.aligned_score_means(d_k, n_pairs_for(d_k), ALIGNED_CORRELATION,
                                          scaling.make_generator(params["seed"] + 2))
    return {
        **overflow_values(d_k, params["n_positions"], params["seed"]),
        "aligned_correlation": ALIGNED_CORRELATION,
        "aligned_mean_scaled": aligned[0],
        "aligned_mean_over_d": aligned[1],
        "linear_init_var": init_values()[0],
        "linear_init_score_var": params["d_k"] * init_values()[0] ** 2,
        "gpt2_init_var": init_values()[1],
        "init_saturated": init_collapse()[0],
        "init_starved": init_collapse()[1],
        **handout_000_values(),
        **handout_values(),
    }


def _tail(sorted_probs: list) -> float | None:
    """Mean weight held by all ranks after TOP_RANKS together (None if there are none)."""
    return sum(sorted_probs[TOP_RANKS:]) if len(sorted_probs) > TOP_RANKS else None


def _rank_categories(n_pos: int) -> list[str]:
    shown = [str(r) for r in range(1, min(n_pos, TOP_RANKS) + 1)]
    if n_pos > TOP_RANKS:
        shown.append(f"{TOP_RANKS + 1}–{n_pos}" if n_pos > TOP_RANKS + 1 else str(n_pos))
    return shown


def _bars(sorted_probs: list, tail: float | None) -> list[float]:
    return sorted_probs[:TOP_RANKS] + ([tail] if tail is not None else [])


def _figure(d_k, n_pos, seed, values, raw, cooled, tail) -> dict:
    curve_u, curve_s = variance_curve(seed)
    cats = _rank_categories(n_pos)
    even = [1 / n_pos] * min(n_pos, TOP_RANKS)
    if n_pos > TOP_RANKS:
        even.append((n_pos - TOP_RANKS) / n_pos)
    unscaled, scaled, guide = COLORS["unscaled"], COLORS["scaled"], COLORS["guide"]
    data = [
        {"type": "scatter", "mode": "lines+markers", "x": list(CURVE_DIMS), "y": list(curve_u),
         "name": "Var(q·k)", "line": {"color": unscaled, "width": 2},
         "marker": {"size": 6}, "legendgroup": "var"},
        {"type": "scatter", "mode": "lines+markers", "x": list(CURVE_DIMS), "y": list(curve_s),
         "name": "Var(q·k/√d_k)", "line": {"color": scaled, "width": 2},
         "marker": {"size": 6}, "legendgroup": "var"},
        # Drawn after the red curve it tracks, dashed and with its own hollow markers, so it
        # shows on top of the curve instead of hiding under it.
        {"type": "scatter", "mode": "lines+markers", "x": list(CURVE_DIMS), "y": list(CURVE_DIMS),
         "name": "d_k (theory)", "line": {"color": guide, "dash": "dash", "width": 2},
         "marker": {"symbol": "diamond-open", "size": 9, "color": guide, "line": {"width": 1.5}},
         "hoverinfo": "skip", "legendgroup": "var"},
        # The reader's current head size: the only thing on this panel that d_k moves.
        {"type": "scatter", "mode": "markers", "x": [d_k, d_k],
         "y": [values["var_unscaled"], values["var_scaled"]], "name": f"d_k = {d_k}",
         "marker": {"size": 14, "symbol": "circle-open", "line": {"width": 3},
                    "color": COLORS["accent"]}, "showlegend": False,
         "hovertemplate": "your d_k=%{x}<br>variance %{y:.3f}<extra></extra>"},
        {"type": "bar", "x": cats, "y": _bars(raw.sorted_probs, tail[0]), "name": "softmax(q·k)",
         "marker": {"color": unscaled}, "xaxis": "x2", "yaxis": "y2", "legendgroup": "sm",
         "hovertemplate": "rank %{x}: %{y:.3f}<extra>unscaled</extra>"},
        {"type": "bar", "x": cats, "y": _bars(cooled.sorted_probs, tail[1]),
         "name": "softmax(q·k/√d_k)", "marker": {"color": scaled}, "xaxis": "x2", "yaxis": "y2",
         "legendgroup": "sm", "hovertemplate": "rank %{x}: %{y:.3f}<extra>scaled</extra>"},
        {"type": "scatter", "mode": "markers", "x": cats, "y": even, "name": "even split",
         "marker": {"symbol": "line-ew-open", "size": 22, "color": guide, "line": {"width": 2}},
         "xaxis": "x2", "yaxis": "y2", "legendgroup": "sm",
         "hovertemplate": "even split: %{y:.3f}<extra></extra>"},
    ]
    rank_title = "rank of the weight (largest first)"
    if n_pos > TOP_RANKS:  # short enough to fit under the half-width panel
        rank_title = f"rank (largest first); last: {cats[-1]} summed"
    layout = base_layout(
        440,
        barmode="group",
        xaxis={"domain": [0, 0.45], "type": "log", "title": {"text": "head dim d_k"},
               "tickvals": list(CURVE_DIMS)},
        # dtick 1: a label at each power of ten only (no stray "2" and "5" minor labels)
        yaxis={"type": "log", "title": {"text": "variance of the score"}, "dtick": 1,
               "automargin": True},
        xaxis2={"domain": [0.58, 1], "type": "category", "anchor": "y2", "automargin": True,
                "title": {"text": rank_title}},
        yaxis2={"anchor": "x2", "range": [0, 1], "title": {"text": "mean softmax weight"}},
        annotations=[
            {"text": "score variance grows with d_k", "showarrow": False, "x": 0.22, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": f"softmax over {n_pos} positions at d_k = {d_k}", "showarrow": False,
             "x": 0.79, "y": 1.08, "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
    )
    # On a phone the two panels stack instead of sitting side by side.
    # The legend goes below the bottom axis title (which the phone width can wrap), and the
    # variance axis gets a short title so it stays clear of its tick labels.
    narrow = {
        "height": 800,
        "margin": {"l": 60, "r": 10, "t": 40, "b": 170},
        "xaxis": {"domain": [0, 1]},
        "yaxis": {"domain": [0.62, 1], "title": {"text": "variance", "standoff": 6}},
        "xaxis2": {"domain": [0, 1], "title": {"text": rank_title if n_pos <= TOP_RANKS else
                                               f"rank; last bar: {cats[-1]} summed"}},
        "yaxis2": {"domain": [0, 0.38]},
        "legend": {"y": -0.14, "yanchor": "top"},
        "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.04},
                        {**layout["annotations"][1], "x": 0.5, "y": 0.43}],
    }
    return {"data": data, "layout": layout, "narrow": narrow}


def _summary(d_k: int, n_pos: int, v: dict) -> str:
    return (
        f"At head size {d_k}, the unscaled scores have variance {v['var_unscaled']:.1f} and the "
        f"scaled ones {v['var_scaled']:.2f}. Over {n_pos} positions the unscaled softmax puts "
        f"{v['max_prob_unscaled']:.0%} of a row's weight on its largest key on average and "
        f"{v['starved_unscaled']:.0%} of its rows get under a tenth of an even row's gradient; "
        f"the scaled softmax puts {v['max_prob_scaled']:.0%} there and starves "
        f"{v['starved_scaled']:.0%} of its rows."
    )


def _table(d_k: int, n_pos: int, v: dict, tail) -> dict:
    rows = [
        ["variance of the score", f"{v['var_unscaled']:.2f}", f"{v['var_scaled']:.3f}",
         f"{d_k} unscaled, 1 scaled (theory)"],
        ["mean largest weight", f"{v['max_prob_unscaled']:.4f}", f"{v['max_prob_scaled']:.4f}",
         f"{v['max_prob_uniform']:.4f}"],
        ["mean entropy (nats)", f"{v['entropy_unscaled']:.3f}", f"{v['entropy_scaled']:.3f}",
         f"{v['entropy_uniform']:.3f}"],
        ["rows with ≥ 99% on one key", f"{v['saturated_unscaled']:.1%}",
         f"{v['saturated_scaled']:.1%}", "0%"],
        ["median score gradient ÷ even row's", f"{v['grad_unscaled']:.3g}",
         f"{v['grad_scaled']:.3g}", "1"],
        ["rows under 1/10 of an even row's gradient", f"{v['starved_unscaled']:.1%}",
         f"{v['starved_scaled']:.1%}", "0%"],
    ]
    if tail[0] is not None:
        rows.append([f"weight on ranks {_rank_categories(n_pos)[-1]} together", f"{tail[0]:.3f}",
                     f"{tail[1]:.3f}", f"{(n_pos - TOP_RANKS) / n_pos:.3f}"])
    return {
        "caption": (f"Random queries and keys at d_k = {d_k}, softmax over {n_pos} positions "
                    f"({v['n_pairs']:,} pairs for the variance, {v['n_queries']:,} queries "
                    "for the softmax)."),
        "columns": ["quantity", "unscaled q·k", "scaled q·k/√d_k", "even row / theory"],
        "rows": rows,
    }
