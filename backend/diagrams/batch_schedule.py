"""Static against continuous batching: the same requests, the same number of batch slots, two
schedules. A static batch waits for its longest answer; a continuous one refills a slot the step
after it frees (Yu et al., "Orca", OSDI 2022, iteration-level scheduling)."""

from __future__ import annotations

from .svg import Canvas

# Six tones of six different colours ("key" is "good"'s green and "value" is "purple", so
# neither is here); requests take them in turn, and a request whose slot neighbour already has
# its turn's tone takes the next one, so two requests side by side in a slot never look alike.
TONES = ("query", "good", "purple", "accent", "brown", "bad")


def static(lengths: list[int], slots: int) -> list[list[int | None]]:
    """Per slot, the request decoded at each step (None: idle). Requests go in groups of
    `slots`, in order; a group starts when the previous group's longest answer is done."""
    rows: list[list[int | None]] = [[] for _ in range(slots)]
    for start in range(0, len(lengths), slots):
        group = list(range(start, min(start + slots, len(lengths))))
        span = max(lengths[r] for r in group)
        for s in range(slots):
            r = group[s] if s < len(group) else None
            n = lengths[r] if r is not None else 0
            rows[s] += [r] * n + [None] * (span - n)
    return rows


def continuous(lengths: list[int], slots: int) -> list[list[int | None]]:
    """Per slot, the request decoded at each step: a slot takes the next waiting request as
    soon as its current one finishes (the lowest free slot first)."""
    rows: list[list[int | None]] = [[] for _ in range(slots)]
    for r, n in enumerate(lengths):
        s = min(range(slots), key=lambda i: (len(rows[i]), i))
        rows[s] += [r] * n
    total = max(len(row) for row in rows)
    return [row + [None] * (total - len(row)) for row in rows]


def tones(lengths: list[int], slots: int) -> list[str]:
    """Each request's tone: the palette in turn, skipping the tones of the requests just
    before and after it in its slot in either schedule (at most four neighbours, six tones)."""
    near: dict[int, set[int]] = {r: set() for r in range(len(lengths))}
    for plan in (static(lengths, slots), continuous(lengths, slots)):
        for row in plan:
            for a, b in zip(row, row[1:]):
                if a is not None and b is not None and a != b:
                    near[a].add(b)
                    near[b].add(a)
    out: list[str] = []
    for r in range(len(lengths)):
        taken = {out[n] for n in near[r] if n < r}
        out.append(next(TONES[(r + i) % len(TONES)] for i in range(len(TONES))
                        if TONES[(r + i) % len(TONES)] not in taken))
    return out


def draw(lengths: tuple[int, ...] = (6, 2, 3, 5, 2, 4), slots: int = 2) -> Canvas:
    lengths = list(lengths)
    if not (1 <= slots <= 4 and 1 <= len(lengths) <= 7 and all(1 <= n <= 8 for n in lengths)):
        raise ValueError("1..4 slots, 1..7 requests of 1..8 tokens")
    plans = {"static": static(lengths, slots), "continuous": continuous(lengths, slots)}
    steps = {k: len(p[0]) for k, p in plans.items()}
    idle = {k: sum(c is None for row in p for c in row) for k, p in plans.items()}
    cell, gap, left, row_h = 16, 2, 96, 22
    width = max(360, left + steps["static"] * (cell + gap) + 8)
    panel_h = 22 + slots * row_h + 8
    height = 20 + 2 * panel_h + 20
    names = "".join(chr(65 + r) for r in range(len(lengths)))
    tone = tones(lengths, slots)
    desc = (f"{len(lengths)} requests, {', '.join(f'{chr(65 + r)} {n}' for r, n in enumerate(lengths))} "
            f"output tokens, on a batch of {slots} slots. Static batching runs them in groups of "
            f"{slots}, and each group lasts as long as its longest answer: {steps['static']} "
            f"decode steps with {idle['static']} slot-steps idle. Continuous batching gives a "
            f"slot the next waiting request the step after its answer ends: "
            f"{steps['continuous']} steps with {idle['continuous']} idle.")
    c = Canvas(width, height, title="Static against continuous batching", desc=desc)
    y = 8
    for kind, plan in plans.items():
        c.text(8, y + 8, f"{kind}: {steps[kind]} steps", anchor="start", weight="bold")
        c.text(width - 8, y + 8, f"{idle[kind]} idle", anchor="end", size="small")
        y += 22
        for s, row in enumerate(plan):
            c.text(8, y + cell / 2, f"slot {s + 1}", anchor="start", size="small")
            for i, r in enumerate(row):
                x = left + i * (cell + gap)
                if r is None:
                    c.rect(x, y, cell, cell, tone="muted", rx=2, dashed=True)
                    continue
                c.rect(x, y, cell, cell, tone=tone[r], rx=2)
                if i == 0 or row[i - 1] != r:
                    c.text(x + cell / 2, y + cell / 2, names[r], size="small")
            y += row_h
        y += 8
    c.text(left, height - 10, "decode step →", anchor="start", size="small")
    return c
