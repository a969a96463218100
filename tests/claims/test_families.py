"""Every qualitative sentence of docs/chapters/families.md, asserted over computed values."""

from __future__ import annotations

import pytest

from backend.reference import training_signal as ts
from backend.widgets import training_signal as w

LENGTHS = range(2, 4097)
RATES = [round(0.01 * i, 2) for i in range(1, 51)]  # every stop of the slider


def run(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def test_ratio_before_rounding_climbs_towards_one_over_r_and_never_reaches_it():
    """'climbs towards 1/r as the passage grows and never reaches it'."""
    for r in (0.05, 0.15, 0.5):
        ys = [ts.expected_ratio(n, r) for n in LENGTHS]
        assert all(a < b for a, b in zip(ys, ys[1:])) and all(y < 1 / r for y in ys)
        assert 1 / r - ys[-1] < 0.001 * (1 / r)


def test_handout_ratios_are_before_rounding_and_whole_counts_differ():
    """'6.7× ... divides 511 by the unrounded 76.8'; '6.5× is again the ratio before rounding';
    57 x 0.15 'rounds up to 9'."""
    d = run()
    assert f"{d['expected_ratio']:.1f}" == "6.7" and f"{d['ratio']:.1f}" == "6.6"
    t = run(use_text=True)
    assert f"{t['expected_ratio']:.1f}" == "6.5" and t["ratio"] < t["expected_ratio"]
    p = run(use_text=True, text=w.TRY_PARAGRAPH)
    assert p["tokens"] == 57 and 57 * 0.15 < p["encoder_predictions"] == 9
    assert f"{p['expected_ratio']:.1f}" == "6.5" and f"{p['ratio']:.1f}" == "6.2"


def test_staircase_jumps_above_and_below_the_curve_under_a_hundred_tokens():
    whole = {n: run(length=n)["ratio"] for n in range(2, 100)}
    assert any(whole[n] > ts.expected_ratio(n, 0.15) for n in whole)
    assert any(whole[n] < ts.expected_ratio(n, 0.15) for n in whole)


def test_from_256_tokens_at_15_percent_within_2_percent_of_the_curve():
    for n in range(256, 4097):
        v = run(length=n)
        assert abs(v["ratio"] / v["expected_ratio"] - 1) < 0.02, n


@pytest.mark.parametrize("rate", RATES)
def test_decoder_never_gets_fewer_and_ties_only_at_two_tokens_half_hidden(rate):
    """'the decoder never gets fewer predictions ... the two tie only at a two-token passage'."""
    for n in LENGTHS:
        dec, enc = ts.decoder_predictions(n), ts.encoder_predictions(n, rate)
        assert dec >= enc
        if dec == enc:
            assert n in (2, 3)
    at_top = run(mask_rate=0.5, length=4096)
    assert 1.9 < at_top["ratio"] <= 2.0  # 'still gets about twice as many'


def test_ties_happen_at_two_and_three_tokens():
    assert run(length=2, mask_rate=0.5)["ratio"] == run(length=3, mask_rate=0.5)["ratio"] == 1


def test_teacher_forcing_counts_and_the_301_passes():
    """'that is the handout's count of 301 passes, and it is right (300 tokens plus the end token)'."""
    assert run(length=301)["passes_without"] == 300
    assert ts.sequential_passes(300) == 301
    assert run()["passes_teacher_forced"] == 1


def test_exercise_3_answer_shortest_passage_above_the_limit_is_8():
    above = [n for n in LENGTHS if ts.decoder_predictions(n) / ts.encoder_predictions(n, 0.15) > 1 / 0.15]
    assert above[0] == 8 and ts.encoder_predictions(8, 0.15) == 1
    assert ts.decoder_predictions(7) / ts.encoder_predictions(7, 0.15) == 6


def test_exercise_2_answer_t5_targets():
    hidden = round(512 * 0.15)
    spans = round(hidden / 3)
    assert (hidden, spans, hidden + spans) == (77, 26, 103)
    assert round(511 / 103) == 5
