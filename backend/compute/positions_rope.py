"""Widget: RoPE. The score between a rotated query and key depends only on their distance, and
the base theta sets how far an identical key stays recognisable.

The figure: how similar RoPE keeps a key to an identical query as the distance between them
grows, for the chosen head width and base theta (the 2017 / Llama 2 base dotted beside it). The
values: the score at (m, n) and how little it moves when both shift together, against how much
it would move with sinusoids added instead. The build also works out here what the chapter's
context-window table quotes (`facts`).
"""

from __future__ import annotations

import torch

from backend.compute.positions_sinusoids import block_means, strided
from backend.compute.spec import Limit, Output, Param, ParamError, WidgetSpec
from backend.compute.style import COLORS, base_layout
from backend.reference import attention_cost, context, rope, sinusoidal
from backend.reference.presets import PRESETS

CURVE_POINTS = 400                         # points on the similarity curve, whatever the range
HALF_SEARCH = 4096                         # distances searched, one by one, for the fall below 1/2
# (m + s, n + s): the same offset at other places. From (3, 1) in a sequence of at least 101
# positions these are the handout's four pairs (3, 1), (10, 8), (100, 98), (5, 3). A shift that
# would carry the pair out of the sequence goes backwards instead, or as far as the room allows
# (`shifts_within`): every pair the widget scores lies inside the sequence, as the text says.
SHIFTS = (0, 7, 97, 2)
REFERENCE_THETA = 10000.0                  # the 2017 / Llama-2 base, drawn for comparison


def _in_sequence(name: str) -> Limit:
    """A position lies within the sequence: `name` - max_position + 1 <= 0. The API refuses
    more, and the page's m and n sliders end at the sequence length minus 1 and follow it."""
    return Limit(0, ((1, (name,)), (-1, ("max_position",)), (1, ())),
                 "a position lies within the sequence: at most its length minus 1")


M_IN_SEQUENCE, N_IN_SEQUENCE = _in_sequence("m"), _in_sequence("n")


def shifts_within(m: int, n: int, length: int) -> list[int]:
    """The shifts s that move (m, n) to (m + s, n + s) with both still in [0, length - 1]: each of
    SHIFTS forwards if it fits, else backwards, else as far as the sequence leaves room for (its
    end, or its start if that is farther); repeats dropped, so a pair with no room keeps only 0."""
    low, high = -min(m, n), length - 1 - max(m, n)  # the room behind and ahead of the pair
    out: list[int] = []
    for s in SHIFTS:
        s = s if s <= high else -s if -s >= low else (high if high >= -low else low)
        if s not in out:
            out.append(s)
    return out


def shifts_text(shifts: list[int]) -> str:
    """'0, 7, 60 and 2' / '0, −7, −97 and −2': how the caption names the shifts it made."""
    words = [f"{s:,}" if s >= 0 else f"−{-s:,}" for s in shifts]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def theta_text(theta: float) -> str:
    """θ as the readouts write it: whole bases in full with commas (500,000), others to four
    significant figures (78.12 for the slider's bottom, 78.125; never a rounded "78")."""
    return f"{theta:,.0f}" if theta == round(theta) else f"{theta:.4g}"


SPEC = WidgetSpec(
    name="positions_rope",
    title="RoPE: a score that sees only the distance",
    description="RoPE's dot product at a query position m and a key position n, how little it "
                "moves when both shift together, and how far an identical key stays similar "
                "for a given head width and base θ.",
    try_next=(
        "Move `m` and `n` up together, keeping m − n fixed: the score does not change, because "
        "it depends only on the distance. Then set `d_head` to 128 and lower `rope_theta`: the "
        "similarity falls below one half sooner."
    ),
    params=(
        Param("d_head", "head width", "int", default=8, min=4, max=512, step=2, scale="log2",
              help="How many numbers each query and key has; RoPE turns them as head width / 2 "
                   "pairs. Llama's heads are 128 wide. Even."),
        Param("max_position", "sequence length", "int", default=64, min=8, max=131072, step=1,
              scale="log2", help="How many positions the sequence holds (0 to the length minus "
                                 "1): m and n lie within it, and the curve covers every distance "
                                 "it holds."),
        Param("m", "query position m", "int", default=3, min=0, max=131071, step=1,
              limits=(M_IN_SEQUENCE,),
              help="Where the query sits: 0 to the sequence length minus 1. The arrow keys or "
                   "the box move it one position at a time."),
        Param("n", "key position n", "int", default=1, min=0, max=131071, step=1,
              limits=(N_IN_SEQUENCE,),
              help="Where the key sits: 0 to the sequence length minus 1. The arrow keys or "
                   "the box move it one position at a time."),
        # 10,000 / 2^7 .. 10,000 * 2^10; the page's slider stops on round values (1-2-5 per decade).
        Param("rope_theta", "RoPE base θ", "float", default=10000.0, min=78.125,
              max=10_240_000.0, scale="log2",
              help="10,000 in the 2017 paper and Llama 2; 500,000 in Llama 3. The slider stops "
                   "at round values (500,000 among them); the box takes any value in range."),
    ),
    outputs=(
        Output("rope_dot", "q·k at positions (m, n)", ".4f"),
        Output("rope_dot_spread", "how much q·k moves when m and n move together", ".2g"),
        Output("additive_dot_spread", "how much it moves with sinusoids added instead of RoPE",
               ".3g"),
        Output("half_distance_text", "similarity first falls below ½ at distance", ""),
        Output("similarity_at_max", "similarity at the longest distance shown (the curve can "
                                    "swing back up)", ".3f"),
        Output("slow_pairs_at_max", "pairs still agreeing at the longest distance shown", ",d"),
        Output("slowest_wavelength", "slowest pair: positions per turn", ",.0f"),
    ),
    bake=tuple({"rope_theta": t} for t in (100.0, 1000.0, 10000.0, 500000.0, 1_000_000.0,
                                           10_000_000.0))
    + tuple({"d_head": d} for d in (4, 16, 64, 128, 512))
    + tuple({"max_position": p} for p in (8, 512, 4096, 32768, 131072))
    + tuple({"m": m, "n": n} for m, n in ((10, 8), (50, 48), (63, 61), (0, 0), (3, 10)))
    + ({"m": 100, "n": 98, "max_position": 128}, {"m": 1000, "n": 3, "max_position": 4096})
    + ({"d_head": 128, "rope_theta": 100.0}, {"d_head": 128, "rope_theta": 500000.0},
       {"d_head": 128, "rope_theta": 10_240_000.0}, {"d_head": 128, "max_position": 4096},
       {"d_head": 128, "max_position": 4096, "rope_theta": 500000.0}),
)

_Q_SEED = 0


def _query_key(d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed random query and key (seeded, float64 so the invariance shows to many digits)."""
    g = torch.Generator().manual_seed(_Q_SEED)
    return torch.randn(d, generator=g, dtype=torch.float64), torch.randn(d, generator=g,
                                                                       dtype=torch.float64)


def compute(params: dict) -> dict:
    d, T, m, n, theta = (params["d_head"], params["max_position"], params["m"], params["n"],
                         params["rope_theta"])
    if d % 2:
        raise ParamError(f"'head width' must be even (RoPE turns the numbers in pairs), got {d}",
                         "d_head")
    # RoPE: q rotated to m, k to n, then the same pair moved along by each shift.
    q, k = _query_key(d)
    rot = lambda x, pos: rope.rotate(x, pos, theta)  # noqa: E731
    shifts = shifts_within(m, n, T)
    pairs = [(m + s, n + s) for s in shifts]
    rope_dots = [float(rot(q, a) @ rot(k, b)) for a, b in pairs]
    # The alternative: add the sinusoids to q and k instead of rotating them.
    at = lambda pos: sinusoidal.sinusoidal_at(torch.tensor([pos]), d).double()[0]  # noqa: E731
    add_dots = [float((q + at(a)) @ (k + at(b))) for a, b in pairs]
    # The same score with the angles in float64: what float32 angles cost at this position.
    exact = float(rope.rotate(q, m, theta, torch.float64) @ rope.rotate(k, n, theta, torch.float64))

    # How far RoPE's similarity reaches: identical q and k, `distance` positions apart.
    offset = abs(m - n)  # within the curve's axis: m and n lie in the sequence (M_IN_SEQUENCE)
    distances = torch.tensor([T - 1, offset], dtype=torch.float64)
    sim = rope.relative_similarity(distances, d, theta)  # exact, at the values' two distances
    # The curve: every distance while they fit. Past that, the first half of its points are the
    # first distances, exactly (where the curve falls fastest), and each of the rest stands for a
    # block of distances, smoothed over it: strided points alone would alias (a fast pair that
    # turns many times between two points draws a false pattern).
    first = CURVE_POINTS // 2 if T > CURVE_POINTS else T  # distances drawn one by one
    tail = [first + s for s in strided(T - first, CURVE_POINTS - first)] if T > first else []
    starts = list(range(first)) + tail
    block = tail[1] - tail[0] if len(tail) > 1 else 1  # distances per point past the first
    size = torch.diff(torch.tensor(starts + [T], dtype=torch.float64))
    middle = torch.tensor(starts, dtype=torch.float64) + (size - 1) / 2  # x: each block's middle
    curve = {base: (middle, block_means(T, starts, d, base)[:, 1::2].mean(dim=-1))  # cos columns
             for base in (theta, REFERENCE_THETA)}
    waves = rope.wavelengths(d, theta)
    near = rope.relative_similarity(torch.arange(min(T, HALF_SEARCH)), d, theta)  # every distance
    below = (near < 0.5).nonzero()

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
        "similarity_at_max": float(sim[0]),
        "similarity_at_offset": float(sim[1]),
        # First distance at which an equal key is less than half as similar (None: not within
        # the positions shown, up to HALF_SEARCH).
        "half_distance": int(below[0]) if len(below) else None,
        "half_distance_text": (f"{int(below[0]):,}" if len(below)
                               else f"beyond {min(T, HALF_SEARCH) - 1:,}"),
        # A pair still agrees (positive cosine) for sure while it has turned less than a quarter
        # turn: wavelength more than four times the distance.
        "slow_pairs_at_max": int((waves > 4 * (T - 1)).sum()),
        "n_pairs": d // 2,
    }
    return {
        "values": values,
        "figure": _figure(curve, first, block, offset, float(sim[1]), theta),
        "summary": (
            f"With RoPE at base θ = {theta_text(theta)} and {d // 2} rotating pairs (head width {d}), "
            "an identical key is "
            + (f"first less than half as similar to its query {values['half_distance']:,} "
               f"positions away" if values["half_distance"] is not None else
               f"still more than half as similar to its query {min(T, HALF_SEARCH) - 1:,} "
               f"positions away")
            + f". q·k is {rope_dots[0]:.4g} at (m, n) = ({m:,}, {n:,}) "
            f"and moves by at most {values['rope_dot_spread']:.2g} when both shift together; "
            f"with sinusoids added instead it moves by {values['additive_dot_spread']:.3g}."),
        "table": {
            "caption": (f"q·k at the same offset m − n = {m - n:,}, the pair moved along the "
                        f"sequence by {shifts_text(shifts)} positions"
                        + (" (a minus sign: backwards)" if min(shifts) < 0 else "")
                        + f", every pair inside the sequence's {T:,} positions"
                        if len(shifts) > 1 else
                        f"q·k at m − n = {m - n:,}: the pair fills the sequence, so it cannot move "
                        f"along it"),
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
    """Values only the prose quotes, worked out when the book is built: the context table's
    growth of the text and of the attention work, and what its contexts cost a whole prefill of
    a Llama-3-8B-sized model, not only its attention."""
    base = sum(prefill_flops(CONTEXTS[0]))
    prefill = {}
    for c in CONTEXTS:
        scores, other = prefill_flops(c)
        prefill[str(c)] = {"work": (scores + other) / base, "score_share": scores / (scores + other)}
    return {"context": {str(c): dict(zip(("text", "work"), context.growth(c, 8000)))
                        for c in CONTEXTS},
            "prefill": prefill, "prefill_layers": PRESETS[PREFILL_MODEL].n_layers,
            "prefill_window": PRESETS[PREFILL_MODEL].max_seq_len}


def _figure(curve, first, block, offset, at_offset, theta) -> dict:
    def line(base):
        x, y = curve[base]
        return {"x": [round(v, 1) for v in x.tolist()], "y": [round(v, 4) for v in y.tolist()]}

    data = [{"type": "scatter", "mode": "lines", **line(theta),
             "name": f"RoPE, θ = {theta_text(theta)}", "line": {"color": COLORS["scaled"]}}]
    if theta != REFERENCE_THETA:
        data.append({"type": "scatter", "mode": "lines", **line(REFERENCE_THETA),
                     "name": f"θ = {REFERENCE_THETA:,.0f} (2017, Llama 2)",
                     "line": {"color": COLORS["guide"], "dash": "dot"}})
    data.append({"type": "scatter", "mode": "markers", "x": [offset], "y": [round(at_offset, 4)],
                 "name": f"|m − n| = {offset:,}",
                 "marker": {"size": 11, "color": COLORS["accent"]}})
    title = "how far RoPE reaches"
    layout = base_layout(
        400,
        xaxis={"title": {"text": "distance m − n (positions)"
                          + (f"; past {first - 1:,}, means over {block:,}" if block > 1
                             else "")}},
        yaxis={"range": [-0.4, 1.05], "title": {"text": "similarity of q to an equal k"}},
        annotations=[{"text": title, "showarrow": False, "x": 0.5, "y": 1.08,
                      "xref": "paper", "yref": "paper", "xanchor": "center"}],
    )
    return {"data": data, "layout": layout, "narrow": {"height": 420}}
