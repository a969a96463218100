"""The training-loop diagram is drawn from the run's sizes, and refuses nonsense."""

from __future__ import annotations

import pytest

from backend.diagrams import training_loop


def test_shapes_on_the_arrows_follow_the_run():
    texts = training_loop.draw(batch=16, seq_len=128, vocab=4096, clip=1.0, steps=1600).texts()
    assert "ids (16, 128)" in texts and "logits (16, 128, 4096)" in texts
    assert "step + 1, until step 1,600" in texts and "gradients, norm ≤ 1" in texts
    other = training_loop.draw(batch=4, seq_len=32, vocab=256, clip=0.5, steps=200).texts()
    assert "logits (4, 32, 256)" in other and "gradients, norm ≤ 0.5" in other


def test_the_description_names_every_stage():
    c = training_loop.draw()
    for word in ("forward pass", "next token", "global norm", "AdamW", "warm-up", "cosine"):
        assert word in c.desc


@pytest.mark.parametrize("bad", [{"batch": 0}, {"seq_len": 2.5}, {"vocab": True}, {"clip": 0}])
def test_bad_sizes_are_refused(bad):
    with pytest.raises(ValueError):
        training_loop.draw(**bad)
