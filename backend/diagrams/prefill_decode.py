"""Prefill against decode: one pass over the prompt scores every prompt query against every
earlier key (a P × P causal triangle); each decode step runs one position, and its one query
scores a single row against every stored key."""

from __future__ import annotations

from .svg import Canvas


def draw(prompt: int = 5, steps: int = 3) -> Canvas:
    if not (1 <= prompt <= 8 and 1 <= steps <= 6 and prompt + steps <= 14):
        raise ValueError("prompt 1..8, steps 1..6, at most 14 positions in all")
    cell, gap, left, top = 14, 2, 104, 40
    pitch = cell + gap
    total = prompt + steps
    width = max(360, left + total * pitch + 8)
    pre_h = prompt * pitch
    row_gap = 10
    height = top + pre_h + 14 + steps * (pitch + row_gap) + 36
    tri = prompt * (prompt + 1) // 2
    desc = (f"A prompt of {prompt} tokens, then {steps} decode steps. Prefill runs all {prompt} "
            f"prompt positions in one pass: each of its {prompt} queries scores itself and every "
            f"earlier key, a {prompt} by {prompt} table of which the causal mask keeps {tri} "
            f"scores. Each decode step runs one position: its single query scores one row, "
            f"{prompt + 1} keys at the first step and {total} at the last, against the keys the "
            f"cache holds plus its own. No step after prefill builds a table.")
    c = Canvas(width, height, title="Prefill scores a table, decode one row per step", desc=desc)
    c.text(left, 14, "scores computed: one row per query", anchor="start", size="small")
    c.text(left, 28, "keys →", anchor="start", size="small", mono=True)
    # prefill: a causal triangle, row i (query i) scores keys 0..i
    c.text(8, top + pre_h / 2 - 8, "prefill", anchor="start", weight="bold")
    c.text(8, top + pre_h / 2 + 9, f"{prompt} × {prompt}", anchor="start", size="small", mono=True)
    for i in range(prompt):
        for j in range(i + 1):
            c.rect(left + j * pitch, top + i * pitch, cell, cell, tone="query", rx=2)
    y = top + pre_h + 14
    for r in range(1, steps + 1):
        n = prompt + r  # keys the step's one query reads: the cache plus its own
        c.text(8, y + cell / 2, f"step {r}", anchor="start")
        c.text(64, y + cell / 2, f"1 × {n}", anchor="start", size="small", mono=True)
        for j in range(n):
            c.rect(left + j * pitch, y, cell, cell, tone="accent" if j == n - 1 else "key", rx=2)
        y += pitch + row_gap
    y += 4
    c.rect(8, y, 12, 12, tone="query", rx=2)
    c.text(24, y + 6, "prefill score", anchor="start", size="small")
    c.rect(118, y, 12, 12, tone="key", rx=2)
    c.text(134, y + 6, "vs a stored key", anchor="start", size="small")
    c.rect(218, y, 12, 12, tone="accent", rx=2)
    c.text(234, y + 6, "vs its own key", anchor="start", size="small")
    return c
