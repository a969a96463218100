"""Where the parameters sit: one bar per model, each part as wide as the reference count says."""

from __future__ import annotations

import re

import pytest

from backend.diagrams import param_share
from backend.reference.counting import count_parameters
from backend.reference.presets import get_preset


def _bar_widths(svg: str) -> list[float]:
    """Widths of the bars' segments (rx=0 rects), in drawing order."""
    return [float(w) for w in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)" height="20" rx="0"', svg)]


def test_one_bar_per_model_and_the_picture_grows_with_them():
    one = param_share.draw(["llama-2-7b"])
    three = param_share.draw(["llama-2-7b", "llama-3-8b", "llama-3.2-1b"])
    assert three.height > one.height
    assert [t for t in three.texts() if t.startswith("Llama")] == ["Llama-2-7B", "Llama-3-8B", "Llama-3.2-1B"]
    assert len(_bar_widths(one.render("f"))) == 4          # embedding, attention, MLP, head
    assert len(_bar_widths(three.render("f"))) == 4 + 4 + 3  # the tied model draws no head


@pytest.mark.parametrize("preset", ["llama-2-7b", "llama-3-8b", "llama-3.2-1b", "llama-2-70b"])
def test_segments_are_the_reference_counts(preset):
    n = count_parameters(get_preset(preset))
    widths = _bar_widths(param_share.draw([preset]).render("f"))
    parts = [n.embedding, n.attention, n.mlp] + ([n.lm_head] if n.lm_head else [])
    assert widths == pytest.approx([param_share.W * p / n.total for p in parts], abs=0.01)
    texts = param_share.draw([preset]).texts()
    blocks = n.per_layer * get_preset(preset).n_layers / n.total
    assert f"blocks {blocks:.1%}" in texts
    assert f"embedding {n.embedding / n.total:.1%}" in texts


def test_the_labels_say_what_the_model_chapter_says():
    texts = param_share.draw().texts()
    assert "blocks 96.1%" in texts            # Llama-2-7B: over 95% in the blocks
    assert "blocks 86.9%" in texts            # Llama-3-8B: the large vocabulary
    assert "head: tied" in texts and "1.24B · tied" in texts
    assert "8.03B" in texts and "6.74B" in texts
