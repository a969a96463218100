"""Every qualitative sentence of docs/chapters/families.md, asserted over computed values."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from backend.compute import training_signal as w
from backend.reference import training_signal as ts

LENGTHS = range(2, 4097)
RATES = [round(0.01 * i, 2) for i in range(1, 51)]  # every stop of the slider


def run(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def whole(n, r):
    return ts.decoder_predictions(n) / ts.encoder_predictions(n, r)


def test_ratio_before_rounding_climbs_towards_one_over_r_and_never_reaches_it():
    """'climbs towards 1/r as the passage grows and never reaches it'."""
    for r in RATES:
        ys = [ts.expected_ratio(n, r) for n in LENGTHS]
        assert all(a < b for a, b in zip(ys, ys[1:])) and all(y < 1 / r for y in ys)
        assert 1 / r - ys[-1] < 0.001 * (1 / r)


def test_handout_ratios_are_before_rounding_and_whole_counts_differ():
    """'Its ratio, 6.7×, is not quite what those two numbers give'; '6.5× is again the ratio
    before rounding'; 57 x 0.15 'rounds up to 9'."""
    d = run()
    assert d["encoder_unrounded"] == pytest.approx(512 * 0.15)
    assert d["expected_ratio"] == pytest.approx(d["decoder_predictions"] / d["encoder_unrounded"])
    assert f"{d['expected_ratio']:.1f}" != f"{d['ratio']:.1f}"
    t = run(use_text=True)
    assert t["ratio"] < t["expected_ratio"]
    p = run(use_text=True, text=w.TRY_PARAGRAPH)
    assert p["tokens"] == 57  # the chapter then reads the counts at length=57
    q = run(length=57)
    assert q["encoder_unrounded"] < q["encoder_predictions"]  # rounds *up*
    assert f"{q['expected_ratio']:.1f}" == f"{t['expected_ratio']:.1f}"  # "still 6.5×" ...
    assert f"{q['ratio']:.1f}" != f"{q['expected_ratio']:.1f}"           # ... before rounding only


def test_one_pass_and_the_sequential_count():
    """'for L = 300 target tokens, 301 passes ... one per token plus the end token'."""
    v = run(length=300)
    assert v["tokens"] == 300 and v["passes_without"] == ts.sequential_passes(300) == 300 + 1
    assert v["passes_teacher_forced"] == 1


def test_at_15_percent_the_staircase_jumps_above_and_below_under_a_hundred_tokens():
    below_100 = range(2, 100)
    assert any(whole(n, 0.15) > ts.expected_ratio(n, 0.15) for n in below_100)
    assert any(whole(n, 0.15) < ts.expected_ratio(n, 0.15) for n in below_100)


@pytest.mark.parametrize("rate", RATES)
def test_peak_and_settling_length_are_what_the_widget_reports(rate):
    """'its highest step is X at N tokens, and from M tokens on it stays within 2% of the curve'."""
    v = run(mask_rate=rate)
    ratios = {n: whole(n, rate) for n in LENGTHS}
    assert v["peak_ratio"] == max(ratios.values()) == ratios[v["peak_length"]]
    m = v["settles_from"]
    assert all(abs(ratios[n] / ts.expected_ratio(n, rate) - 1) < 0.02 for n in range(m, 4097))
    assert m == 2 or abs(ratios[m - 1] / ts.expected_ratio(m - 1, rate) - 1) >= 0.02


def test_at_one_percent_a_single_hidden_token_until_the_peak():
    """'every passage up to 149 tokens gets a single hidden token ... below a hundred tokens it
    stays under the smooth curve, then climbs past the limit of 100 to 148×'."""
    v = run(mask_rate=0.01)
    peak = v["peak_length"]
    assert all(ts.encoder_predictions(n, 0.01) == 1 for n in range(2, peak + 1))
    assert ts.encoder_predictions(peak + 1, 0.01) == 2
    assert all(whole(n, 0.01) < ts.expected_ratio(n, 0.01) for n in range(2, 100))
    assert v["peak_ratio"] > v["limit_ratio"] == pytest.approx(100)
    assert any(round(n * 0.01) < 1 for n in range(2, peak + 1))   # "the at-least-one floor"
    assert any(round(n * 0.01) == 1 for n in range(2, peak + 1))  # "then rounding down"


def test_lower_rates_weigh_rounding_more():
    """'Lower share of tokens hidden and rounding weighs more': the settling length grows and the
    peak overshoots the limit further as the rate falls."""
    settles = [run(mask_rate=r)["settles_from"] for r in RATES]
    overshoot = [run(mask_rate=r)["peak_ratio"] * r for r in RATES]
    assert settles[0] == max(settles) and overshoot[0] == max(overshoot)
    assert settles[0] > settles[14] > settles[-1]


def test_raising_the_rate_the_ratio_falls_roughly_as_one_over_r():
    for n in LENGTHS:
        rs = [whole(n, r) for r in RATES]
        assert all(a >= b for a, b in zip(rs, rs[1:])), n
    for r in RATES:
        assert abs(whole(4096, r) * r - 1) < 0.02


@pytest.mark.parametrize("rate", RATES)
def test_decoder_never_gets_fewer_and_ties_only_at_two_or_three_tokens(rate):
    for n in LENGTHS:
        dec, enc = ts.decoder_predictions(n), ts.encoder_predictions(n, rate)
        assert dec >= enc
        if dec == enc:
            assert n in (2, 3)


def test_half_hidden_about_twice_ties_and_round_half_to_even():
    assert 1.9 < run(mask_rate=0.5, length=4096)["ratio"] <= 2.0
    assert run(length=2, mask_rate=0.5)["ratio"] == run(length=3, mask_rate=0.5)["ratio"] == 1
    five, seven = run(length=5, mask_rate=0.5), run(length=7, mask_rate=0.5)
    assert (five["encoder_unrounded"], five["encoder_predictions"]) == (2.5, 2)
    assert (seven["encoder_unrounded"], seven["encoder_predictions"]) == (3.5, 4)
    assert five["ratio"] > seven["ratio"]  # "the short end of the staircase alternates"


@pytest.mark.parametrize("n_src", [1, 2, 7, 64, 300])
@pytest.mark.parametrize("n_tgt", [1, 3, 50, 256])
def test_compute_dense_versus_skipping_masked_blocks(n_src, n_tgt):
    """Dense: the decoder-only model scores exactly N_src N_tgt pairs more. Skipping masked
    blocks: the encoder-decoder scores N_src (N_src - 1) / 2 more."""
    dense = ts.attention_pairs(n_src, n_tgt, skip_masked=False)
    skip = ts.attention_pairs(n_src, n_tgt, skip_masked=True)
    assert dense["decoder_only"] - dense["encoder_decoder"] == n_src * n_tgt
    assert skip["encoder_decoder"] - skip["decoder_only"] == n_src * (n_src - 1) // 2
    # Oracle: count the allowed entries of explicit masks, built with torch.tril.
    n = n_src + n_tgt
    causal = int(torch.ones(n, n).tril().sum())
    assert skip["decoder_only"] == causal
    assert skip["encoder_decoder"] == n_src**2 + int(torch.ones(n_tgt, n_tgt).tril().sum()) + n_tgt * n_src


def test_a_new_token_changes_an_encoders_earlier_vectors_but_not_a_decoders():
    """'a new token changes the first layer's output at every earlier position ... only the first
    layer's [keys and values], projections of unchanged embeddings, survive'; under the causal
    mask appending a token changes none of the earlier outputs."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True).eval()
    x = torch.randn(1, 6, 16)
    longer = torch.cat([x, torch.randn(1, 1, 16)], dim=1)
    with torch.no_grad():
        bi_short, bi_long = layer(x), layer(longer)[:, :6]
        causal = lambda t: nn.Transformer.generate_square_subsequent_mask(t)  # noqa: E731
        c_short, c_long = layer(x, src_mask=causal(6)), layer(longer, src_mask=causal(7))[:, :6]
    assert (bi_short - bi_long).abs().amax(-1).min() > 1e-4  # every earlier position moved
    torch.testing.assert_close(c_short, c_long, atol=1e-6, rtol=1e-6)


def test_exercise_3_answer_shortest_passage_above_the_limit_is_8():
    above = [n for n in LENGTHS if whole(n, 0.15) > 1 / 0.15]
    assert above[0] == run()["shortest_above_limit"] == 8
    assert ts.encoder_predictions(8, 0.15) == ts.encoder_predictions(7, 0.15) == 1
    assert whole(7, 0.15) < 1 / 0.15


def test_exercise_2_answer_t5_targets():
    """77 hidden tokens in 26 spans (T5: round(noise tokens / mean span 3)): 103 targets, ~5x."""
    v = run()
    hidden = round(512 * 0.15)
    spans = round(hidden / 3)
    assert (v["t5_hidden"], v["t5_spans"], v["t5_targets"]) == (hidden, spans, hidden + spans)
    assert (hidden, spans) == (77, 26)
    assert f"{v['t5_ratio']:.0f}" == "5" and v["t5_ratio"] == 511 / 103


def test_the_figures_caption_only_the_encoder_decoder_has_a_mask_that_is_not_square():
    """Caption of the three-families figure at the chapter's {T: 5, S: 4}."""
    from backend.diagrams import three_families

    shapes = {k: tuple(m.shape) for k, m in three_families.masks_for(5, 4).items()}
    assert [k for k, (a, b) in shapes.items() if a != b] == ["cross"]


def test_defaults_paragraph_whole_counts_below_the_unrounded_ratio():
    """'Before rounding, 512 x 0.15 = 76.8 hidden tokens would give 6.65; ... so the whole counts
    are what it trains on': at the defaults the whole-count ratio (6.64) is below the
    unrounded one (6.65)."""
    d = run()
    assert f"{d['expected_ratio']:.2f}" != f"{d['ratio']:.2f}" and d["ratio"] < d["expected_ratio"]
