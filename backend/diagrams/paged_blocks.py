"""Pages of a paged KV cache: each request's logical blocks, its block table, and the physical
blocks they point at. The tables are the book's own allocator's (`paged.PagedKV`), after the
requests have written their tokens one at a time, in turn, as decode steps do, so their blocks
interleave in memory."""

from __future__ import annotations

from backend.reference.paged import PagedKV, cdiv

from .svg import Canvas

NAMES = "ABCD"


def tables(lengths: list[int], block_size: int, free: int = 2) -> tuple[PagedKV, int]:
    """The allocator after the requests wrote their tokens in turn; and its number of blocks."""
    n_blocks = sum(cdiv(n, block_size) for n in lengths) + free
    kv = PagedKV(n_blocks, block_size)
    for r in range(len(lengths)):
        kv.add(r, 1)
    for t in range(2, max(lengths) + 1):
        for r, n in enumerate(lengths):
            if t <= n:
                kv.append(r)
    return kv, n_blocks


def draw(lengths: list[int] | tuple[int, ...] = (37, 20), block_size: int = 16,
         free: int = 2) -> Canvas:
    lengths = list(lengths)
    if not (1 <= len(lengths) <= 4 and all(1 <= n <= 8 * block_size for n in lengths)
            and block_size in (4, 8, 16, 32) and 0 <= free <= 4):
        raise ValueError("1 to 4 requests, block size 4, 8, 16 or 32, at most 4 free blocks")
    kv, n_blocks = tables(lengths, block_size, free)
    if n_blocks > 8:
        raise ValueError("at most 8 physical blocks fit the width")
    owner = {b: r for r in range(len(lengths)) for b in kv.tables[r]}
    cell, gap, left = 38, 5, 112
    row_h, top = 50, 30
    phys_y = top + len(lengths) * row_h + 40
    height = phys_y + 80
    said = "; ".join(
        f"request {NAMES[r]} holds {n} tokens in {len(kv.tables[r])} blocks "
        f"({', '.join(str(kv.pool.fill[b]) for b in kv.tables[r])} tokens), and its block table "
        f"points at physical blocks {', '.join(str(b) for b in kv.tables[r])}"
        for r, n in enumerate(lengths))
    desc = (f"A paged KV cache with blocks of {block_size} token slots and {n_blocks} physical "
            f"blocks. The requests wrote their tokens in turn, so each took a new block only when "
            f"its last one was full, wherever a free one was: {said}. Only each request's last "
            f"block has empty slots; {len(kv.pool.free)} blocks are free for whoever needs one.")
    c = Canvas(360, height, title="Logical blocks, block tables and physical blocks", desc=desc)
    c.text(8, 12, f"logical blocks ({block_size} slots each)", anchor="start", size="small",
           weight="bold")
    centres = {}
    behind = len(c.parts)  # the lines go under the boxes: drawn last, moved to here
    for r, n in enumerate(lengths):
        y = top + r * row_h
        c.text(8, y + 10, f"{NAMES[r]}: {n} tokens", anchor="start", size="small")
        c.text(8, y + 28, "table " + " ".join(str(b) for b in kv.tables[r]), anchor="start",
               size="small", mono=True)
        for i, b in enumerate(kv.tables[r]):
            x = left + i * (cell + gap)
            fill = kv.pool.fill[b]
            c.rect(x, y, cell, 30, tone="plain", rx=3)
            c.rect(x, y, cell * fill / block_size, 30, tone="key" if r % 2 == 0 else "value", rx=3)
            c.text(x + cell / 2, y + 15, f"{fill}/{block_size}", size="small", mono=True)
            centres[(r, i)] = (x + cell / 2, y + 30)
    c.text(8, phys_y - 14, "physical blocks in memory", anchor="start", size="small",
           weight="bold")
    pw = (360 - 16 - (n_blocks - 1) * 4) / n_blocks
    for b in range(n_blocks):
        x = 8 + b * (pw + 4)
        if b in owner:
            r = owner[b]
            fill = kv.pool.fill[b]
            c.rect(x, phys_y, pw, 30, tone="plain", rx=3)
            c.rect(x, phys_y, pw * fill / block_size, 30, tone="key" if r % 2 == 0 else "value",
                   rx=3)
            c.text(x + pw / 2, phys_y + 15, NAMES[r], size="small", weight="bold")
            i = kv.tables[r].index(b)
            sx, sy = centres[(r, i)]
            c.line(sx, sy, x + pw / 2, phys_y - 2, tone="muted", width=1)
            c.parts.insert(behind, c.parts.pop())
        else:
            c.rect(x, phys_y, pw, 30, tone="plain", rx=3, dashed=True)
            c.text(x + pw / 2, phys_y + 15, "free", size="small", tone="muted")
        c.text(x + pw / 2, phys_y + 42, str(b), size="small", mono=True)
    c.text(8, height - 12, "shaded: slots holding a token; the rest of a block is empty",
           anchor="start", size="small")
    return c
