"""Prefix caching at block granularity: a self-hosted engine keeps each request's keys and values
in blocks of `block` tokens and can reuse a block only when it is whole and every token in it
and before it is the same. Drawn for a prompt of `tokens` tokens whose first `shared` match an
earlier request: the whole shared blocks are read from the cache, the rest is prefilled."""

from __future__ import annotations

import math

from backend.reference.serving import cached_prefix_tokens

from .svg import Canvas


def draw(tokens: int = 80, shared: int = 40, block: int = 16) -> Canvas:
    if not (1 <= block and 1 <= tokens <= 12 * block and 0 <= shared <= tokens):
        raise ValueError("block >= 1, 1 <= tokens <= 12 blocks, 0 <= shared <= tokens")
    n_blocks = math.ceil(tokens / block)
    hit = cached_prefix_tokens(shared, block, prompt=tokens)  # never the prompt's last token
    left, top, bar_w, bar_h = 10, 60, 340, 26
    unit = bar_w / (n_blocks * block)
    desc = (f"A prompt of {tokens} tokens kept in {n_blocks} blocks of {block}. Its first "
            f"{shared} tokens are the same as an earlier request's. Only whole blocks of them "
            f"can be reused: {hit // block} block{'s' if hit // block != 1 else ''}, "
            f"{hit} tokens, come from the cache; the other {tokens - hit} tokens"
            + (f", including {shared - hit} of the shared tokens,"
               if shared > hit else "")
            + " are prefilled again.")
    c = Canvas(360, top + bar_h + 84, title="A prefix cache reuses whole blocks only",
               desc=desc)
    c.text(left, 12, f"{tokens} tokens in blocks of {block}", anchor="start", size="small",
           weight="bold")
    c.text(left, 28, f"the first {shared} match an earlier request", anchor="start",
           size="small")
    for b in range(n_blocks):
        lo, hi = b * block, min(tokens, (b + 1) * block)
        tone = "good" if hi <= hit else "accent"
        c.rect(left + lo * unit + 1, top, (hi - lo) * unit - 2, bar_h, tone=tone, rx=2)
        if (hi - lo) * unit < 44:  # too narrow for its range: the desc says it
            continue
        c.text(left + (lo + hi) / 2 * unit, top - 9, f"{lo + 1}–{hi}" if hi - lo > 1
               else f"{hi}", size="small", mono=True)
    x = left + shared * unit
    c.line(x, top - 2, x, top + bar_h + 6, tone="bad", width=2)
    c.text(min(max(x, left + 60), left + bar_w - 60), top + bar_h + 18,
           f"shared prefix ends at {shared}", size="small")
    y = top + bar_h + 36
    c.rect(left, y, 14, 14, tone="good", rx=2)
    c.text(left + 18, y + 7, f"from the cache: {hit} tokens", anchor="start", size="small")
    c.rect(left, y + 20, 14, 14, tone="accent", rx=2)
    c.text(left + 18, y + 27, f"prefilled again: {tokens - hit} tokens", anchor="start",
           size="small")
    return c
