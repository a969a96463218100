"""Diagram: the SwiGLU MLP as a flow. The input goes two ways, through W_gate and SiLU (the gate)
and through W_up (the value); their elementwise product is d_ff wide; W_down brings it back to d.

Drawn from (d_model, d_ff), the widths on the boxes; the flow is `backend/reference/mlp.py`'s
SwiGLU.forward, read left to right.
"""

from __future__ import annotations

from backend.diagrams.svg import Canvas

W, H = 470, 250


def draw(d_model: int = 4096, d_ff: int = 14336) -> Canvas:
    for name, v in (("d_model", d_model), ("d_ff", d_ff)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    d, f = d_model, d_ff
    desc = (f"The SwiGLU MLP, left to right. The input x, {d:,} numbers, goes two ways. On the "
            f"upper way W_gate ({f:,} by {d:,}) and SiLU make the gate, {f:,} numbers, each near 0 "
            f"where its pre-activation is negative and close to it where it is large. On the lower "
            f"way W_up ({f:,} by {d:,}) makes the values, {f:,} numbers. The two are multiplied "
            f"entry by entry, so each gate scales its own value; W_down ({d:,} by {f:,}) brings the "
            f"product back to {d:,} numbers.")
    c = Canvas(W, H, title=f"SwiGLU: d = {d:,}, d_ff = {f:,}", desc=desc)
    c.box(8, 100, 60, 46, "x", sub=f"{d:,}", tone="plain")
    c.arrow(68, 115, 94, 60, tone="muted")
    c.arrow(68, 131, 94, 186, tone="muted")
    c.box(96, 38, 108, 46, "W_gate", sub=f"{f:,} × {d:,}", tone="query")
    c.arrow(204, 61, 218, 61, tone="muted")
    c.box(220, 38, 60, 46, "SiLU", sub="gate", tone="accent")
    c.box(96, 164, 108, 46, "W_up", sub=f"{f:,} × {d:,}", tone="value")
    c.arrow(280, 64, 302, 110, tone="muted")
    c.arrow(204, 187, 302, 138, tone="muted")
    c.circle(318, 124, 16, tone="plain")
    c.text(318, 124, "⊙", size="large", weight="bold")
    c.text(318, 154, f"{f:,}", size="small", mono=True)
    c.arrow(334, 124, 346, 124, tone="muted")
    c.box(348, 101, 116, 46, "W_down", sub=f"{d:,} × {f:,}", tone="brown")
    c.text(406, 170, f"out: {d:,}", size="small", mono=True)
    c.text(250, 18, "gate: SiLU(W_gate x)", size="small", italic=True)
    c.text(150, 232, "value: W_up x", size="small", italic=True)
    return c
