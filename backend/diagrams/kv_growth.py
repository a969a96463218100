"""The KV cache grows one column per generated token: prefill writes the prompt's keys and
values at once, each decode step appends one pair and reads all of them."""

from __future__ import annotations

from .svg import Canvas


def draw(prompt: int = 3, steps: int = 4) -> Canvas:
    if not (1 <= prompt <= 8 and 1 <= steps <= 8 and prompt + steps <= 12):
        raise ValueError("prompt 1..8, steps 1..8, at most 12 positions in all")
    rows = steps + 1
    cell, gap, left, top, row_h = 22, 3, 96, 34, 34
    total = prompt + steps
    width = max(360, left + total * (cell + gap) + 8)
    height = top + rows * row_h + 40
    desc = (f"A prompt of {prompt} tokens, then {steps} generated tokens. Prefill computes the "
            f"keys and values of all {prompt} prompt positions at once and stores them. Each "
            f"decode step then runs only its newest position: it appends one key and value to "
            f"the cache and its query reads every pair stored so far, {prompt + 1} at the first "
            f"step and {total} at the last. Nothing stored is ever recomputed.")
    c = Canvas(width, height, title="The KV cache grows by one column per token", desc=desc)
    c.text(left, 14, "cached key/value pairs, by position", anchor="start", size="small")
    for r in range(rows):
        y = top + r * row_h
        n = prompt if r == 0 else prompt + r
        label = "prefill" if r == 0 else f"step {r}"
        c.text(8, y + cell / 2, label, anchor="start", weight="bold" if r == 0 else None)
        for i in range(n):
            x = left + i * (cell + gap)
            new = (r == 0) or i == n - 1
            tone = "key" if new and r == 0 else ("accent" if new else "plain")
            c.rect(x, y, cell, cell, tone=tone, rx=3)
        reads = f"reads {n}" if r else f"writes {n}"
        c.text(left + n * (cell + gap) + 4, y + cell / 2, reads, anchor="start", size="small",
               mono=True)
    y = top + rows * row_h + 8
    c.rect(8, y, 14, 14, tone="key", rx=3)
    c.text(26, y + 7, "prompt, written once", anchor="start", size="small")
    c.rect(170, y, 14, 14, tone="accent", rx=3)
    c.text(188, y + 7, "new this step", anchor="start", size="small")
    return c
