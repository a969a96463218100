"""Every sentence of decode-time.md's 'How many tokens one check yields', asserted over the
speculative widget's values at the settings the text names and across the sliders' ranges. The
closed form itself is held to the verification algorithm, run, in tests/reference/test_speculative.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.compute import speculative as w
from backend.reference import speculative as sd

ROOT = Path(__file__).resolve().parents[2]
ALPHAS = [round(0.01 * i, 2) for i in range(0, 100)]   # the slider: 0 to 0.99
COSTS = [round(0.01 * i, 2) for i in range(0, 101)]    # 0 to 1


def v(**p):
    return w.compute(w.SPEC.resolve(p))["values"]


def section() -> str:
    text = (ROOT / "docs/chapters/decode-time.md").read_text(encoding="utf-8")
    return text.split("### How many tokens one check yields", 1)[1].split("\n## ", 1)[0]


def test_the_section_names_the_widgets_defaults():
    """'At the widget's start (α = 0.8, k = 4, c = 0.05), one check yields 3.36 tokens for a round
    of 1.20 steps: 2.80 times as fast as plain decoding.'"""
    d = v()
    assert (d["alpha"], d["k"], d["draft_cost"]) == (0.8, 4, 0.05)
    assert f"{d['tokens_per_pass']:.2f}" == "3.36" and f"{d['round_cost']:.2f}" == "1.20"
    assert f"{d['speedup']:.2f}" == "2.80"
    assert "name: speculative" in section()


def test_a_longer_draft_pays_less_and_less_so_there_is_a_best_length():
    """'A longer draft pays less and less, because the chance that the check gets as far as the
    j-th drafted token, α^(j-1), shrinks while every drafted token costs the same c; so each
    acceptance rate has a best draft length' (with c = 0.05): the speed-up rises to the best k
    and falls after it, at every acceptance rate the slider offers."""
    for alpha in ALPHAS:
        curve = v(alpha=alpha)["curve"]
        best = curve.index(max(curve))
        assert all(a < b for a, b in zip(curve[:best], curve[1:best + 1])), alpha
        assert all(a > b for a, b in zip(curve[best:], curve[best + 1:])), alpha
        gains = [sd.expected_tokens(alpha, k + 1) - sd.expected_tokens(alpha, k) for k in range(1, 16)]
        assert all(a >= b for a, b in zip(gains, gains[1:])), alpha


def test_the_table_of_best_lengths():
    rows = {0.5: (3, "1.88", "1.63"), 0.8: (8, "4.33", "3.09"), 0.9: (13, "7.71", "4.67")}
    for alpha, (k, tokens, speed) in rows.items():
        d = v(alpha=alpha)
        assert d["best_k"] == k
        assert (f"{d['best_tokens_per_pass']:.2f}", f"{d['best_speedup']:.2f}") == (tokens, speed)
        # the best length is the argmax, found by trying every length
        assert d["best_k"] == max(range(1, 17), key=lambda j: sd.speedup(alpha, j, 0.05))
    # the more often the models agree, the longer the best draft and the larger the gain
    assert rows[0.5][0] < rows[0.8][0] < rows[0.9][0]


def test_below_the_break_even_rate_drafting_is_slower():
    """'Below an acceptance rate of 0.17 drafting 4 tokens at this cost is slower than not
    drafting at all'."""
    edge = v()["break_even_alpha"]
    assert f"{edge:.2f}" == "0.17"
    for alpha in ALPHAS:
        s = v(alpha=alpha)["speedup"]
        assert (s < 1) == (alpha < edge), alpha


def test_a_draft_as_slow_as_the_large_model_never_pays():
    """'a draft model as slow as the large one (c = 1) never pays, whatever α below 1: a round
    then costs k + 1 steps and yields fewer than k + 1 tokens'."""
    for alpha in ALPHAS:
        d = v(alpha=alpha, draft_cost=1.0)
        assert not d["any_pays"] and max(d["curve"]) < 1, alpha
        assert all(t < k + 1 for k, t in enumerate(d["tokens_curve"], start=1))


def test_the_free_token_and_the_sum():
    """'whatever happens it yields one token of the large model's own ... when all k are kept
    (chance α^k), one more ... E = 1 + α + ... + α^k'."""
    for alpha in (0.0, 0.3, 0.8, 0.99):
        for k in (1, 4, 16):
            d = v(alpha=alpha, k=k)
            assert d["tokens_per_pass"] == pytest.approx(sum(alpha ** j for j in range(k + 1)))
            assert d["all_kept"] == pytest.approx(alpha ** k)
    assert v(alpha=0.0)["tokens_per_pass"] == 1.0


def test_the_sentences_are_on_the_page():
    text = re.sub(r"\s+", " ", section())
    for phrase in ["a **free token**", "A longer draft pays less and less",
                   "never pays, whatever \\(\\alpha\\) below 1"]:
        assert phrase in text, phrase
