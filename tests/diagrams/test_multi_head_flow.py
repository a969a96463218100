"""The multi-head flow diagram (heads chapter): its shapes follow its config, and the chapter
draws it at the multi_head widget's own defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from backend.compute import multi_head
from backend.diagrams import multi_head_flow
from backend.reference.multi_head import merge_heads, split_heads

ROOT = Path(__file__).resolve().parents[2]


def test_the_shapes_follow_the_config():
    texts = multi_head_flow.draw(seq_len=5, d_model=96, n_heads=4).texts()
    assert "X   (5 × 96)" in texts and "× W_O   (96 × 96)" in texts
    assert [t for t in texts if t.startswith("head ")] == ["head 1", "head 2", "head 3", "head 4"]
    assert texts.count("5 × 24") == 4
    many = multi_head_flow.draw(seq_len=5, d_model=320, n_heads=32).texts()
    assert "… 32" in many and len([t for t in many if t.startswith("head ")]) == 7
    with pytest.raises(ValueError, match="divide"):
        multi_head_flow.draw(d_model=100, n_heads=8)


def test_the_chapter_draws_it_at_the_widgets_defaults():
    text = (ROOT / "docs/chapters/heads.md").read_text(encoding="utf-8")
    config = re.search(r"name: multi_head_flow\nconfig: \{seq_len: (\d+), d_model: (\d+), n_heads: (\d+)\}", text)
    spec = multi_head.SPEC
    assert (int(config.group(2)), int(config.group(3))) == (spec.param("d_model").default,
                                                            spec.param("n_heads").default)


def test_the_split_is_a_reshape_that_moves_no_data():
    """'The split costs nothing: it is a reshape that reads the same numbers'; and putting the
    heads side by side again gives back the same matrix."""
    x = torch.randn(1, 6, 512)
    heads = split_heads(x, 8)
    assert heads.shape == (1, 8, 6, 64) and heads.data_ptr() == x.data_ptr()
    assert torch.equal(heads[0, 1], x[0, :, 64:128])  # head 2 is the next 64 columns
    assert torch.equal(merge_heads(heads), x)
