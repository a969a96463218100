"""The score-crossover diagram follows its configuration and says what the reference counts say."""

from __future__ import annotations

import re

import pytest

from backend.diagrams import score_crossover
from backend.reference import attention_cost as ac
from backend.reference.presets import get_preset


def _tones(canvas, tone):
    return len(re.findall(rf"<rect [^>]*tw-d-{tone}", "".join(canvas.parts)))


@pytest.mark.parametrize("Ts", [(4096, 16384), (4096, 16384, 32768, 65536), (1024,)])
def test_one_bar_per_context_and_one_for_the_rest(Ts):
    c = score_crossover.draw(Ts=Ts)
    assert len(re.findall(r"<rect ", "".join(c.parts))) == len(Ts) + 1
    assert [t for t in c.texts() if t.startswith("T=")] == [f"T={t:,}" for t in Ts]


def test_the_causal_half_moves_the_crossover_and_fewer_bars_pass_it():
    Ts = (4096, 16384, 32768, 65536)
    full, causal = score_crossover.draw(Ts=Ts), score_crossover.draw(Ts=Ts, causal=True)
    assert _tones(full, "bad") == 2 and _tones(causal, "bad") == 1
    assert "scores = proj+MLP at T = 26,624" in full.texts()
    assert "scores = proj+MLP at T = 53,248" in causal.texts()


def test_the_labels_are_the_reference_counts():
    cfg = get_preset("llama-3-8b")
    other = (ac.projection_flops(1, 128, 32, 1, 8) + ac.mlp_flops(1, 4096, 14336))
    assert f"{other / 1e6:,.0f}M" in score_crossover.draw().texts()
    # at the drawn crossover the scores (4 T d per token) equal the rest of the layer
    T = ac.layer_crossover_context(cfg.d_head, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff)
    assert abs(ac.score_flops(T, cfg.d_head, cfg.n_heads) / T - other) < 4 * cfg.d_model
    texts = score_crossover.draw(Ts=(T + 1,)).texts()
    assert f"{ac.score_flops(T + 1, 128, 32) / (T + 1) / 1e6:,.0f}M" in texts
