"""Every sentence of docs/chapters/decode-time.md, asserted over the values the widget computes,
and the model held to independent published figures (datasheets, a review's hand arithmetic).
The page's figures, the reading line and a student's reading are in test_decode_time_page.py."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import pytest

from backend.compute import decode_roofline as dr
from backend.reference import decode_time as dt
from backend.reference import serving
from backend.reference.counting import count_parameters
from backend.reference.presets import DECODER_PRESETS, PRESETS

LLAMA3 = PRESETS["llama-3-8b"]


def out(**p):
    return dr.compute(dr.SPEC.resolve(p))


def v(**p):
    return out(**p)["values"]


# ------------------------------------------------------------ oracles: published figures

# Typed from the vendors' datasheets (GB/s, dense bf16/fp16 tensor TFLOP/s), not from CARDS.
DATASHEETS = {
    "80": (2039, 312),       # NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM
    "40": (1555, 312),       # same datasheet, A100 40GB SXM
    "80-h100": (3350, 989.4),  # NVIDIA H100 datasheet, H100 SXM: 3.35 TB/s, 1,979 TF sparse
    "141": (4800, 989.4),    # NVIDIA H200 datasheet, H200 SXM: 4.8 TB/s, 1,979 TF sparse
    "48": (864, 362.05),     # NVIDIA L40S datasheet: 864 GB/s, 362.05 TF BF16 (733 sparse)
    "192": (5300, 1307.4),   # AMD Instinct MI300X data sheet: 5.3 TB/s, 1,307.4 TF BF16
    "16": (320, 65),         # NVIDIA T4 datasheet: 320+ GB/s, 65 TF FP16 mixed precision
}


@pytest.mark.parametrize("key", DATASHEETS)
def test_cards_carry_the_datasheet_figures(key):
    card = serving.CARDS[key]
    bw, peak = DATASHEETS[key]
    assert card.bandwidth == Fraction(str(bw)) * 10**9
    assert card.peak_flops == Fraction(str(peak)) * 10**12
    assert card.datasheet  # each figure names its source


def test_the_generic_24_gb_card_has_no_figure_and_is_not_offered():
    assert serving.CARDS["24"].bandwidth is None and "24" not in dr.TIMED_CARDS
    assert set(dr.TIMED_CARDS) == set(DATASHEETS)


def test_the_h100_is_sold_as_80_gb_and_keeps_the_a100s_entries():
    h100 = serving.CARDS["80-h100"]
    assert h100.sold_gb == 80 and h100.reported_gib == "79.11"
    assert serving.CARDS["80"].name == "A100 80 GB" and serving.CARDS["80"].reported_gib == "79.15"


@pytest.mark.parametrize("card, review_ms", [("80", 7.9), ("80-h100", 4.8), ("141", 3.3)])
def test_batch_one_floors_match_the_reviews_figures(card, review_ms):
    s = v(card=card)
    assert abs(s["floor_ms"] - review_ms) <= 0.1
    # the book's own count: the same weights the serving chapter stores
    assert s["weights_gb"] * 10**9 == serving.weights_bytes(LLAMA3)
    assert s["floor_tok_s"] == pytest.approx(1000 / s["floor_ms"])


@pytest.mark.parametrize("card, review", [("80", 153), ("80-h100", 295), ("141", 206)])
def test_ridge_points_match_the_reviews_figures(card, review):
    assert round(v(card=card)["ridge"]) == review


def test_the_64_user_8k_case_matches_the_reviews_arithmetic():
    s = v(batch=64)
    assert s["weights_gb"] == pytest.approx(16.1, abs=0.05)
    assert s["cache_gb"] == pytest.approx(68.7, abs=0.05)
    assert s["step_ms"] == pytest.approx(41.6, abs=0.05)
    assert round(s["tok_s_user"]) == 24 and abs(s["tok_s_total"] - 1540) < 5


def test_the_step_time_is_the_roofline_by_hand():
    """bytes / bandwidth against FLOPs / peak, redone here from the formula in the text."""
    P = count_parameters(LLAMA3).total
    L, h, kv, dh = LLAMA3.n_layers, LLAMA3.n_heads, LLAMA3.n_kv_heads, LLAMA3.d_head
    for B, T, key in [(1, 8192, "80"), (64, 8192, "80"), (7, 300, "141"), (1024, 1, "192")]:
        card = serving.CARDS[key]
        W = 2 * P
        C = 2 * L * kv * dh * 2 * T
        flops = B * (2 * P + 4 * L * h * dh * T)
        want = max(Fraction(W + B * C) / card.bandwidth, Fraction(flops) / card.peak_flops)
        assert dt.step_time(LLAMA3, card, B, T) == want
        assert v(card=key, batch=B, context_len=T)["step_ms"] == pytest.approx(float(want) * 1000)


# ------------------------------------------------------------------------- the chapter

def test_intuition_arithmetic_is_far_slower_to_feed_than_to_do():
    """'A card moves bytes far more slowly than it multiplies them': every ridge > 100."""
    assert all(v(card=k)["ridge"] > 100 for k in dr.TIMED_CARDS)


@pytest.mark.parametrize("preset", DECODER_PRESETS)
def test_weights_read_once_cache_per_user(preset):
    one, many = v(preset=preset), v(preset=preset, batch=8)
    assert many["weights_gb"] == one["weights_gb"]
    assert many["cache_gb"] == pytest.approx(8 * one["cache_gb"])


def test_widget_bullets():
    s = v()
    assert s["users_fit"] == 64 and s["batch_fits"]
    assert v(batch=64)["step_ms"] > s["step_ms"]
    assert v(batch=64)["intensity"] > s["intensity"]          # climbs the slope
    assert v(batch=64)["intensity"] < s["ridge"] / 5           # never near the ridge
    assert all(v(batch=b)["bound"] == "memory" for b in (1, 2, 4, 8, 16, 32, 64))
    nope = out(batch=65)
    assert not nope["values"]["batch_fits"] and "do not fit" in nope["notice"]
    # at 256 tokens a batch that fits reaches the roof
    short = v(context_len=256)
    b = short["compute_bound_batch"]
    assert 0 < b <= short["users_fit"]
    assert v(context_len=256, batch=b)["bound"] == "compute"
    assert v(context_len=256, batch=b - 1)["bound"] == "memory"
    # changing the card moves the roof, not the intensity
    for k in dr.TIMED_CARDS:
        assert v(card=k)["intensity"] == s["intensity"]
    assert v(card="141")["step_ms"] < s["step_ms"]


def test_the_floor_falls_with_bandwidth_not_arithmetic():
    order = ["48", "40", "80", "80-h100", "141", "192"]       # the table's rows
    bws = [v(card=k)["bandwidth_gbs"] for k in order]
    floors = [v(card=k)["floor_ms"] for k in order]
    assert bws == sorted(bws) and floors == sorted(floors, reverse=True)
    assert v(card="48")["peak_tflops"] > v(card="80")["peak_tflops"]
    assert v(card="48")["peak_tflops"] > v(card="40")["peak_tflops"]
    assert v(card="48")["floor_ms"] == max(floors)
    assert v(card="48")["weights_fit"]  # the table's floors are for cards the weights fit


def test_one_user_does_about_one_flop_per_byte_and_the_units_idle():
    assert f"{v(context_len=1)['intensity']:.3f}" == "1.000"
    s = v()
    assert 1 < s["intensity"] < 1.5
    for k in dr.TIMED_CARDS:
        assert v(card=k)["ridge"] > 100 * s["intensity"]       # "more than a hundred times"
        t = v(card=k)
        assert t["compute_ms"] / t["step_ms"] < 0.01            # idle over 99% of the step


def test_h200_has_the_h100s_arithmetic_and_more_bandwidth():
    h100, h200 = serving.CARDS["80-h100"], serving.CARDS["141"]
    assert h100.peak_flops == h200.peak_flops and h200.bandwidth > h100.bandwidth


@pytest.mark.parametrize("card", dr.TIMED_CARDS)
def test_weights_stop_dominating_at_the_ridge_rounded_up(card):
    s = v(card=card)
    b = s["weights_compute_batch"]
    assert b == -(-Fraction(serving.CARDS[card].peak_flops) // serving.CARDS[card].bandwidth)
    c = serving.CARDS[card]
    P = count_parameters(LLAMA3).total
    W = serving.weights_bytes(LLAMA3)
    assert Fraction(2 * P * b) / c.peak_flops >= Fraction(W) / c.bandwidth
    assert Fraction(2 * P * (b - 1)) / c.peak_flops < Fraction(W) / c.bandwidth


@pytest.mark.parametrize("preset", DECODER_PRESETS)
def test_cache_intensity_is_h_over_n_kv_whatever_the_batch(preset):
    cfg = PRESETS[preset]
    for B in (1, 7, 64, 1000):
        for T in (1, 4096):
            _, c = dt.bytes_per_step(cfg, B, T)
            _, fa = dt.flops_per_step(cfg, B, T)
            assert Fraction(fa, c) == Fraction(cfg.n_heads, cfg.n_kv_heads)
    assert v(preset=preset)["cache_intensity"] == cfg.n_heads / cfg.n_kv_heads
    if cfg.n_heads == cfg.n_kv_heads:
        assert v(preset=preset)["cache_intensity"] == 1      # "GQA is what lifts it above 1"
    assert v()["cache_intensity"] == 4


@pytest.mark.parametrize("card", dr.TIMED_CARDS)
@pytest.mark.parametrize("preset", DECODER_PRESETS)
def test_past_a_few_thousand_tokens_no_batch_is_compute_bound(card, preset):
    s = v(card=card, preset=preset)
    T = s["never_compute_bound_from"]
    assert 0 < T <= 3000                                         # "a few thousand at most"
    cfg = PRESETS[preset]
    assert dt.compute_bound_batch(cfg, serving.CARDS[card], T) is None
    assert dt.compute_bound_batch(cfg, serving.CARDS[card], T - 1) is not None
    for B in (1, 64, 1024, 10**6):                               # not even batches that don't fit
        assert dt.step(cfg, serving.CARDS[card], B, T).bound == "memory"


def test_llama3_on_the_a100_never_compute_bound_from_823():
    assert v()["never_compute_bound_from"] == 823
    assert f"{v(batch=64)['intensity']:.3g}" == "15.4"


def test_capacity_latency_cost_trade_off():
    one, full = v(), v(batch=64)
    assert full["bound"] == "memory" and full["compute_ms"] < full["step_ms"] / 5
    assert full["tok_s_user"] < one["tok_s_user"] and full["tok_s_total"] > one["tok_s_total"]
    assert full["card_ms_per_token"] < one["card_ms_per_token"]


def test_long_conversations_cost_about_sixteen_times_per_token():
    short, long_ = v(batch=64), v(batch=4, context_len=128_000)
    assert long_["users_fit"] == 4 and short["users_fit"] == 64
    assert abs(long_["cache_gb"] - short["cache_gb"]) / short["cache_gb"] < 0.05  # "about what"
    assert abs(long_["step_ms"] - short["step_ms"]) / short["step_ms"] < 0.05     # "about as long"
    ratio = long_["card_ms_per_token"] / short["card_ms_per_token"]
    assert 15 < ratio < 17 and round(ratio) == 16                # "about sixteen times"


def test_an_idle_slot_saves_almost_nothing():
    """Static batching's idle slots: a step with one user fewer is barely shorter (short contexts,
    where batches of the diagram's size live), because the weights are read anyway."""
    for T in (256, 1024, 2048):
        for B in (2, 4, 8):
            full, less = v(batch=B, context_len=T), v(batch=B - 1, context_len=T)
            assert less["step_ms"] > 0.9 * full["step_ms"]


@pytest.mark.parametrize("card", dr.TIMED_CARDS)
def test_prefill_is_compute_bound_from_512_tokens(card):
    for T in (512, 1024, 8192, 128_000):
        assert v(card=card, context_len=T)["prefill_compute_bound"]
    assert not v(card=card, context_len=1)["prefill_compute_bound"]


def test_ttft_and_tpot_figures():
    s = v()
    assert s["prefill_ms"] > 40 * s["step_ms"]   # the first token waits far longer than the next
    assert v(batch=64)["step_ms"] > s["step_ms"]


def test_chunked_prefill_fits_in_the_idle_arithmetic():
    s = v(batch=64)
    n = s["spare_prefill_tokens"]
    assert 500 < n < 700
    # n prompt tokens' FLOPs added (and their cache written) leave the step memory-bound and
    # barely longer: "decoding users barely slow down"
    card = serving.CARDS["80"]
    st = dt.step(LLAMA3, card, 64, 8192)
    per_token = sum(dt.flops_per_step(LLAMA3, 1, 8192))
    written, _ = serving.cache_bytes(32, 8, 128, n, 1)
    with_chunk = max(Fraction(st.weight_bytes + st.cache_bytes + written) / card.bandwidth,
                     Fraction(st.weight_flops + st.attention_flops + n * per_token) / card.peak_flops)
    assert with_chunk < Fraction(101, 100) * st.seconds


def test_throughput_rises_by_less_with_each_user():
    curve = v()["curve"]
    batches = [c[0] for c in curve]
    assert batches == [1, 2, 4, 8, 16, 32, 64]
    totals = [c[2] for c in curve]
    users = [c[1] for c in curve]
    assert totals == sorted(totals) and users == sorted(users, reverse=True)
    per_added = [(t2 - t1) / (b2 - b1) for (b1, t1), (b2, t2)
                 in zip(zip(batches, totals), zip(batches[1:], totals[1:]))]
    assert per_added == sorted(per_added, reverse=True)
    assert [v(batch=b)["tok_s_total"] for b in (1, 16, 64)] == [totals[0], totals[4], totals[6]]


def test_speculative_check_costs_one_step_when_memory_bound_and_k_plus_1_when_not():
    assert v()["verify_k"] == 4
    assert v()["verify_over_step"] == 1.0
    assert f"{v(context_len=512, batch=1024)['verify_over_step']:.3g}" == "5"
    assert v(context_len=512, batch=1024)["batch_fits"]


def test_exercise_two_faster_arithmetic_changes_nothing():
    card = serving.CARDS["80"]
    fast = replace(card, peak_tflops=str(2 * Fraction(card.peak_tflops)))
    assert dt.step_time(LLAMA3, fast, 64, 8192) == dt.step_time(LLAMA3, card, 64, 8192)
    more_bw = replace(card, bandwidth_gbs=str(2 * int(card.bandwidth_gbs)))
    assert dt.step_time(LLAMA3, more_bw, 64, 8192) < dt.step_time(LLAMA3, card, 64, 8192)


def test_exercise_one_seventy_b_on_an_h200():
    s = v(preset="llama-3-70b", card="141")
    assert s["weights_fit"]
    assert s["floor_ms"] == pytest.approx(s["weights_gb"] / 4800 * 1000)


def test_notes_the_embedding_is_about_a_gigabyte_of_sixteen():
    emb = count_parameters(LLAMA3).embedding * 2
    W = serving.weights_bytes(LLAMA3)
    assert 1.0e9 < emb < 1.1e9 and 0.05 < emb / W < 0.08


def test_the_step_reads_more_than_the_cards_name():
    """'(84.8 GB in all, more than the card's name: the A100 80 GB holds 85.0 GB, the 79.15 GiB
    CUDA reports ...)': the bytes a step reads fit the card as CUDA reports it, not its name."""
    at64 = v(batch=64)
    assert 80 < at64["bytes_gb"] < at64["card_gb"]
    assert (f"{at64['bytes_gb']:.1f}", f"{at64['card_gb']:.1f}", at64["card_reported_gib"]) == \
        ("84.8", "85.0", "79.15")
    assert at64["card_gb"] == pytest.approx(79.15 * 2 ** 30 / 1e9)


def facts(**p):
    return dr.facts(dr.SPEC.resolve(p))


def test_card_time_is_money():
    """'A card that costs P dollars an hour and serves X tokens a second in all spends
    P / (3600 X) dollars on each token ... at $2.00 an hour, Llama 3 8B's tokens cost at least
    $4.67 per million with one user and $0.36 per million with 64, the same ratio as the card
    time'."""
    one, many = v(), v(batch=64)
    assert one["price"] == 2.0
    for w in (one, many):
        assert w["dollars_per_million"] == pytest.approx(2.0 / (3600 * w["tok_s_total"]) * 1e6)
    assert (f"{one['dollars_per_million']:.2f}", f"{many['dollars_per_million']:.2f}") == ("4.67", "0.36")
    assert one["dollars_per_million"] / many["dollars_per_million"] == pytest.approx(
        one["card_ms_per_token"] / many["card_ms_per_token"])
    assert v(price=4.0)["dollars_per_million"] == pytest.approx(2 * one["dollars_per_million"])


def test_fewer_bytes_a_weight_lower_the_floor_in_proportion():
    """The weight formats' table: int8 a byte a weight, int4 half a byte plus a 16-bit scale per
    128 weights; the floor in proportion. Llama 3 8B's published count, 8,030,261,248
    parameters, is the int8 size in bytes."""
    f = facts()
    assert f["weights_gb_int8"] * 1e9 == 8_030_261_248
    assert f["weights_gb_bfloat16"] * 1e9 == 2 * 8_030_261_248 == v()["weights_gb"] * 1e9
    assert f["weights_gb_int4"] * 1e9 == math.ceil(8_030_261_248 * (4 + 16 / 128) / 8)
    assert f["floor_ms_int8"] == pytest.approx(f["floor_ms_bfloat16"] / 2)
    assert f["floor_ms_int4"] == pytest.approx(f["floor_ms_bfloat16"] * 33 / 128, rel=1e-9)
    assert f["floor_ms_bfloat16"] == pytest.approx(v()["floor_ms"])
    assert (f"{f['floor_ms_int8']:.2g}", f"{f['floor_ms_int4']:.2g}") == ("3.9", "2")
