"""Diagram: one query's softmax over its keys, unscaled and scaled.

One random query and `n_positions` random keys of size `d_k` (unit-variance entries, drawn from
PyTorch's generator seeded with `seed`); two panels, one bar per key, in key order: the weights
of softmax(q·k) on top and of softmax(q·k/√d_k) below, each bar labelled with its score under it
and its weight over it. The numbers are the book's own computation, made when the figure is
drawn.
"""

from __future__ import annotations

import math

import torch

from backend.diagrams.svg import Canvas

WIDTH = 360
LEFT = 16
PANEL_H = 124
BAR_MAX = 64


def row(d_k: int = 64, n_positions: int = 8, seed: int = 0) -> dict:
    """Scores and weights of one random query over n_positions random keys."""
    g = torch.Generator().manual_seed(seed)
    keys = torch.randn(n_positions, d_k, generator=g, dtype=torch.float64)
    query = torch.randn(d_k, generator=g, dtype=torch.float64)
    scores = keys @ query
    scaled = scores / math.sqrt(d_k)
    return {"scores": scores.tolist(), "weights": torch.softmax(scores, -1).tolist(),
            "scaled_scores": scaled.tolist(), "scaled_weights": torch.softmax(scaled, -1).tolist()}


def _score(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 9.5 else f"{x:.1f}"


def _weight(p: float) -> str:
    return "<.01" if p < 0.005 else f"{p:.2f}"


def draw(d_k: int = 64, n_positions: int = 8, seed: int = 0) -> Canvas:
    if not 1 <= d_k <= 4096:
        raise ValueError("d_k: 1 to 4096")
    if not 2 <= n_positions <= 8:
        raise ValueError("n_positions: 2 to 8 (one labelled bar per key must fit)")
    r = row(d_k, n_positions, seed)
    col = (WIDTH - 2 * LEFT) / n_positions
    panels = (("softmax(q·k)", r["scores"], r["weights"], "bad"),
              (f"softmax(q·k/√{d_k})", r["scaled_scores"], r["scaled_weights"], "query"))
    height = 8 + PANEL_H * 2 + 6
    top = [max(w) for _, _, w, _ in panels]
    desc = (f"One random query over {n_positions} random keys at head size {d_k}. Unscaled, the "
            f"scores are {', '.join(_score(s) for s in r['scores'])} and the largest weight is "
            f"{top[0]:.2f}; divided by √{d_k}, the scores are "
            f"{', '.join(_score(s) for s in r['scaled_scores'])} and the largest weight is "
            f"{top[1]:.2f}.")
    c = Canvas(WIDTH, height, title="One softmax row, unscaled and scaled", desc=desc)
    for k, (title, scores, weights, tone) in enumerate(panels):
        y0 = 8 + k * PANEL_H
        c.text(LEFT, y0 + 6, title, anchor="start", weight="bold", mono=True)
        c.text(WIDTH - LEFT, y0 + 6, f"largest weight {max(weights):.3f}", size="small",
               anchor="end")
        base = y0 + 30 + BAR_MAX
        c.line(LEFT, base, WIDTH - LEFT, base, tone="muted", width=1)
        for i, (s, p) in enumerate(zip(scores, weights)):
            cx = LEFT + col * (i + 0.5)
            h = BAR_MAX * p
            c.rect(cx - col * 0.3, base - h, col * 0.6, h, tone=tone, rx=1)
            c.text(cx, base - h - 7, _weight(p), size="small")
            c.text(cx, base + 10, _score(s), size="small", mono=True, tone="muted")
    c.text(LEFT, height - 4, "under each bar: its score", size="small", anchor="start",
           tone="muted")
    return c
