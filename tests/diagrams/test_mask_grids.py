"""The masks diagram: its grids are the reference code's masks and follow (T, pad, T_src)."""

from __future__ import annotations

import re

import torch

from backend.diagrams import mask_grids
from backend.reference import masks
from backend.reference.encoder_decoder import seq2seq_masks


def cells(canvas, tone):
    """How many grid cells of a tone (the legend's one swatch each excluded)."""
    svg = "".join(canvas.parts)
    return len(re.findall(rf'class="tw-d-box tw-d-{tone}"', svg)) - 1


def expected(T, pad, T_src):
    real = T_src - pad
    allowed = real * T_src + T * (T + 1) // 2 + T * real
    total = T_src * T_src + T * T + T * T_src
    return allowed, total - allowed


def test_the_grids_follow_the_configuration():
    a, b = mask_grids.draw(T=4, pad=1, T_src=5), mask_grids.draw(T=6, pad=2, T_src=7)
    assert (cells(a, "accent"), cells(a, "muted")) == expected(4, 1, 5) == (46, 15)
    assert (cells(b, "accent"), cells(b, "muted")) == expected(6, 2, 7)
    assert "4 × 5" in a.texts() and "6 × 7" in b.texts() and "7 × 7" in b.texts()
    assert "pad" in a.texts() and "pad" not in mask_grids.draw(T=3, pad=0, T_src=3).texts()


def test_the_grids_are_the_reference_masks():
    g = mask_grids.grids(4, 1, 5)
    m = seq2seq_masks(torch.tensor([4]), 5, 4)
    assert torch.equal(g["causal"], masks.causal_mask(4))  # lower triangle, True = may look
    assert torch.equal(g["padding"], m.encoder[0, 0].expand(5, 5))
    assert torch.equal(g["cross"], masks.cross_mask(torch.tensor([4]), 4, 5)[0, 0])
    assert g["cross"][:, -1].logical_not().all() and g["cross"][:, :-1].all()  # no triangle
    assert not g["causal"][0, 1:].any() and g["causal"][-1].all()


def test_labels_and_description_say_true_things():
    c = mask_grids.draw(T=4, pad=1, T_src=5)
    assert [t for t in c.texts() if t in ("padding", "causal", "cross")] == ["padding", "causal", "cross"]
    shapes = [t for t in c.texts() if "×" in t]
    m = seq2seq_masks(torch.tensor([4]), 5, 4)
    assert shapes == ["5 × 5", "4 × 4", f"{m.cross.shape[-2]} × {m.cross.shape[-1]}"]
    assert "4 real tokens and 1 padding" in c.desc and "4 by 5" in c.desc
    assert 'viewBox="0 0 360 ' in c.render("fig")
