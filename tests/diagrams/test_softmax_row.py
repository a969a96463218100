"""The softmax_row diagram (scaling chapter): one bar per key, its numbers the reference
computation's, and the caption the chapter gives it true at the chapter's configuration."""

from __future__ import annotations

import math
import re

import pytest
import torch

from backend.diagrams import registry, softmax_row


def _bars(svg: str, tone: str) -> list[float]:
    return [float(h) for h in re.findall(
        rf'<rect [^>]*height="([0-9.]+)" rx="1" class="tw-d-box tw-d-{tone}"', svg)]


def test_registered_and_renders():
    assert registry()["softmax_row"] is softmax_row
    assert softmax_row.draw().render("fig-row").startswith("<svg")


def test_one_bar_per_key_in_each_panel():
    for t in (2, 4, 8):
        svg = softmax_row.draw(n_positions=t).render("a")
        assert len(_bars(svg, "bad")) == len(_bars(svg, "query")) == t


def test_bar_heights_are_the_weights_and_sum_to_one_panel():
    svg = softmax_row.draw().render("b")
    r = softmax_row.row()
    for tone, key in (("bad", "weights"), ("query", "scaled_weights")):
        heights = _bars(svg, tone)
        assert [h / softmax_row.BAR_MAX for h in heights] == pytest.approx(r[key], abs=0.01)
        assert sum(heights) == pytest.approx(softmax_row.BAR_MAX, abs=0.05)


def test_head_size_one_draws_two_equal_panels_and_a_big_head_two_different_ones():
    """The configuration changes the picture as it says: at d_k = 1 dividing by √1 changes
    nothing; at d_k = 64 the unscaled row is much more peaked."""
    one = softmax_row.draw(d_k=1).render("c")
    assert _bars(one, "bad") == _bars(one, "query")
    big = softmax_row.draw(d_k=64).render("d")
    assert max(_bars(big, "bad")) > max(_bars(big, "query")) + 20


def test_labels_are_the_reference_computation():
    d_k, t, seed = 64, 8, 0
    r = softmax_row.row(d_k, t, seed)
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(t, d_k, generator=g, dtype=torch.float64)
    q = torch.randn(d_k, generator=g, dtype=torch.float64)
    s = k @ q
    assert r["scores"] == pytest.approx(s.tolist())
    assert r["scaled_scores"] == pytest.approx((s / math.sqrt(d_k)).tolist())
    assert r["weights"] == pytest.approx(torch.softmax(s, -1).tolist())
    texts = softmax_row.draw(d_k, t, seed).texts()
    assert f"largest weight {max(r['weights']):.3f}" in texts
    assert "softmax(q·k/√64)" in texts


def test_the_chapters_caption_holds_at_its_configuration():
    """Caption: "unscaled, one key takes almost all the weight; divided by √64, the same scores
    spread it over several keys" (d_k = 64, 8 positions, seed 0)."""
    r = softmax_row.row(64, 8, 0)
    assert max(r["weights"]) > 0.99
    assert max(r["scaled_weights"]) < 0.5
    assert sum(w > 0.1 for w in r["scaled_weights"]) >= 3


def test_bad_configurations_are_refused():
    for bad in ({"d_k": 0}, {"n_positions": 1}, {"n_positions": 9}):
        with pytest.raises(ValueError):
            softmax_row.draw(**bad)
