"""The three families' picture is drawn from (T, S) and its grids are the book's own masks."""

from __future__ import annotations

import re

import pytest
import torch

from backend.diagrams import three_families
from backend.reference.masks import causal_mask, cross_mask, padding_mask


def cells(T, S):
    svg = three_families.draw(T=T, S=S).render("fig-f")
    return svg.count("tw-d-cell-on"), svg.count("tw-d-cell-off")


@pytest.mark.parametrize("T, S", [(5, 4), (3, 6), (1, 1)])
def test_cell_counts_follow_the_configuration(T, S):
    on, off = cells(T, S)
    causal = T * (T + 1) // 2
    # encoder-only T², decoder-only and the decoder's causal triangle, the encoder S², cross T·S
    assert on == T * T + 2 * causal + S * S + T * S
    assert off == 2 * (T * T - causal)


def test_a_longer_sequence_draws_more_cells_and_new_labels():
    small, big = three_families.draw(T=3, S=2).texts(), three_families.draw(T=6, S=5).texts()
    assert "3 × 2" in small and "6 × 5" in big and "6 × 5" not in small
    assert cells(6, 5)[0] > cells(3, 2)[0]


def test_the_grids_are_the_reference_masks():
    """The picture's allowed cells, row by row, are those of causal_mask and cross_mask."""
    T, S = 4, 3
    m = three_families.masks_for(T, S)
    assert torch.equal(m["decoder-only"], causal_mask(T))
    assert torch.equal(m["decoder"], causal_mask(T))
    full_src = cross_mask(torch.tensor([S]), T, S)[0, 0]          # no source pads
    assert torch.equal(m["cross"], full_src) and m["cross"].shape == (T, S)
    assert torch.equal(m["encoder"], padding_mask(torch.tensor([S]), S)[0, 0].expand(S, S))
    # the desc states the counts the picture shows
    desc = three_families.draw(T=T, S=S).desc
    assert f"{int(causal_mask(T).sum())} cells on and below the diagonal" in desc
    assert f"full {T} × {S} grid" in desc


def test_the_size_is_bounded_for_a_phone():
    with pytest.raises(ValueError):
        three_families.draw(T=9)
    svg = three_families.draw(T=6, S=6).render("fig-f")
    xs = [float(x) + float(w) for x, w in re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg)]
    assert max(xs) <= 360
