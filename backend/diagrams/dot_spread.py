"""Diagram: why a dot product's spread grows with the head size, and what √d_k does to it.

For each head size d_k in `sizes`, one row: the d_k products q_i k_i that a score adds up (one
cell each, at most `max_cells` drawn, the rest elided), then two bars drawn to one scale: the
unscaled score's standard deviation, √d_k, and the scaled score's, 1. The products are of
independent unit-variance entries, so each has variance 1 and the sum has variance d_k.
"""

from __future__ import annotations

import math

from backend.diagrams.svg import Canvas

WIDTH = 360
LEFT = 12
ROW_H = 84
TOP = 34
CELL, GAP = 12, 3


def spread(d_k: int) -> float:
    """The standard deviation of q·k for unit-variance entries: √d_k."""
    return math.sqrt(d_k)


def _num(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.1f}"


def draw(sizes=(4, 16, 64), max_cells: int = 16) -> Canvas:
    sizes = tuple(int(d) for d in sizes)
    if not sizes or min(sizes) < 1:
        raise ValueError("sizes: one or more head sizes of at least 1")
    if max_cells < 2:
        raise ValueError("max_cells: at least 2")
    height = TOP + ROW_H * len(sizes) + 6
    sds = [spread(d) for d in sizes]
    listed = ", ".join(str(d) for d in sizes)
    desc = (f"For head sizes {listed}, a score q·k is the sum of {listed} independent products "
            f"q_i k_i, each of variance 1, so the score's variance is {listed} and its standard "
            f"deviation {', '.join(_num(s) for s in sds)} (the red bars, drawn to one scale). "
            f"Divided by √d_k, the score has standard deviation 1 at every head size (the blue "
            f"bars).")
    c = Canvas(WIDTH, height, title="A dot product's spread grows as √d_k", desc=desc)
    c.text(LEFT, 12, "each cell: one product q_i·k_i, variance 1", size="small", anchor="start")
    # one scale for every bar: the widest bar spans the space right of the bar labels
    cx, half_max = 255, 95
    unit = half_max / max(sds)
    c.text(cx, 26, "0", size="small", tone="muted")
    for row, (d_k, sd) in enumerate(zip(sizes, sds)):
        y = TOP + row * ROW_H
        c.text(LEFT, y + 8, f"d_k = {d_k}", anchor="start", weight="bold")
        c.text(WIDTH - LEFT, y + 8, f"{d_k} product{'s' if d_k != 1 else ''}, summed",
               size="small", anchor="end")
        shown = d_k if d_k <= max_cells else max_cells - 1
        x = LEFT
        for _ in range(shown):
            c.rect(x, y + 18, CELL, CELL, tone="muted", rx=2)
            x += CELL + GAP
        if shown < d_k:
            c.text(x + 4, y + 24, "…", anchor="start")
        # the two spreads, centred on 0, to one scale
        for k, (half, tone, label) in enumerate((
                (sd * unit, "bad", f"q·k: sd √{d_k} = {_num(sd)}"),
                (unit, "query", "q·k/√d_k: sd 1"))):
            by = y + 44 + k * 18
            c.rect(cx - half, by, 2 * half, 10, tone=tone, rx=2)
            c.line(cx, by - 2, cx, by + 12, tone="plain", width=1)
            c.text(LEFT, by + 5, label, size="small", anchor="start")
    return c
