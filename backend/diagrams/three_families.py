"""The three families of Transformer, each drawn with the masks it attends under.

Encoder-only: one stack, every token sees every token (a full T × T grid). Decoder-only: one
stack, each token sees itself and earlier ones (the causal triangle). Encoder-decoder: an
encoder over the S source tokens (full S × S), a decoder over the T target tokens (causal
T × T) and cross-attention from the target to the source (full T × S, not square). The grids
are the book's own masks (`backend.reference.masks`), cell by cell.
"""

from __future__ import annotations

import torch

from backend.reference.masks import causal_mask

from .svg import Canvas

CELL = 11          # one query-key cell, in units
MAX_TOKENS = 6     # so three grids fit a phone's 360 units


def _grid(c: Canvas, x: float, y: float, mask: torch.Tensor, caption: str) -> None:
    """A mask as a grid of cells: rows are queries, columns keys; allowed cells filled."""
    rows, cols = mask.shape
    for i in range(rows):
        for j in range(cols):
            ok = bool(mask[i, j])
            c.rect(x + j * CELL, y + i * CELL, CELL - 1.5, CELL - 1.5, rx=1.5,
                   tone="query" if ok else "muted", klass="tw-d-cell-on" if ok else "tw-d-cell-off")
    for k, line in enumerate(caption.split("\n")):
        c.text(x + cols * CELL / 2, y + rows * CELL + 10 + 13 * k, line, size="small", mono=True)


def masks_for(T: int, S: int) -> dict[str, torch.Tensor]:
    """The five grids, from the reference masks (True = may attend)."""
    return {"encoder-only": torch.ones(T, T, dtype=torch.bool),
            "decoder-only": causal_mask(T),
            "encoder": torch.ones(S, S, dtype=torch.bool),
            "decoder": causal_mask(T),
            "cross": torch.ones(T, S, dtype=torch.bool)}


def draw(T: int = 5, S: int = 4) -> Canvas:
    if not (1 <= T <= MAX_TOKENS and 1 <= S <= MAX_TOKENS):
        raise ValueError(f"T and S must be from 1 to {MAX_TOKENS}")
    m = masks_for(T, S)
    n_causal = int(m["decoder-only"].sum())
    desc = (f"Three rows, one per family, each with the mask its attention uses, drawn as grids "
            f"whose rows are queries and columns keys; a filled cell may attend. Encoder-only "
            f"(BERT): one stack over T = {T} tokens, a full {T} × {T} grid, all {T * T} cells "
            f"allowed, trained to fill in hidden tokens. Decoder-only (GPT, Llama): one stack, a "
            f"causal {T} × {T} grid, {n_causal} cells on and below the diagonal allowed, trained "
            f"to predict the next token. Encoder-decoder (T5, the 2017 Transformer): an encoder "
            f"over S = {S} source tokens with a full {S} × {S} grid, a decoder over the T = {T} "
            f"target tokens with the causal {T} × {T} grid, and cross-attention from the target "
            f"to the source, a full {T} × {S} grid that is not square unless S equals T.")
    grid_h = max(T, S) * CELL
    row_h = grid_h + 66
    c = Canvas(360, 3 * row_h + 22, title="Three families and their masks", desc=desc)
    rows = [("encoder-only", "BERT · fill blanks", "sees both ways",
             [("encoder-only", f"{T} × {T}")]),
            ("decoder-only", "GPT, Llama · next token", "sees itself and earlier",
             [("decoder-only", f"{T} × {T}")]),
            ("encoder-decoder", "T5 · text to text", "three attentions",
             [("encoder", f"encoder\n{S} × {S}"), ("decoder", f"decoder\n{T} × {T}"),
              ("cross", f"cross\n{T} × {S}")])]
    for r, (family, sub, sees, grids) in enumerate(rows):
        y0 = 4 + r * row_h
        c.rect(2, y0, 356, row_h - 6, tone="plain", rx=8, dashed=True)
        c.text(12, y0 + 16, family, anchor="start", weight="bold")
        c.text(12, y0 + 34, sub, anchor="start", size="small")
        c.text(12, y0 + 50, sees, anchor="start", size="small", italic=True)
        widths = [max(m[key].shape[1] * CELL, 60) for key, _ in grids]
        x = max(112, 352 - sum(widths) - 14 * (len(grids) - 1))
        for key, caption in grids:
            mask = m[key]
            _grid(c, x, y0 + 24 + (grid_h - mask.shape[0] * CELL) / 2, mask, caption)
            x += max(mask.shape[1] * CELL, 60) + 14
    c.text(12, 3 * row_h + 12, "rows: queries · columns: keys · coloured: may attend · grey: blocked",
           anchor="start", size="small", tone="muted")
    return c
