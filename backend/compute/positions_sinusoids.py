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


def compute(params: dict) -> dict:
    d, T = params["d_model"], params["max_position"]
    if d % 2:
        raise ParamError(f"'model width d' must be even (sines and cosines come in pairs), got {d}",
                         "d_model")
    rows, cols = strided(T, MAX_CELLS_ROWS), strided(d, MAX_CELLS_COLS)
    table = sinusoidal.sinusoidal_at(torch.tensor(rows), d)[:, cols]
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
    sampled = len(rows) < T or len(cols) < d
    return {
        "values": values,
        "figure": _figure(rows, cols, table, d, sampled),
        "summary": (
            f"The sinusoidal table for {T:,} positions at width {d}"
            + (" (every few rows or columns shown)" if sampled else "")
            + f": the first pair turns once every {values['fastest_wavelength']:.4g} positions, "
            f"the slowest of its {d // 2} pairs once every "
            f"{values['slowest_wavelength']:,.0f} positions, so by position {T - 1:,} it has "
            + (f"made {values['slowest_turns']:.3g} of a turn." if values["slowest_turns"] < 1
               else f"turned {values['slowest_turns']:.3g} times.")),
        "table": {
            "caption": f"The first dimensions of positions {', '.join(map(str, HANDOUT_ROWS))} "
                       f"at width {d}",
            "columns": ["position", *(f"dim {i} ({'sin' if i % 2 == 0 else 'cos'})"
                                      for i in range(min(d, 4)))],
            "rows": [[p, *(round(v, 3) for v in handout[p][:4].tolist())] for p in HANDOUT_ROWS],
        },
    }


def _figure(rows, cols, table, d, sampled) -> dict:
    data = [{"type": "heatmap", "z": [[round(v, 2) for v in r] for r in table.tolist()],
             "x": cols, "y": rows, "coloraxis": "coloraxis", "name": "PE",
             "hovertemplate": "position %{y}<br>dimension %{x}<br>%{z}<extra></extra>"}]
    title = f"sinusoidal table, d = {d}" + (" (sampled)" if sampled else "")
    layout = base_layout(
        420,
        coloraxis={"cmin": -1, "cmax": 1, "colorscale": "RdBu",
                   "colorbar": {"len": 0.9, "thickness": 10}},
        xaxis={"title": {"text": "dimension"}},
        yaxis={"title": {"text": "position"}, "autorange": "reversed"},
        annotations=[{"text": title, "showarrow": False, "x": 0.5, "y": 1.08,
                      "xref": "paper", "yref": "paper", "xanchor": "center"}],
    )
    narrow = {"height": 440}
    return {"data": data, "layout": layout, "narrow": narrow}
