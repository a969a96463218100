"""Diagram: the three masks of an encoder-decoder, as grids of who may look at whom.

Drawn from (T, pad, T_src): a source of T_src tokens whose last `pad` are padding, and a target
of T tokens. The grids are the book's own masks (`seq2seq_masks` in
`backend/reference/encoder_decoder.py`), not a picture of them: a cell is drawn "may look"
exactly where the reference code's boolean is True.
"""

from __future__ import annotations

import torch

from backend.diagrams.svg import Canvas
from backend.reference.encoder_decoder import seq2seq_masks

WIDTH = 360


def grids(T: int, pad: int, T_src: int) -> dict[str, torch.Tensor]:
    """The three (queries, keys) boolean grids, True = may attend, from the reference code."""
    m = seq2seq_masks(torch.tensor([T_src - pad]), T_src, T)
    return {
        "padding": m.encoder[0, 0].expand(T_src, T_src),  # (T_src, T_src)
        "causal": m.decoder,  # (T, T)
        "cross": m.cross[0, 0],  # (T, T_src)
    }


def draw(T: int = 4, pad: int = 1, T_src: int = 5) -> Canvas:
    if not (1 <= T <= 12 and 1 <= T_src <= 12 and 0 <= pad < T_src):
        raise ValueError("need 1 <= T, T_src <= 12 and 0 <= pad < T_src")
    g = grids(T, pad, T_src)
    panels = [
        ("padding", "encoder", g["padding"]),
        ("causal", "decoder", g["causal"]),
        ("cross", "dec → enc", g["cross"]),
    ]
    gap, margin = 22, 12
    cols = sum(int(a.shape[1]) for _, _, a in panels)
    cell = min(22.0, (WIDTH - 2 * margin - 2 * gap) / cols)
    rows = max(int(a.shape[0]) for _, _, a in panels)
    top = 44
    height = top + rows * cell + 74
    real = T_src - pad
    desc = (
        f"Three grids of who may look at whom; rows are queries, columns are keys. "
        f"Encoder padding mask, {T_src} by {T_src}: the source has {real} real tokens and {pad} "
        f"padding, so the last {pad} column(s) are blocked for every row. "
        f"Decoder causal mask, {T} by {T}: row i may look at columns 0 to i, the strict upper "
        f"triangle is blocked. Cross mask, {T} by {T_src}: every target query may look at every "
        f"real source key, the padded column(s) blocked, with no triangle."
    )
    c = Canvas(WIDTH, height, title="Padding, causal and cross masks", desc=desc)
    used = sum(int(a.shape[1]) for _, _, a in panels) * cell + 2 * gap
    x = (WIDTH - used) / 2
    for kind, who, allowed in panels:
        n_q, n_k = int(allowed.shape[0]), int(allowed.shape[1])
        w = n_k * cell
        c.text(x + w / 2, 14, kind, weight="bold")
        c.text(x + w / 2, 30, f"{n_q} × {n_k}", size="small", mono=True)
        for i in range(n_q):
            for j in range(n_k):
                ok = bool(allowed[i, j])
                c.rect(x + j * cell + 1, top + i * cell + 1, cell - 2, cell - 2,
                       tone="accent" if ok else "muted", rx=2)
        if kind != "causal" and pad:
            c.text(x + (n_k - pad / 2) * cell, top + n_q * cell + 10, "pad", size="small")
        c.text(x + w / 2, top + rows * cell + 26, who, size="small", italic=True)
        x += w + gap
    y = top + rows * cell + 50
    c.rect(margin + 40, y - 7, 14, 14, tone="accent", rx=2)
    c.text(margin + 60, y, "may look", anchor="start")
    c.rect(margin + 180, y - 7, 14, 14, tone="muted", rx=2)
    c.text(margin + 200, y, "blocked", anchor="start")
    c.text(WIDTH / 2, y + 18, "rows: queries · columns: keys", size="small")
    return c
