"""Widget: the 2017 sinusoidal position table, positions down, dimensions across.

Two controls: the model width d (how many columns) and how many positions (rows) are shown.
The left columns turn fast and flicker from row to row; the right ones turn slowly.
"""

from __future__ import annotations

import math

import torch

from backend.compute.spec import Output, Param, ParamError, WidgetSpec
from backend.compute.style import base_layout
from backend.reference import rope, sinusoidal

MAX_CELLS_ROWS, MAX_CELLS_COLS = 128, 64   # the heatmap shows at most this many (strided)
HANDOUT_ROWS = (0, 1, 2, 50)               # the positions LLM-101 §2 prints
BASE = 10000.0                             # the 2017 paper's base
WINDOW_BLOCKS, SMOOTHING = 2, 3            # block_means: a window 2 blocks wide, its mean x 3

SPEC = WidgetSpec(
    name="positions_sinusoids",
    title="The sinusoidal position table",
    description="The 2017 sinusoidal encodings: one row per position, one column per "
                "dimension, each (sin, cos) pair turning more slowly than the one before.",
    try_next=(
        "Raise `d_model`: the first column still turns once every 2π positions, but the slowest "
        "pair turns more slowly still. Then raise `max_position` to see the slow columns move."
    ),
    params=(
        Param("d_model", "model width d", "int", default=8, min=4, max=512, step=2, scale="log2",
              help="How many numbers each position vector has (the model's width). Even: the "
                   "numbers come in (sin, cos) pairs."),
        Param("max_position", "positions shown", "int", default=64, min=8, max=131072, step=1,
              scale="log2", help="How many rows (positions 0, 1, 2, ...) the table shows."),
    ),
    outputs=(
        Output("fastest_wavelength", "first pair: positions per turn", ".4g"),
        Output("slowest_wavelength", "slowest pair: positions per turn", ",.0f"),
        Output("slowest_turns", "turns of the slowest pair by the last position shown", ".3g"),
    ),
    bake=tuple({"d_model": d} for d in (4, 16, 32, 64, 128, 512))
    + tuple({"max_position": p} for p in (8, 512, 4096, 32768, 131072))
    + ({"d_model": 128, "max_position": 4096},),
)


def strided(n: int, most: int) -> list[int]:
    """At most about `most` evenly spaced indices from 0 to n - 1 (every one when n <= most)."""
    step = max(1, math.ceil(n / most))
    return list(range(0, n, step))


def block_means(T: int, starts: list[int], d: int, base: float = BASE) -> torch.Tensor:
    """(len(starts), d): each row the table smoothed around the block of positions it stands
    for (from its start to the next start, or T). A row drawn at one position per block would
    alias: a column that turns many times within a block would show a false slow pattern. Each
    row is instead the mean over a window two blocks wide centred on its block, that mean taken
    three times over: a column that turns once every two blocks or faster fades to nearly 0
    (under a tenth of its strength), one that takes 16 blocks or more per turn is kept nearly as
    it is (92% of its strength or more).

    Exact, in closed form: the mean of sin(w t) over k consecutive t is
    sin(w k / 2) / (k sin(w / 2)) times its value at their middle (cos likewise), and taking the
    mean again multiplies by that factor again; the cost does not grow with T. A block of one
    position is the table itself. With RoPE's base θ and head width for `base` and `d`, the cos
    columns are RoPE's angles: positions_rope draws its similarity curve from them the same way."""
    start = torch.tensor(starts, dtype=torch.float64)
    size = torch.diff(torch.cat((start, torch.tensor([float(T)], dtype=torch.float64))))  # (R,)
    w = 2 * torch.pi / rope.wavelengths(d, base)  # (d/2,): the same angles sinusoidal.py uses
    mid = (start + (size - 1) / 2)[:, None] * w[None, :]  # (R, d/2)
    half = w[None, :] / 2
    k = torch.where(size > 1, WINDOW_BLOCKS * size, size)[:, None]  # positions per window
    shrink = (torch.sin(k * half) / (k * torch.sin(half))) ** SMOOTHING  # (R, d/2)
    pairs = torch.stack((shrink * mid.sin(), shrink * mid.cos()), dim=-1)  # (R, d/2, 2)
    return pairs.flatten(-2)  # (R, d): sin, cos, sin, cos, ... as sinusoidal.py lays them out


def compute(params: dict) -> dict:
    d, T = params["d_model"], params["max_position"]
    if d % 2:
        raise ParamError(f"'model width d' must be even (sines and cosines come in pairs), got {d}",
                         "d_model")
    rows, cols = strided(T, MAX_CELLS_ROWS), strided(d, MAX_CELLS_COLS)
    # One position per row while every row fits; past that each row is its block's mean.
    table = (sinusoidal.sinusoidal_at(torch.tensor(rows), d) if len(rows) == T
             else block_means(T, rows, d))[:, cols]
    handout = sinusoidal.sinusoidal_encoding(max(HANDOUT_ROWS) + 1, d)
    # Pair i turns once every 2 pi 10000^(2i/d) positions: the same wavelengths RoPE has at its
    # 2017 base, so the one function serves both.
    waves = rope.wavelengths(d, BASE)
    values = {
        "pe_rows": {str(p): handout[p].tolist() for p in HANDOUT_ROWS},
        "fastest_wavelength": float(waves.min()),
        "slowest_wavelength": float(waves.max()),
        "slowest_turns": (T - 1) / float(waves.max()),
        "n_pairs": d // 2,
    }
    block = rows[1] - rows[0] if len(rows) < T else 1     # positions averaged into one row
    every = cols[1] - cols[0] if len(cols) < d else 1     # every how many dimensions shown
    shown = ", ".join(([f"each row the mean of {block:,} positions"] if block > 1 else [])
                      + ([f"one dimension in {every}"] if every > 1 else []))
    listed = [p for p in HANDOUT_ROWS if p < T]  # only positions the figure draws (not 50 of 8)
    return {
        "values": values,
        "figure": _figure(rows, cols, table, d, block, every),
        "summary": (
            f"The sinusoidal table for {T:,} positions at width {d}"
            + (f" ({shown})" if shown else "")
            + f": the first pair turns once every {values['fastest_wavelength']:.4g} positions, "
            f"the slowest of its {d // 2} pairs once every "
            f"{values['slowest_wavelength']:,.0f} positions, so by position {T - 1:,} it has "
            + (f"made {values['slowest_turns']:.3g} of a turn." if values["slowest_turns"] < 1
               else f"turned {values['slowest_turns']:.3g} times.")),
        "table": {
            "caption": f"The first dimensions of positions {', '.join(map(str, listed))} "
                       f"at width {d}",
            "columns": ["position", *(f"dim {i} ({'sin' if i % 2 == 0 else 'cos'})"
                                      for i in range(min(d, 4)))],
            "rows": [[p, *(round(v, 3) for v in handout[p][:4].tolist())] for p in listed],
        },
    }


def _figure(rows, cols, table, d, block, every) -> dict:
    where = "position %{y}" if block == 1 else f"mean of positions %{{y}} to %{{y}} + {block - 1:,}"
    data = [{"type": "heatmap", "z": [[round(v, 2) for v in r] for r in table.tolist()],
             "x": cols, "y": rows, "coloraxis": "coloraxis", "name": "PE",
             "hovertemplate": where + "<br>dimension %{x}<br>%{z}<extra></extra>"}]
    # The title stays short (a phone's width); the axes say how rows and columns were thinned.
    title = f"sinusoidal table, d = {d}" + (" (rows averaged)" if block > 1 else "")
    layout = base_layout(
        420,
        coloraxis={"cmin": -1, "cmax": 1, "colorscale": "RdBu",
                   "colorbar": {"len": 0.9, "thickness": 10}},
        xaxis={"title": {"text": "dimension" + (f" (one in {every})" if every > 1 else "")}},
        yaxis={"title": {"text": "position" + (f" (rows: means of {block:,})" if block > 1 else "")},
               "autorange": "reversed"},
        annotations=[{"text": title, "showarrow": False, "x": 0.5, "y": 1.08,
                      "xref": "paper", "yref": "paper", "xanchor": "center"}],
    )
    narrow = {"height": 440}
    return {"data": data, "layout": layout, "narrow": narrow}
