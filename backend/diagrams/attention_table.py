"""Self-attention as a T × T table: scores of every query against every key, a softmax along
each row, then a weighted mix of the values.

`learned=False` draws the book's hand example, where each word's own vector is its query, its
key and its value (softmax(X Xᵀ / √d) X, `every_word_in_context`); `learned=True` draws a
real layer, which first projects X to Q = X W_Q, K = X W_K and V = X W_V (`self_attention`
in backend/reference/river_bank.py). Every shape label is (rows, columns), as PyTorch prints it.
"""

from __future__ import annotations

from backend.diagrams.svg import Canvas

WIDTH = 360
SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def shape(*dims: int) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


def draw(T: int = 3, d: int = 4, d_k: int = 4, d_v: int | None = None,
         learned: bool = True) -> Canvas:
    if not 1 <= T <= 8:
        raise ValueError("T: 1 to 8 positions fit the width")
    d_v = d_k if d_v is None else d_v
    if not learned:
        d_k = d_v = d                      # no projections: queries, keys, values are X
    out_w = d_v
    if learned:
        desc = (f"A self-attention layer over {T} positions of width {d}. The input X, shape "
                f"({T}, {d}), is multiplied by three learned matrices: W_Q gives the queries Q "
                f"and W_K the keys K, each ({T}, {d_k}), and W_V the values V, ({T}, {d_v}). "
                f"Every query is compared with every key: Q Kᵀ / √{d_k} is a {T} × {T} table of "
                f"scores, one row per query. A softmax along each row turns it into weights "
                f"that add up to 1, and the weights mix the values: the output A V has shape "
                f"({T}, {d_v}).")
        title = f"Queries, keys and values, and the {T} × {T} score table"
    else:
        desc = (f"Self-attention with no learned matrices, over {T} words of {d} numbers each. "
                f"The words X, shape ({T}, {d}), are compared with themselves: X Xᵀ / √{d} is a "
                f"{T} × {T} table of scores, row i holding word i's score with every word. A "
                f"softmax along each row turns the scores into weights that add up to 1, and "
                f"the weights mix the words: the output A X has shape ({T}, {d}), as wide as "
                f"the input.")
        title = f"Score, weigh, mix: the {T} × {T} table of self-attention"
    grid_top = 170 if learned else 110
    cell = min(26, 120 / T)
    gx = 62                                  # the table's left edge
    gw = cell * T
    c = Canvas(WIDTH, grid_top + max(gw + 40, 88), title=title, desc=desc)

    # ---- the input
    c.box(125, 8, 110, 40, "X", sub=shape(T, d), tone="plain")
    if learned:
        boxes = (("Q", "query", 14, d_k, "W_Q"), ("K", "key", 128, d_k, "W_K"),
                 ("V", "value", 246, d_v, "W_V"))
        for name, tone, x, width, w in boxes:
            c.arrow(180, 48, x + 50, 88, tone=tone, head=6, label=w,
                    label_side="left" if name == "Q" else "right")
            c.box(x, 90, 100, 40, name, sub=shape(T, width), tone=tone)
        q_from, k_from, v_from = (64, 130), (178, 130), (296, 130)
    else:
        q_from, k_from, v_from = (140, 48), (200, 48), (235, 30)
    # ---- the table: row i is query i, column j is key j
    c.arrow(*q_from, gx - 22, grid_top - 4, tone="query", head=6)
    c.arrow(*k_from, gx + gw / 2 + 6, grid_top - 16, tone="key", head=6)
    for j in range(T):
        c.text(gx + cell * (j + 0.5), grid_top - 8, ("k" if learned else "x") +
               str(j + 1).translate(SUB), size="small", tone="key")
    for i in range(T):
        c.text(gx - 8, grid_top + cell * (i + 0.5), ("q" if learned else "x") +
               str(i + 1).translate(SUB), size="small", anchor="end", tone="query")
        for j in range(T):
            c.rect(gx + cell * j, grid_top + cell * i, cell, cell, rx=2,
                   tone="accent" if i == T - 1 else "plain")
    below = grid_top + gw
    scores = "Q Kᵀ / √" + str(d_k) if learned else "X Xᵀ / √" + str(d)
    c.text(gx + gw / 2, below + 14, scores, size="small", mono=True)
    c.text(gx + gw / 2, below + 30, f"scores {shape(T, T)}", size="small", mono=True)
    # ---- softmax each row, then mix
    ox = 246
    oy = grid_top + gw / 2 - 20
    c.arrow(gx + gw + 8, grid_top + gw / 2, ox - 4, grid_top + gw / 2, tone="accent", head=6)
    c.text((gx + gw + ox) / 2, grid_top + gw / 2 - 12, "softmax", size="small")
    c.text((gx + gw + ox) / 2, grid_top + gw / 2 + 12, "each row", size="small")
    if learned:
        c.arrow(*v_from, ox + 50, oy - 2, tone="value", head=6)
    else:
        c.path(f"M 235 28 H 330 V {oy - 8}", tone="value")
        c.arrow(330, oy - 10, 330, oy - 2, tone="value", head=6)
    c.box(ox, oy, 100, 40, "A V" if learned else "A X", sub=shape(T, out_w), tone="value")
    c.text(ox + 50, oy + 56, "one row per word", size="small")
    return c
