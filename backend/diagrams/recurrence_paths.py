"""The recurrence's chain against attention's one-step paths, for T positions.

Top: an RNN's states h_1 .. h_T, each computed from the one before and one input, so the
input at position 1 reaches h_T only through T - 1 further steps (`one_after_another` in
backend/reference/recurrence.py). Bottom: one attention layer over the same T positions; the
last position's output reads every input directly, one step each, whatever the distance.
"""

from __future__ import annotations

from backend.diagrams.svg import Canvas

WIDTH = 360
SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def sub(n: int) -> str:
    return str(n).translate(SUB)


def chain_hops(T: int) -> int:
    """Steps from position 1 to position T along the recurrence: one per later state."""
    return T - 1


def draw(T: int = 6) -> Canvas:
    if not 2 <= T <= 12:
        raise ValueError("T: 2 to 12 positions fit the width")
    hops = chain_hops(T)
    desc = (f"Two ways to connect {T} positions. Top, a recurrent network: a chain of {T} "
            f"states, h1 to h{T}, each computed from the state before it and one input; the "
            f"input x1 reaches h{T} only after {hops} further steps, one per state. Bottom, "
            f"one attention layer: the output y{T} at the last position reads every input, "
            f"x1 to x{T}, directly, so each path is one step long, however far apart the "
            f"positions are.")
    c = Canvas(WIDTH, 314, title=f"A chain of {T} steps against one-step attention", desc=desc)
    left, right = 14, WIDTH - 14
    pitch = (right - left) / T
    bw = min(40, pitch - 8)
    xs = [left + pitch * (i + 0.5) for i in range(T)]

    # ---- the recurrence
    c.text(left, 14, "RNN: each state waits for the last", anchor="start", weight="bold")
    hy, xy = 40, 100
    for i, x in enumerate(xs, start=1):
        c.box(x - bw / 2, hy, bw, 28, f"h{sub(i)}", tone="accent" if i in (1, T) else "plain")
        c.text(x, xy + 8, f"x{sub(i)}", size="small")
        c.arrow(x, xy, x, hy + 30, tone="muted", head=5)
        if i < T:
            c.arrow(x + bw / 2, hy + 14, xs[i] - bw / 2, hy + 14, tone="bad", head=5)
    c.text(WIDTH / 2, 132, f"h{sub(1)} to h{sub(T)}: {hops} steps in a row", tone="bad")

    # ---- attention
    top = 160
    c.text(left, top, "Attention: every path is one step", anchor="start", weight="bold")
    yy, iy = top + 26, top + 112
    for i, x in enumerate(xs, start=1):
        if i == T:
            c.box(x - bw / 2, yy, bw, 28, f"y{sub(i)}", tone="accent")
        else:
            c.box(x - bw / 2, yy, bw, 28, f"y{sub(i)}", tone="muted", dashed=True)
        c.box(x - bw / 2, iy - 14, bw, 28, f"x{sub(i)}", tone="accent" if i == 1 else "plain")
        c.arrow(x, iy - 14, xs[-1] + (x - xs[-1]) * 0.08, yy + 30, tone="good", head=5)
    c.text(WIDTH / 2, iy + 28, f"x{sub(1)} to y{sub(T)}: 1 step", tone="good")
    return c
