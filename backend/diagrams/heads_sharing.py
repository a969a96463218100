"""Diagram: h query heads sharing n_kv key/value heads (multi-head, grouped-query, multi-query).

Drawn from (n_heads, n_kv): a row of h query heads above a row of n_kv key/value heads, each
query head joined to the key/value head it reads. The grouping is the reference code's own:
query head i reads key/value head i // (h / n_kv), which is what `repeat_kv`
(`backend/reference/grouped_query.py`) lines up.
"""

from __future__ import annotations

from backend.diagrams.svg import Canvas

WIDTH = 360


def groups(n_heads: int, n_kv: int) -> list[int]:
    """For each query head, the key/value head it reads (contiguous groups, as repeat_kv)."""
    n_rep = n_heads // n_kv
    return [i // n_rep for i in range(n_heads)]


def kind(n_heads: int, n_kv: int) -> str:
    if n_kv == n_heads:
        return "multi-head"
    if n_kv == 1:
        return "multi-query"
    return "grouped-query"


def draw(n_heads: int = 8, n_kv: int = 2) -> Canvas:
    if not (1 <= n_kv <= n_heads <= 64) or n_heads % n_kv:
        raise ValueError("need 1 <= n_kv <= n_heads <= 64 with n_kv dividing n_heads")
    n_rep = n_heads // n_kv
    margin = 14
    span = WIDTH - 2 * margin
    q_pitch = span / n_heads
    q_w = max(q_pitch - (4 if q_pitch > 12 else 1.5), 2)
    q_label = n_heads <= 12
    q_top, q_h = 40, 26
    kv_top, kv_h = 130, 30
    g = groups(n_heads, n_kv)
    name = kind(n_heads, n_kv)
    desc = (
        f"{name.capitalize()} attention with {n_heads} query heads and {n_kv} key/value "
        f"head{'s' if n_kv > 1 else ''}. Each key/value head is shared by a contiguous group of "
        f"{n_rep} query head{'s' if n_rep > 1 else ''}"
        + (f": query heads {', '.join(f'{k * n_rep}–{k * n_rep + n_rep - 1}' for k in range(n_kv))} "
           f"read key/value heads {', '.join(str(k) for k in range(n_kv))}" if 1 < n_rep and n_kv <= 8 else "")
        + (f". The key/value cache holds all {n_heads} heads, as multi-head attention's does."
           if n_kv == n_heads else
           f". The key/value cache holds {n_kv} head{'s' if n_kv > 1 else ''} instead of "
           f"{n_heads}: {n_kv}/{n_heads} of multi-head attention's.")
    )
    c = Canvas(WIDTH, 212, title=f"{n_heads} query heads, {n_kv} key/value heads", desc=desc)
    c.text(WIDTH / 2, 16, f"h = {n_heads} query heads", weight="bold")
    kv_pitch = span / n_kv
    kv_w = max(kv_pitch - (8 if kv_pitch > 24 else 2), 3)
    for k in range(n_kv):  # draw the joins first, under the boxes
        kx = margin + k * kv_pitch + kv_pitch / 2
        for i in (j for j in range(n_heads) if g[j] == k):
            qx = margin + i * q_pitch + q_pitch / 2
            c.line(qx, q_top + q_h, kx, kv_top, tone="muted", width=1)
    for i in range(n_heads):
        x = margin + i * q_pitch + (q_pitch - q_w) / 2
        c.rect(x, q_top, q_w, q_h, tone="query", rx=3 if q_w > 8 else 1)
        if q_label:
            c.text(x + q_w / 2, q_top + q_h / 2, f"Q{i}", size="small" if n_heads > 6 else "normal")
    kv_label = "normal" if kv_w >= 40 else "small" if kv_w >= 24 else None
    for k in range(n_kv):
        x = margin + k * kv_pitch + (kv_pitch - kv_w) / 2
        c.rect(x, kv_top, kv_w, kv_h, tone="key", rx=3 if kv_w > 8 else 1)
        if kv_label:
            c.text(x + kv_w / 2, kv_top + kv_h / 2, f"KV{k}", size=kv_label)
    c.text(WIDTH / 2, kv_top + kv_h + 18, f"n_kv = {n_kv} key/value head{'s' if n_kv > 1 else ''}",
           weight="bold")
    c.text(WIDTH / 2, kv_top + kv_h + 40,
           f"{name} · {n_rep} per KV head · cache ÷ {n_rep}" if n_rep > 1
           else f"{name} · every head its own K, V", size="small")
    return c
