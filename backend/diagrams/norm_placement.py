"""Where the norm sits: one block wired pre-norm, x + f(Norm(x)), beside the same block wired
post-norm, Norm(x + f(x)).

Each column is the residual stream running down through `n_blocks` blocks of two sublayers
(attention, then the MLP). In pre-norm each norm sits on a branch, before its sublayer, and the
stream itself is only ever added to; in post-norm each norm sits on the stream, after the add,
so everything that flows down the stack passes through it.
"""

from __future__ import annotations

from .svg import Canvas

SUBLAYERS = (("attention", "query"), ("MLP", "good"))
COL_W = 172               # one column's width
STREAM_DX = 34            # the stream's x inside a column
BRANCH_X = 70             # left edge of the branch's boxes inside a column
BOX_W = 92
STEP = 96                 # height of one sublayer


def _column(c: Canvas, x0: float, y0: float, n_blocks: int, kind: str) -> None:
    sx = x0 + STREAM_DX
    bx = x0 + BRANCH_X
    bcx = bx + BOX_W / 2
    pre = kind == "pre"
    c.text(x0 + COL_W / 2, y0, "pre-norm" if pre else "post-norm", weight="bold")
    c.text(x0 + COL_W / 2, y0 + 18, "x + f(Norm(x))" if pre else "Norm(x + f(x))", mono=True,
           size="small")
    y = y0 + 38
    c.text(sx, y, "x", mono=True)
    y += 10
    for _block in range(n_blocks):
        for name, tone in SUBLAYERS:
            # the stream, from here to the add
            add_y = y + (64 if pre else 52)
            c.line(sx, y, sx, add_y - 8, tone="accent", width=3)
            branch_y = y + 8
            c.line(sx, branch_y, bcx, branch_y)
            if pre:
                c.arrow(bcx, branch_y, bcx, branch_y + 8)
                c.box(bx, branch_y + 8, BOX_W, 20, "Norm", size="small")
                c.arrow(bcx, branch_y + 28, bcx, branch_y + 34)
                c.box(bx, branch_y + 34, BOX_W, 22, name, tone=tone)
                out_y = branch_y + 45
            else:
                c.arrow(bcx, branch_y, bcx, branch_y + 14)
                c.box(bx, branch_y + 14, BOX_W, 22, name, tone=tone)
                out_y = branch_y + 25
            c.line(bx, out_y, bx - 14, out_y)
            c.line(bx - 14, out_y, bx - 14, add_y)
            c.arrow(bx - 14, add_y, sx + 8, add_y)
            c.circle(sx, add_y, 8)
            c.text(sx, add_y, "+", weight="bold")
            if pre:
                y = add_y + 8 + (STEP - 72)
                c.line(sx, add_y + 8, sx, y, tone="accent", width=3)
            else:
                c.arrow(sx, add_y + 8, sx, add_y + 18, tone="accent", width=3)
                c.box(sx - 30, add_y + 18, 60, 20, "Norm", tone="bad", size="small")
                y = add_y + 38
                c.line(sx, y, sx, y + (STEP - 90), tone="accent", width=3)
                y = y + (STEP - 90)
    c.arrow(sx, y, sx, y + 14, tone="accent", width=3)
    c.text(sx, y + 24, "y", mono=True)


def height(n_blocks: int) -> float:
    return 48 + 10 + n_blocks * len(SUBLAYERS) * STEP + 40


def draw(n_blocks: int = 1) -> Canvas:
    if not isinstance(n_blocks, int) or not 1 <= n_blocks <= 3:
        raise ValueError(f"n_blocks must be 1, 2 or 3, got {n_blocks!r}")
    n_sub = n_blocks * len(SUBLAYERS)
    blocks = "one block" if n_blocks == 1 else f"{n_blocks} blocks"
    desc = (f"Two columns, each the residual stream (a thick line) running down through {blocks}, "
            f"{n_sub} sublayers in all, attention then the MLP in each block. Left, pre-norm: "
            f"each sublayer's branch leaves the stream, passes a norm (RMSNorm in Llama) and then the sublayer, "
            f"and is added back; nothing but additions touches the stream, so x reaches y along "
            f"an unbroken identity path. Right, post-norm: the branch runs the sublayer on the "
            f"stream as it is, the result is added, and then a norm (LayerNorm in 2017) sits on the stream "
            f"itself, so the path from x to y passes through {n_sub} norms.")
    c = Canvas(360, height(n_blocks), title="Pre-norm and post-norm: where the norm sits",
               desc=desc)
    _column(c, 4, 10, n_blocks, "pre")
    c.line(180, 6, 180, height(n_blocks) - 6, tone="muted", dashed=True, width=1)
    _column(c, 184, 10, n_blocks, "post")
    return c
