"""The parity check's pipeline: the broken piece marked where the widget's break really sits."""

from __future__ import annotations

import pytest

from backend.compute.parity_faults import FAULTS, SWAPS, break_model
from backend.diagrams import parity_faults
from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM


def _bad_boxes(fault: str, **kw) -> int:
    return parity_faults.draw(fault, **kw).render("f").count("tw-d-box tw-d-bad")


def test_the_marked_pieces_follow_the_fault():
    assert _bad_boxes("none") == 0
    assert _bad_boxes("rope_layout") == 1 + 1  # the piece, and the comparison it spoils
    assert _bad_boxes("norm_upcast") == 3 + 1  # two norms per block and the final one
    labels = parity_faults.draw("repeat_kv").texts()
    assert "heads tiled" in labels and "no upcast" not in labels


def test_the_layer_count_is_drawn_and_described():
    two, six = parity_faults.draw("causal_mask", 2), parity_faults.draw("causal_mask", 6)
    assert "× 2" in two.texts() and "× 6" in six.texts()
    assert "every one of the 6 layers" in six.desc
    assert "the one layer" in parity_faults.draw("causal_mask", 1).desc


@pytest.mark.parametrize("fault", FAULTS)
def test_marked_pieces_are_the_pieces_the_break_swaps(fault):
    """One block of the real model: the number of pieces drawn broken is the number of modules
    the fault swaps for a broken subclass (the norms, the attention layer, the model's mask)."""
    cfg = ModelConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=8)
    with __import__("torch").device("meta"):
        model = break_model(DecoderLM(cfg), fault)
    broken = {b for _, b in SWAPS.values()}
    switched = sum(type(m) in broken for m in model.modules())
    assert _bad_boxes(fault, n_layers=1) == switched + (fault != "none")


def test_rejects_an_unknown_fault():
    with pytest.raises(ValueError):
        parity_faults.draw("dropout")
