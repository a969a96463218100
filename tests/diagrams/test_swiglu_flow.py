"""The SwiGLU flow diagram (block chapter): widths from its config, and the chapter draws it at
Llama-3-8B's published widths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.diagrams import swiglu_flow
from backend.reference.presets import PRESETS

ROOT = Path(__file__).resolve().parents[2]


def test_the_widths_follow_the_config():
    texts = swiglu_flow.draw(d_model=8, d_ff=24).texts()
    assert texts.count("24 × 8") == 2 and "8 × 24" in texts and "out: 8" in texts
    with pytest.raises(ValueError):
        swiglu_flow.draw(d_model=0)


def test_the_chapter_draws_llama_3_8b():
    text = (ROOT / "docs/chapters/block.md").read_text(encoding="utf-8")
    d, f = map(int, re.search(r"name: swiglu_flow\nconfig: \{d_model: (\d+), d_ff: (\d+)\}", text).groups())
    cfg = PRESETS["llama-3-8b"]
    assert (d, f) == (cfg.d_model, cfg.d_ff)
