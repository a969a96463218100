"""FlashAttention's idea as the book's `blocked()` runs it: the T x T score table is never
whole; one strip of `block` key columns is scored at a time and folded into three running
quantities per query row (the largest score m, the sum of exponentials l, the weighted sum of
values)."""

from __future__ import annotations

import math

from .svg import Canvas


def draw(T: int = 8, block: int = 2, current: int = 2) -> Canvas:
    if not (2 <= T <= 12 and 1 <= block <= T):
        raise ValueError("T in 2..12, block in 1..T")
    strips = math.ceil(T / block)
    if not 1 <= current <= strips:
        raise ValueError(f"current strip in 1..{strips}")
    cell, left, top = 24, 78, 40
    grid = T * cell
    width = max(360, left + grid + 130)
    height = top + grid + 44
    lo, hi = (current - 1) * block, min(T, current * block)
    desc = (f"The {T} × {T} table of scores of one head, queries down, keys across, cut into "
            f"{strips} strips of {block} key columns. The strip being computed, keys {lo + 1} to "
            f"{hi}, is the only part of the table that exists: {T} × {hi - lo} scores. The "
            f"strips to its left are done and survive only as each query row's running max m, "
            f"sum l and weighted sum of values; the strips to its right are not computed yet. "
            f"Memory holds {T * (hi - lo)} scores instead of {T * T}.")
    c = Canvas(width, height, title="FlashAttention scores one strip of keys at a time", desc=desc)
    c.text(left + grid / 2, 14, "keys →", size="small")
    c.text(left - 6, top + cell / 2, "queries ↓", size="small", anchor="end")
    for s in range(strips):
        a, b = s * block, min(T, (s + 1) * block)
        tone = "accent" if s == current - 1 else ("muted" if s < current - 1 else "plain")
        for q in range(T):
            for k in range(a, b):
                c.rect(left + k * cell + 1, top + q * cell + 1, cell - 2, cell - 2, tone=tone,
                       rx=2, dashed=s > current - 1)
    c.text(left + (lo + hi) / 2 * cell, top - 10, "in memory now", size="small", weight="bold")
    x = left + grid + 12
    for q in range(T):
        c.text(x, top + q * cell + cell / 2, "m, l, acc", anchor="start", size="small", mono=True)
    c.text(x, top - 10, "per row", anchor="start", size="small", weight="bold")
    y = top + grid + 14
    c.rect(left, y, 14, 14, tone="muted", rx=2)
    c.text(left + 18, y + 7, "done: folded into m, l, acc", anchor="start", size="small")
    c.rect(left, y + 18, 14, 14, tone="plain", rx=2, dashed=True)
    c.text(left + 18, y + 25, "not computed yet", anchor="start", size="small")
    return c
