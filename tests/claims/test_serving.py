"""Every qualitative sentence of docs/chapters/serving.md, asserted over computed values: what a
token costs, the cache and its lever, why it caps users (prefixes, prices and the page itself:
test_serving_prefixes.py)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from backend.compute import kv_cache as kc
from backend.compute import model_params as mp
from backend.reference import serving
from backend.reference.presets import DECODER_PRESETS


def kv(**p):
    return kc.compute(kc.SPEC.resolve(p))


def v(**p):
    return kv(**p)["values"]


CONTEXTS = [2 ** i for i in range(0, 21)]


# ---------------------------------------------------------------- intuition, what a token costs

@pytest.mark.parametrize("preset", [*DECODER_PRESETS, "custom"])
def test_weights_paid_once_cache_grows_with_users_times_context(preset):
    base = v(preset=preset)
    for T, B in [(1, 1), (1000, 7), (8192, 100), (1_048_576, 1024)]:
        s = v(preset=preset, context_len=T, batch=B)
        assert s["weights_bytes"] == base["weights_bytes"]
        assert s["total_bytes"] == T * B * base["bytes_per_token"]


def test_query_heads_do_not_appear():
    sizes = {v(n_heads=h, n_kv=8)["bytes_per_token"] for h in (8, 16, 32, 64, 128)}
    assert sizes == {131_072}


def test_1024_wide_is_n_kv_times_d_head_not_the_model_width():
    s = v(preset="llama-3-8b")
    assert (s["n_kv"], s["head_dim"], s["n_layers"]) == (8, 128, 32)
    assert s["kv_width"] == 8 * 128 == 1024
    d = mp.compute(mp.SPEC.resolve({"preset": "llama-3-8b"}))["values"]["d_model"]
    assert d == 4096 != s["kv_width"]


def test_handout_lines():
    assert v(preset="llama-3-8b")["bytes_per_token"] == 131_072 == 128 * 1024
    assert v(preset="llama-3-8b")["total_gib"] == 1.0
    assert v(preset="llama-3-8b", batch=100)["total_gib"] == 100.0
    assert v(preset="llama-3-8b", context_len=128_000)["total_gib"] == 15.625  # printed 15.62
    assert f"{15.625:.2f}" == "15.62"  # the same number: the tie rounds to the even digit
    assert f"{v()['per_user_gb']:.2f}" == "1.07"


# -------------------------------------------------------------------------------- try it

@pytest.mark.parametrize("n_kv, batch", [(8, 1), (1, 16), (32, 1024)])
def test_both_lines_straight_on_log_axes(n_kv, batch):
    fig = kv(n_kv=n_kv, batch=batch)["figure"]
    for trace in fig["data"][:2]:
        ratios = {y / x for x, y in zip(trace["x"], trace["y"])}
        assert max(ratios) / min(ratios) - 1 < 1e-12  # y proportional to x


@pytest.mark.parametrize("preset", [*DECODER_PRESETS, "custom"])
def test_crossing_with_the_weights(preset):
    s = v(preset=preset)
    x = s["context_cache_over_weights"]
    assert v(preset=preset, context_len=x)["total_bytes"] > s["weights_bytes"]
    assert v(preset=preset, context_len=x - 1)["total_bytes"] <= s["weights_bytes"]


@pytest.mark.parametrize("preset, memory", [(p, m) for p in ("custom", "llama-2-7b", "llama-3.2-1b")
                                            for m in ("24", "80", "141")])
def test_users_fall_in_inverse_proportion_to_context(preset, memory):
    users = [v(preset=preset, memory=memory, context_len=T)["users_fit"] for T in CONTEXTS]
    for u, u2 in zip(users, users[1:]):
        assert u2 == u // 2  # doubling T halves the users, in whole users


def test_cards_are_what_cuda_reports_and_counts_are_upper_bounds():
    for key, card in serving.CARDS.items():
        assert card.sold_gb == int(key.split("-")[0])  # "80-h100": sold as 80 GB too
        assert card.memory_bytes == int(Fraction(card.reported_gib) * 2**30)
        assert v(memory=key)["memory_bytes"] == card.memory_bytes
    assert f"{v(memory='141')['memory_gb']:.1f}" == "150.1" and serving.CARDS["141"].reported_gib == "139.80"
    assert f"{v(memory='80')['memory_gb']:.1f}" == "85.0" and serving.CARDS["80"].reported_gib == "79.15"
    # the count fills the reported total exactly: any memory the runtime takes lowers it
    for key in serving.CARDS:
        s = v(memory=key)
        if s["weights_fit"]:
            assert s["users_fit"] * s["per_user_bytes"] <= s["free_bytes"]
            assert (s["users_fit"] + 1) * s["per_user_bytes"] > s["free_bytes"]
            less = serving.users_fit(s["memory_bytes"] - 10**9, s["weights_bytes"], s["per_user_bytes"])
            assert less.users <= s["users_fit"]


@pytest.mark.parametrize("batch", [1, 4, 64, 65, 1024])
def test_the_blue_line_may_rise_to_the_free_line_not_to_the_card(batch):
    out = kv(batch=batch)
    free = next(t for t in out["figure"]["data"] if t["name"].startswith("free after"))["y"][0]
    s = out["values"]
    assert free * 10**9 == s["free_bytes"]
    assert (s["total_bytes"] <= s["free_bytes"]) == s["batch_fits"]
    # one user: the blue line reaches the free line at the longest context, not at the card
    one = v()
    assert v(context_len=one["max_context_one_user"])["total_bytes"] <= one["free_bytes"]
    assert one["memory_bytes"] // one["bytes_per_token"] > one["max_context_one_user"] + 100_000


def test_the_numbers_of_the_try_list():
    assert v()["users_fit"] == 64 and v(context_len=128_000)["users_fit"] == 4
    top = v(context_len=1_048_576)
    assert top["users_fit"] == 0 and top["per_user_gb"] > 80  # not even one fits
    longest = top["max_context_one_user"]
    assert v(context_len=longest)["per_user_bytes"] <= top["free_bytes"]
    assert v(context_len=longest + 1)["per_user_bytes"] > top["free_bytes"]
    mha, mqa = v(n_kv=32), v(n_kv=1)
    assert mha["total_bytes"] == v()["gqa_saving_factor"] * v()["total_bytes"]
    assert mha["users_fit"] < v()["users_fit"] < mqa["users_fit"]
    assert v(preset="llama-2-7b")["bytes_per_token"] == 524_288
    assert v(preset="llama-2-7b")["users_fit"] < v()["users_fit"]
    # "by the memory arithmetic alone at most 16 users at 8,192 tokens ... (Llama 2 itself reads
    # at most 4,096 tokens; the widget's slider does not stop there)"
    from backend.reference.presets import get_preset
    assert v(preset="llama-2-7b")["users_fit"] == 16
    assert get_preset("llama-2-7b").max_seq_len == 4096 < 8192
    assert v(preset="llama-2-7b", context_len=8192)["users_fit"] == 16


# "(Llama 3 8B itself reads at most 8,192 tokens; Llama 3.1 8B has exactly the same shapes and
# reads up to 128K, so this chapter's long-context figures for "Llama 3 8B" are Llama 3.1 8B's.)"
def test_the_long_context_figures_are_llama_3_1s_same_shapes():
    from backend.reference.presets import get_preset
    cfg = get_preset("llama-3-8b")
    assert cfg.max_seq_len == 8192 < 128_000 <= 128 * 1024
    # Llama 3.1 8B's published shapes (config.json): what the cache's size depends on
    llama_3_1_8b = {"n_layers": 32, "n_heads": 32, "n_kv_heads": 8, "d_head": 128}
    assert {k: getattr(cfg, k) for k in llama_3_1_8b} == llama_3_1_8b


@pytest.mark.parametrize("h", [1, 2, 8, 12, 32, 64, 128])
def test_saving_factor_always_h_over_n_kv(h):
    for k in [k for k in range(1, h + 1) if h % k == 0]:
        for dtype in ("float32", "fp8"):
            s = v(n_heads=h, n_kv=k, dtype=dtype, context_len=777, batch=3)
            assert s["gqa_saving_factor"] == h / k and s["n_rep"] == h // k


@pytest.mark.parametrize("preset", [*DECODER_PRESETS, "custom"])
def test_one_byte_dtypes_halve_the_values_and_add_scales(preset):
    bf16 = v(preset=preset, dtype="bfloat16")
    for dtype in ("fp8", "int8"):
        q = v(preset=preset, dtype=dtype)
        assert 2 * q["values_per_token_bytes"] == bf16["values_per_token_bytes"]
        assert q["scales_per_token_bytes"] == 2 * q["n_layers"] * q["n_kv"] * 2  # one f16 per vector
        assert q["bytes_per_token"] == q["values_per_token_bytes"] + q["scales_per_token_bytes"]
    assert bf16["scales_per_token_bytes"] == 0
    assert v(dtype="fp8")["users_fit"] > v()["users_fit"]


# "The common case is one scale per whole tensor ... a few bytes per layer, nothing per token.
# The widget counts the generous case ... so its count is, if anything, a user or two low."
def test_per_tensor_scales_would_fit_a_user_or_two_more():
    per_vector = v(dtype="fp8")["users_fit"]
    values_only = serving.users_fit(v()["memory_bytes"], v()["weights_bytes"],
                                    v(dtype="fp8")["values_per_token_bytes"] * 8192).users
    assert 1 <= values_only - per_vector <= 2


def test_a_per_tensor_scale_is_a_few_bytes_per_layer():
    # one float16 scale for K and one for V per layer, as a (1, 1, 1, 1) tensor each
    assert serving.filled_cache(32, 1, 1, 1, 1, torch.float16).nbytes() == 32 * 4


# --------------------------------------------------------------------------- GQA is the lever

def test_gqa_factors_of_the_presets():
    assert {v(preset=p)["gqa_saving_factor"] for p in DECODER_PRESETS} == {1.0, 3.0, 4.0, 8.0}
    assert v(preset="llama-3-8b")["gqa_saving_factor"] == 4
    assert v(preset="llama-2-70b")["n_rep"] == v(preset="llama-3-70b")["n_rep"] == 8


def test_the_70b_with_gqa_caches_less_than_the_7b_without():
    big, small = v(preset="llama-2-70b"), v(preset="llama-2-7b")
    assert big["bytes_per_token"] < small["bytes_per_token"]
    assert big["weights_params"] > 10 * small["weights_params"]
    assert (f"{big['weights_params_b']:.1f}", f"{small['weights_params_b']:.2f}") == ("69.0", "6.74")


@pytest.mark.parametrize("h, k", [(32, 8), (64, 8), (32, 1), (32, 32)])
def test_a_smaller_cache_is_that_many_fewer_bytes_read_per_decode_step(h, k):
    # a decode step reads every stored key and value once: the bytes read are the cache's bytes
    ours, mha = v(n_heads=h, n_kv=k, batch=8), v(n_heads=h, n_kv=h, batch=8)
    assert mha["total_bytes"] / ours["total_bytes"] == h / k


# ----------------------------------------------------------------- why the cache caps users

def test_at_the_cap_the_caches_outweigh_the_weights_and_one_more_user_does_not_fit():
    s = v()
    assert f"{s['weights_gb']:.1f}" == "16.1"
    assert s["caches_at_fit_bytes"] > 3.5 * s["weights_bytes"]
    assert (s["users_fit"] + 1) * s["per_user_bytes"] > s["free_bytes"]
    assert v(memory="141")["users_fit"] == 124 and v(memory="141")["weights_bytes"] == s["weights_bytes"]
    assert v(context_len=128_000)["users_fit"] * 10 < s["users_fit"]  # far fewer long chats


# "Each decode step reads the weights and every user's cache once, about the same bytes in both
# cases (the card is full either way) ... yields one token per user: 4 tokens instead of 64.
# Each token then costs about 16 times as much: 20.8 GB read per token against 1.32 GB."
def test_long_conversations_cost_about_sixteen_times_as_much_per_token():
    short, long = v(), v(context_len=128_000)
    assert (short["users_fit"], long["users_fit"]) == (64, 4)
    step_short = short["weights_bytes"] + short["caches_at_fit_bytes"]
    step_long = long["weights_bytes"] + long["caches_at_fit_bytes"]
    assert 0.95 < step_long / step_short <= 1.0
    assert f"{long['read_per_token_vs_8192']:.0f}" == "16" and short["read_per_token_vs_8192"] == 1
    assert long["decode_read_per_token_gb"] == pytest.approx(step_long / 4 / 1e9)
    assert (f"{long['decode_read_per_token_gb']:.1f}", f"{short['decode_read_per_token_gb']:.2f}") \
        == ("20.8", "1.32")


# "vLLM, by default, plans its cache in 90% of the card ..., and activations and its own buffers
# take part of that. Even if the cache got all of that 90% beyond the weights, it would hold at
# most 56 such users on the A100 and 110 on the H200"; "counting every user at the full context
# length overstates the need"
def test_the_vllm_anchor_is_below_the_upper_bound():
    a100, h200 = v(), v(memory="141")
    assert (a100["users_fit_vllm"], h200["users_fit_vllm"]) == (56, 110)
    for s in (a100, h200):  # "at most": nothing is subtracted for activations or buffers
        assert s["users_fit_vllm"] == (int(s["memory_bytes"] * 0.9) - s["weights_bytes"]) \
            // s["per_user_bytes"]
    assert f"{a100['vllm_utilization']:.0%}" == "90%"
    for preset in DECODER_PRESETS:
        for memory in kc.MEMORIES:
            s = v(preset=preset, memory=memory)
            assert s["users_fit_vllm"] <= s["users_fit"]
    # a conversation part-way holds only its own tokens' cache
    assert v(context_len=2000)["per_user_bytes"] < v()["per_user_bytes"]


# "at one token, memory alone would hold 525,864 users, but compute and the server's limit on
# sequences per batch bind long before, and the widget says so."
def test_at_tiny_contexts_the_count_is_memorys_only_and_the_widget_says_so():
    out = kv(context_len=1)
    assert out["values"]["users_fit"] == 525_864 and "memory's only" in out["notice"]
    assert "notice" not in kv() and "notice" not in kv(context_len=128_000)
    assert "1 user at 1 token holds" in out["summary"]


# "With n_kv = 8 key/value heads, up to 8 cards can split the cache without any card keeping a
# copy of another's": tensor parallelism splits whole key/value heads.
def test_tensor_parallelism_splits_whole_kv_heads():
    n_kv = v(preset="llama-3-70b")["n_kv"]
    assert n_kv == 8
    for cards in range(1, 2 * n_kv + 1):
        whole = n_kv % cards == 0
        assert whole == (cards in (1, 2, 4, 8))
    # split over 8 cards, each keeps an eighth of every layer's cache
    one = v(preset="llama-3-70b", n_kv=8)["bytes_per_token"]
    assert one % n_kv == 0


def test_llama3_70b_fits_an_h200_with_almost_nothing_left():
    s = kv(preset="llama-3-70b", memory="141")
    w = s["values"]
    assert w["weights_bytes"] > 141 * 10**9  # more than the figure it is sold as
    assert w["weights_fit"] and w["weights_bytes"] < w["memory_bytes"]  # but less than it reports
    assert f"{w['weights_gb']:.1f}" == "141.1" and f"{w['free_gb']:.1f}" == "9.0"
    assert w["users_fit"] == 3 and "notice" not in s
    assert w["free_bytes"] < w["weights_bytes"] / 10  # the weights decide first
    assert v(memory="141")["users_fit"] > 30 * w["users_fit"]
    out = kv(preset="llama-2-70b", memory="80")
    assert out["values"]["users_fit"] == 0 and "do not fit" in out["notice"]


@pytest.mark.parametrize("preset", DECODER_PRESETS)
def test_zero_users_and_a_notice_whenever_the_weights_do_not_fit(preset):
    for memory in kc.MEMORIES:
        out = kv(preset=preset, memory=memory)
        if not out["values"]["weights_fit"]:
            assert out["values"]["users_fit"] == 0 and "do not fit" in out["notice"]
        else:
            assert out["values"]["weights_bytes"] <= serving.CARDS[memory].memory_bytes


@pytest.mark.parametrize("preset", [*DECODER_PRESETS, "custom"])
def test_doubling_the_memory_more_than_doubles_the_users(preset):
    for m, m2 in (("24", "48"), ("40", "80")):
        assert serving.CARDS[m2].memory_bytes >= 2 * serving.CARDS[m].memory_bytes
        small, big = v(preset=preset, memory=m), v(preset=preset, memory=m2)
        if small["weights_fit"]:
            assert big["users_fit"] >= 2 * small["users_fit"]
    assert [v(memory=m)["users_fit"] for m in ("24", "48", "40", "80")] == [7, 29, 24, 64]


def test_the_model_the_book_runs_caches_half_what_its_float32_run_held():
    """'SmolLM2-135M caches 23,040 bytes per token in bfloat16 ... its generation widget measures
    ... 46,080 bytes per position in float32, twice as many'; 'One user's cache would outweigh its
    weights at 11,677 tokens (Llama 3 8B's at 122,554), and two users at its full context of
    8,192 tokens already do'"""
    from backend.compute import generation_steps as gs

    s = v(preset="smollm2-135m")
    held = gs.compute(gs.SPEC.resolve({}))["values"]
    assert 2 * s["bytes_per_token"] == held["cache_bytes_per_token"]
    assert held["cache_held_bytes"] == held["cache_positions"] * held["cache_bytes_per_token"]
    assert s["context_cache_over_weights"] < v(preset="llama-3-8b")["context_cache_over_weights"] / 5
    assert s["context_cache_over_weights"] > 8192  # one user at full context does not
    assert v(preset="smollm2-135m", context_len=8192, batch=2)["total_bytes"] > s["weights_bytes"]
