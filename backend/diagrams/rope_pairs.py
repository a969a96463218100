"""RoPE's rotating pairs: a head of width `dims` is d/2 planes, each turning at its own speed.

Each circle is one pair of coordinates (dimension i with i + d/2, the layout of
`backend/reference/rope.py`). The dashed spoke is where the pair points at position 0, the arrow
where it points at `position`: pair i has turned by position · θ^(-2i/d) radians. The first pair
turns one radian per position; each later pair turns θ^(2/d) times more slowly.
"""

from __future__ import annotations

import math

from backend.diagrams.svg import Canvas
from backend.reference import rope

PER_ROW = 4
MAX_DIMS = 16  # eight circles, two rows: more would not read on a phone


def angles(dims: int, position: int, theta: float = 10000.0) -> list[float]:
    """The angle each pair has turned at `position`, in radians, from the reference code."""
    return [2 * math.pi * position / float(w) for w in rope.wavelengths(dims, theta)]


def _amount(x: float, unit: str) -> str:
    """A number to three figures with its unit, singular when it reads 1 ("1 radian", "1 turn")."""
    text = f"{x:.3g}"
    return f"{text} {unit if text == '1' else unit + 's'}"


def _speed(omega: float) -> str:
    return f"{omega:.3g}" if omega >= 1e-3 else f"{omega:.0e}"


def draw(dims: int = 8, position: int = 3, theta: float = 10000.0) -> Canvas:
    if dims % 2 or not 2 <= dims <= MAX_DIMS:
        raise ValueError(f"dims must be even, 2 to {MAX_DIMS}, got {dims}")
    turned = angles(dims, position, theta)
    pairs = dims // 2
    rows = math.ceil(pairs / PER_ROW)
    cell_w, cell_h, r = 90, 135, 30
    height = 40 + rows * cell_h
    desc = (f"A query or key of width {dims} seen as {pairs} pairs of coordinates, each a point on "
            f"its own circle. At position {position:,} with base θ = {theta:,.0f}, "
            + "; ".join(f"pair {i} turns {_amount(math.exp(-2 * i / dims * math.log(theta)), 'radian')} "
                        f"per position and has turned {_amount(a, 'radian')} "
                        f"({_amount(a / (2 * math.pi), 'turn')})"
                        for i, a in enumerate(turned))
            + ". The first pair spins fastest, the last slowest.")
    c = Canvas(360, height, title=f"RoPE: {pairs} pairs turning at {pairs} speeds", desc=desc)
    c.text(180, 16, f"width {dims}, position {position:,}: pair i turns by position · ω_i",
           size="small")
    for i, a in enumerate(turned):
        row, col = divmod(i, PER_ROW)
        cx = (360 - PER_ROW * cell_w) / 2 + col * cell_w + cell_w / 2
        top = 36 + row * cell_h
        cy = top + 22 + r
        c.text(cx, top + 6, f"pair {i}", weight="bold")
        c.circle(cx, cy, r, tone="muted")
        c.line(cx, cy, cx + r, cy, tone="muted", dashed=True)          # position 0
        c.arrow(cx, cy, cx + r * math.cos(a), cy - r * math.sin(a),    # position `position`
                tone="query" if i == 0 else ("key" if i == pairs - 1 else "accent"), width=2)
        omega = 2 * math.pi / float(rope.wavelengths(dims, theta)[i])
        c.text(cx, cy + r + 16, f"ω = {_speed(omega)}", size="small", mono=True)
        c.text(cx, cy + r + 32, f"{a:.3g} rad", size="small", mono=True)
    return c
