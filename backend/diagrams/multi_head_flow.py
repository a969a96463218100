"""Diagram: multi-head attention as a flow. Project X to Q, K and V; split each into h heads of
width d/h; attend within each head; put the heads side by side again; mix them with W_O.

Drawn from (T, d_model, n_heads), so the shapes on the boxes are the ones the chapter's widget
starts at; the split is the reshape `backend/reference/multi_head.py` does (d = h x d_head).
"""

from __future__ import annotations

from backend.diagrams.svg import Canvas

W = 470
MAX_DRAWN_HEADS = 8


def draw(seq_len: int = 6, d_model: int = 512, n_heads: int = 8) -> Canvas:
    for name, v in (("seq_len", seq_len), ("d_model", d_model), ("n_heads", n_heads)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if d_model % n_heads:
        raise ValueError(f"n_heads must divide d_model: {n_heads} does not divide {d_model}")
    T, d, h = seq_len, d_model, n_heads
    dk = d // h
    drawn = min(h, MAX_DRAWN_HEADS)
    desc = (f"Multi-head attention as a flow, top to bottom. The input X, {T} positions of {d} "
            f"numbers, is multiplied by W_Q, W_K and W_V, giving Q, K and V of the same shape. Each "
            f"is split along its {d} columns into {h} heads of {dk} columns. Each head attends on "
            f"its own: softmax of its queries against its keys, divided by the square root of {dk}, "
            f"then a weighted sum of its values, giving {T} rows of {dk} numbers. The {h} results are "
            f"put side by side again, {T} by {d}, and multiplied by W_O, a {d} by {d} matrix, whose "
            f"every output number is a weighted sum over all heads' numbers: the one place the heads "
            f"meet. The output has X's shape, {T} by {d}.")
    c = Canvas(W, 470, title=f"Multi-head attention, h = {h} heads of d/h = {dk}", desc=desc)
    mid = W / 2
    c.box(mid - 80, 10, 160, 40, f"X   ({T} × {d})", tone="plain", sub="one row per position")
    xs = (mid - 160, mid, mid + 160)
    for x, (name, tone) in zip(xs, (("Q = X W_Q", "query"), ("K = X W_K", "key"),
                                    ("V = X W_V", "value"))):
        c.arrow(mid, 50, x, 78, tone="muted")
        c.box(x - 62, 80, 124, 36, name, tone=tone, sub=f"{T} × {d}", mono=False)
    c.text(mid, 138, f"split the {d} columns into h = {h} heads of {dk}", size="small", italic=True)
    # the heads, side by side: each box holds that head's Q, K, V slices and its attention
    span = W - 40
    pitch = span / drawn
    box_w = pitch - 6
    for i in range(drawn):
        x = 20 + i * pitch + 3
        for j, tone in enumerate(("query", "key", "value")):
            c.rect(x + j * box_w / 3 + 1, 150, box_w / 3 - 2, 22, tone=tone, rx=2)
        c.line(x + box_w / 2, 172, x + box_w / 2, 190, tone="muted")
        c.rect(x, 190, box_w, 52, tone="accent", rx=4)
        label = f"head {i + 1}" if drawn == h or i < drawn - 1 else f"… {h}"
        c.text(x + box_w / 2, 206, label, size="small", weight="bold")
        c.text(x + box_w / 2, 224, f"{T} × {dk}", size="small")
    c.text(mid, 257, "each head: softmax(Q_i K_iᵀ / √d_k) V_i, on its own", size="small", italic=True)
    c.box(mid - 120, 272, 240, 36, f"concatenate: {T} × {d}", tone="plain",
          sub="the heads side by side again")
    c.arrow(mid, 308, mid, 334, tone="muted")
    c.box(mid - 120, 336, 240, 44, f"× W_O   ({d} × {d})", tone="brown",
          sub="mixes every head into every output number")
    c.arrow(mid, 380, mid, 406, tone="muted")
    c.box(mid - 80, 408, 160, 40, f"output   ({T} × {d})", tone="plain", sub="X's shape")
    return c
