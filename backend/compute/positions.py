"""Widget: where order comes from — sinusoidal encodings, RoPE, and the order-blind baseline.

Left: the 2017 sinusoidal table (positions x dimensions). Right: how similar RoPE keeps a key
to an identical query as the distance between them grows, for the chosen base theta. The values
panel carries the RoPE dot product at (m, n) and at shifted pairs, against the additive
alternative, and "dog bites man" with and without a position signal.
"""

from __future__ import annotations

import math

import torch

from backend.compute.spec import Output, Param, ParamError, WidgetSpec
from backend.compute.style import COLORS, base_layout
from backend.reference import attention_cost, context, order, rope, sinusoidal
from backend.reference.presets import PRESETS

MAX_CELLS_ROWS, MAX_CELLS_COLS = 128, 64   # the heatmap shows at most this many (strided)
CURVE_POINTS = 400                         # points on the similarity curve, whatever the range
HALF_SEARCH = 4096                         # distances searched, one by one, for the fall below 1/2
# (m + s, n + s): the same offset at other places. From (3, 1) these are the handout's four pairs
# (3, 1), (10, 8), (100, 98), (5, 3).
SHIFTS = (0, 7, 97, 2)
REFERENCE_THETA = 10000.0                  # the 2017 / Llama-2 base, drawn for comparison
HANDOUT_ROWS = (0, 1, 2, 50)               # the positions LLM-101 §2 prints
SENTENCE, SWAPPED = ["dog", "bites", "man"], ["man", "bites", "dog"]
TINY = 0.01                                # the handout's "Try": a position signal 100x weaker

SPEC = WidgetSpec(
    name="positions",
    try_next=(
        "Move `m` and `n` up together, keeping m − n fixed: the RoPE score does not change, "
        "because it depends only on the offset. Then lower `rope_theta` and watch the angles wrap "
        "around sooner."
    ),
    title="Where order comes from: sinusoids and RoPE",
    description="The sinusoidal position table, RoPE's relative-only dot product, and how far "
                "RoPE's similarity reaches for a given base theta.",
    params=(
        Param("d_model", "width d", "int", default=8, min=4, max=512, step=2, scale="log2",
              help="Width of the sinusoidal table, and the head width RoPE rotates. Even."),
        Param("max_position", "positions shown", "int", default=64, min=8, max=131072, step=1,
              scale="log2", help="How many positions the table and the similarity curve cover."),
        Param("m", "query position m", "int", default=3, min=0, max=131072, step=1,
              help="Where the query sits."),
        Param("n", "key position n", "int", default=1, min=0, max=131072, step=1,
              help="Where the key sits."),
        # 10,000 / 2^7 .. 10,000 * 2^10; the page's slider stops on round values (1-2-5 per decade).
        Param("rope_theta", "RoPE base θ", "float", default=10000.0, min=78.125,
              max=10_240_000.0, scale="log2",
              help="10,000 in the 2017 paper and Llama 2; 500,000 in Llama 3 (type it)."),
        Param("strength", "position signal strength", "float", default=1.0, min=0.0, max=2.0,
              step=0.01, help="How strongly the sinusoids are added to the dog/bites/man vectors."),
    ),
    outputs=(
        Output("rope_dot", "q_m·k_n with RoPE", ".6f"),
        Output("rope_dot_spread", "spread of q·k over (m+s, n+s), s = 0, 7, 97, 2: RoPE", ".2g"),
        Output("additive_dot_spread", "the same spread with sinusoids added instead", ".3g"),
        Output("norm_q", "|q| before rotation", ".6f"),
        Output("norm_q_rotated", "|q| after rotation", ".6f"),
        Output("slowest_wavelength", "slowest RoPE pair: positions per turn", ",.0f"),
        Output("half_distance_text", "similarity falls below ½ at distance", ""),
        Output("similarity_at_max", "similarity at the last position shown (the curve can "
                                    "swing back up)", ".3f"),
        Output("slow_pairs_at_max", "pairs still agreeing at the last position shown", ",d"),
        Output("order_gap_without", "dog: word order moves its vector by (no position)", ".3g"),
        Output("order_gap_with", "dog: word order moves its vector by (with position)", ".3f"),
    ),
    bake=tuple({"rope_theta": t} for t in (100.0, 1000.0, 10000.0, 500000.0, 1_000_000.0,
                                           10_000_000.0))
    + tuple({"d_model": d} for d in (4, 16, 64, 128, 512))
    + tuple({"max_position": p} for p in (8, 512, 4096, 32768, 131072))
    + tuple({"m": m, "n": n} for m, n in ((10, 8), (100, 98), (1000, 3), (0, 0), (3, 10)))
    + tuple({"strength": v} for v in (0.0, 0.01, 0.1, 0.5, 2.0))
    + ({"d_model": 128, "rope_theta": 100.0}, {"d_model": 128, "rope_theta": 500000.0},
       {"d_model": 128, "rope_theta": 10_240_000.0}),
)

_Q_SEED = 0


def _query_key(d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed random query and key (seeded, float64 so the invariance shows to many digits)."""
    g = torch.Generator().manual_seed(_Q_SEED)
    return torch.randn(d, generator=g, dtype=torch.float64), torch.randn(d, generator=g,
                                                                       dtype=torch.float64)


def _strided(n: int, most: int) -> list[int]:
    step = max(1, math.ceil(n / most))
    return list(range(0, n, step))


def compute(params: dict) -> dict:
    d, T, m, n, theta, strength = (params["d_model"], params["max_position"], params["m"],
                                   params["n"], params["rope_theta"], params["strength"])
    if d % 2:
        raise ParamError(f"'width d' must be even (sines and cosines come in pairs), got {d}",
                         "d_model")
    # RoPE: q rotated to m, k to n, then the same pair moved along by each shift.
    q, k = _query_key(d)
    rot = lambda x, pos: rope.rotate(x, pos, theta)  # noqa: E731
    pairs = [(m + s, n + s) for s in SHIFTS]
    rope_dots = [float(rot(q, a) @ rot(k, b)) for a, b in pairs]
    # The alternative: add the sinusoids to q and k instead of rotating them.
    at = lambda pos: sinusoidal.sinusoidal_at(torch.tensor([pos]), d).double()[0]  # noqa: E731
    add_dots = [float((q + at(a)) @ (k + at(b))) for a, b in pairs]
    # The same score with the angles in float64: what float32 angles cost at this position.
    exact = float(rope.rotate(q, m, theta, torch.float64) @ rope.rotate(k, n, theta, torch.float64))

    # How far RoPE's similarity reaches: identical q and k, `distance` positions apart.
    offset = abs(m - n)
    shown = offset < T  # the reader's |m - n| lies on the curve's axis
    distances = torch.tensor(sorted(set(_strided(T, CURVE_POINTS)) | {T - 1}
                                    | ({offset} if shown else set())), dtype=torch.float64)
    sim = rope.relative_similarity(distances, d, theta)
    sim_ref = rope.relative_similarity(distances, d, REFERENCE_THETA)
    waves = rope.wavelengths(d, theta)
    near = rope.relative_similarity(torch.arange(min(T, HALF_SEARCH)), d, theta)  # every distance
    below = (near < 0.5).nonzero()

    # The sinusoidal table itself, strided to what a screen can show.
    rows, cols = _strided(T, MAX_CELLS_ROWS), _strided(d, MAX_CELLS_COLS)
    table = sinusoidal.sinusoidal_at(torch.tensor(rows), d)[:, cols]
    handout = sinusoidal.sinusoidal_encoding(max(HANDOUT_ROWS) + 1, d)

    # Order: "dog" in both sentences, without and with a position signal.
    dog = {label: order.vector_of("dog", words, strength)
           for label, words, strength in (("without", SENTENCE, None),
                                          ("without_swapped", SWAPPED, None),
                                          ("with", SENTENCE, strength),
                                          ("with_swapped", SWAPPED, strength),
                                          ("tiny", SENTENCE, TINY),
                                          ("tiny_swapped", SWAPPED, TINY))}
    gap = lambda a, b: float((dog[a] - dog[b]).abs().max())  # noqa: E731

    values = {
        "rope_dot": rope_dots[0],
        "rope_dot_shifted": [{"m": a, "n": b, "dot": v} for (a, b), v in zip(pairs, rope_dots)],
        "rope_dot_spread": max(rope_dots) - min(rope_dots),
        "rope_error_fp32": abs(rope_dots[0] - exact),
        "qk_norms": float(q.norm() * k.norm()),
        "additive_dot_shifted": [{"m": a, "n": b, "dot": v}
                                 for (a, b), v in zip(pairs, add_dots)],
        "additive_dot_spread": max(add_dots) - min(add_dots),
        "norm_q": float(q.norm()),
        "norm_q_rotated": float(rot(q, m).norm()),
        "slowest_wavelength": float(waves.max()),
        "fastest_wavelength": float(waves.min()),
        "similarity_at_max": float(sim[distances == T - 1][0]),
        "similarity_at_offset": float(rope.relative_similarity(torch.tensor([offset]), d, theta)[0]),
        # First distance at which an equal key is less than half as similar (None: not within
        # the positions shown, up to HALF_SEARCH).
        "half_distance": int(below[0]) if len(below) else None,
        "half_distance_text": (f"{int(below[0]):,}" if len(below)
                               else f"beyond {min(T, HALF_SEARCH) - 1:,}"),
        # A pair still agrees (positive cosine) for sure while it has turned less than a quarter
        # turn: wavelength more than four times the distance.
        "slow_pairs_at_max": int((waves > 4 * (T - 1)).sum()),
        "n_pairs": d // 2,
        "pe_rows": {str(p): handout[p].tolist() for p in HANDOUT_ROWS},
        "dog": {key: vec.tolist() for key, vec in dog.items()},
        "order_gap_without": gap("without", "without_swapped"),
        "order_gap_with": gap("with", "with_swapped"),
        "order_gap_tiny": gap("tiny", "tiny_swapped"),
        "context": {str(c): dict(zip(("text", "work"), context.growth(c, 8000)))
                    for c in CONTEXTS},
    }
    return {
        "values": values,
        "figure": _figure(rows, cols, table, distances, sim, sim_ref, d, T, offset, shown, theta),
        "summary": (
            f"Left: the sinusoidal table for {T} positions and width {d}. Right: with RoPE at "
            f"base θ = {theta:,.0f} and {d // 2} rotating pairs, an identical key is "
            + (f"first less than half as similar to its query {values['half_distance']:,} "
               f"positions away" if values["half_distance"] is not None else
               f"still more than half as similar to its query {min(T, HALF_SEARCH) - 1:,} "
               f"positions away")
            + f". q·k is {rope_dots[0]:.6f} at (m, n) = ({m}, {n}) "
            f"and moves by at most {values['rope_dot_spread']:.1e} when both shift together; with "
            f"sinusoids added instead it moves by {values['additive_dot_spread']:.3f}."),
        "table": {
            "caption": f"q·k at the same offset m − n = {m - n}, shifted along the sequence",
            "columns": ["m", "n", "q·k with RoPE", "q·k with sinusoids added"],
            "rows": [[a, b, round(r, 6), round(s, 6)]
                     for (a, b), r, s in zip(pairs, rope_dots, add_dots)],
        },
    }


CONTEXTS = (8000, 16000, 128000)           # LLM-101 §2's table
PREFILL_MODEL = "llama-3-8b"               # a model of realistic width for what a prompt costs


def prefill_flops(T: int) -> tuple[int, int]:
    """(score FLOPs, every other matmul's FLOPs) of a prefill of T tokens through all of
    PREFILL_MODEL's layers: the two T x T products with the causal half skipped, as a prefill's
    kernel does, against the four projections and the gated MLP (no embedding, no output head)."""
    cfg = PRESETS[PREFILL_MODEL]
    d_head = cfg.d_model // cfg.n_heads
    scores = attention_cost.score_flops(T, d_head, cfg.n_heads) // 2
    other = (attention_cost.projection_flops(T, d_head, cfg.n_heads, 1, cfg.n_kv_heads)
             + attention_cost.mlp_flops(T, cfg.d_model, cfg.d_ff))
    return cfg.n_layers * scores, cfg.n_layers * other


def facts(params: dict) -> dict:
    """Values only the prose quotes, worked out when the book is built: what the table's
    contexts cost a whole prefill of a Llama-3-8B-sized model, not only its attention."""
    base = sum(prefill_flops(CONTEXTS[0]))
    prefill = {}
    for c in CONTEXTS:
        scores, other = prefill_flops(c)
        prefill[str(c)] = {"work": (scores + other) / base, "score_share": scores / (scores + other)}
    return {"prefill": prefill, "prefill_layers": PRESETS[PREFILL_MODEL].n_layers,
            "prefill_window": PRESETS[PREFILL_MODEL].max_seq_len}


def _figure(rows, cols, table, distances, sim, sim_ref, d, T, offset, shown, theta) -> dict:
    x = distances.tolist()
    sampled = len(rows) < T or len(cols) < d
    data = [
        {"type": "heatmap", "z": [[round(v, 2) for v in r] for r in table.tolist()],
         "x": cols, "y": rows, "coloraxis": "coloraxis", "name": "PE",
         "hovertemplate": "position %{y}<br>dimension %{x}<br>%{z}<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": x, "y": [round(v, 4) for v in sim.tolist()],
         "name": f"RoPE, θ = {theta:,.0f}", "line": {"color": COLORS["scaled"]},
         "xaxis": "x2", "yaxis": "y2"},
    ]
    if theta != REFERENCE_THETA:
        data.append({"type": "scatter", "mode": "lines", "x": x,
                     "y": [round(v, 4) for v in sim_ref.tolist()],
                     "name": f"θ = {REFERENCE_THETA:,.0f} (2017, Llama 2)",
                     "line": {"color": COLORS["guide"], "dash": "dot"},
                     "xaxis": "x2", "yaxis": "y2"})
    if shown:
        data.append({"type": "scatter", "mode": "markers", "x": [offset],
                     "y": [round(float(sim[distances == offset][0]), 4)],
                     "name": f"|m − n| = {offset:,}",
                     "marker": {"size": 11, "color": COLORS["accent"]}, "xaxis": "x2", "yaxis": "y2"})
    table_title = f"sinusoidal table, d = {d}" + (" (sampled)" if sampled else "")
    reach_title = "how far RoPE reaches" + ("" if shown else
                                            f" (|m − n| = {offset:,} is off this axis)")
    layout = base_layout(
        440,
        coloraxis={"cmin": -1, "cmax": 1, "colorscale": "RdBu",
                   "colorbar": {"len": 0.9, "thickness": 10, "x": 0.41, "xpad": 4}},
        xaxis={"domain": [0, 0.37], "title": {"text": "dimension"}},
        yaxis={"title": {"text": "position"}, "autorange": "reversed"},
        xaxis2={"domain": [0.58, 1], "title": {"text": "distance m − n (positions)"},
                "anchor": "y2"},
        yaxis2={"anchor": "x2", "range": [-0.4, 1.05],
                "title": {"text": "similarity of q to an equal k"}},
        annotations=[
            {"text": table_title, "showarrow": False, "x": 0.19, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": reach_title, "showarrow": False, "x": 0.79, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
    )
    narrow = {
        "height": 740,
        "coloraxis": {"colorbar": {"x": 1.0, "y": 0.8, "len": 0.4, "yanchor": "middle"}},
        "xaxis": {"domain": [0, 0.9]}, "yaxis": {"domain": [0.6, 1]},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.4]},
        "legend": {"y": -0.12},
        "annotations": [{**layout["annotations"][0], "x": 0.45, "y": 1.04},
                        {**layout["annotations"][1], "x": 0.5, "y": 0.46}],
    }
    return {"data": data, "layout": layout, "narrow": narrow}
