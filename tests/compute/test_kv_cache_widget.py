"""The kv_cache widget through the API: the handout's numbers, presets vs fields, 400s, figure."""

from __future__ import annotations

import pytest

from backend.reference.presets import DECODER_PRESETS, PRESETS
from backend.reference.serving import CARDS
from tests.support.api import poster

URL = "/api/widgets/kv_cache"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


error = poster(URL, 400)  # the refusal (a 400): its JSON


@pytest.mark.parametrize("preset", ["llama-3-8b", "custom"])  # custom starts at Llama-3-8B
def test_llama3_8b_bfloat16_handout_numbers(client, preset):
    v = post(client, preset=preset, context_len=8192, dtype="bfloat16", batch=1)["values"]
    assert v["bytes_per_token"] == 131_072  # 128 KiB
    assert v["total_bytes"] == 2**30 and v["total_gib"] == 1.0  # 1 GiB at 8,192 tokens
    assert v["kv_width"] == 1024 and v["n_rep"] == 4  # "1024 wide" = n_kv x d_head = 8 x 128
    assert v["mha_total_bytes"] == 4 * 2**30 and v["gqa_saving_factor"] == 4.0
    assert v["weights_bytes"] == 2 * 8_030_261_248 and v["weights_params"] == 8_030_261_248
    assert v["scale_bytes"] == 0


def test_handout_100_users_and_128k(client):
    assert post(client, batch=100)["values"]["total_bytes"] == 100 * 2**30
    assert post(client, context_len=128_000)["values"]["total_gib"] == 15.625
    assert post(client, context_len=1000)["values"]["total_bytes"] == 131_072_000


def test_cards_are_their_cuda_reported_totals():
    # the total PyTorch prints in an out-of-memory message, in GiB to two decimals
    assert CARDS["141"].memory_bytes == 13980 * 2**30 // 100  # H200: 139.80 GiB
    assert CARDS["80"].memory_bytes == 7915 * 2**30 // 100  # A100 80 GB: 79.15 GiB
    assert 150.1e9 < CARDS["141"].memory_bytes < 150.2e9  # not the 141 GB it is sold as


def test_users_fit_beside_the_weights(client):
    v = post(client, memory="80")["values"]
    assert v["memory_bytes"] == 7915 * 2**30 // 100
    assert v["users_fit"] == (7915 * 2**30 // 100 - 2 * 8_030_261_248) // 2**30 == 64
    v141 = post(client, memory="141")["values"]
    assert v141["users_fit"] == (13980 * 2**30 // 100 - 2 * 8_030_261_248) // 2**30 == 124


def test_weights_alone_too_big_gives_zero_and_a_notice(client):
    out = post(client, preset="llama-2-70b", memory="80")
    assert out["values"]["users_fit"] == 0 and out["values"]["weights_fit"] is False
    assert "do not fit in the A100 80 GB (79.15 GiB = 84.99 GB as CUDA reports)" in out["notice"]


def test_batch_beyond_the_fit_has_a_notice(client):
    out = post(client, batch=65)
    assert out["values"]["batch_fits"] is False and "need 69.8 GB" in out["notice"]
    assert "only 64 fit" in out["notice"]
    assert "notice" not in post(client, batch=64)
    one = post(client, context_len=1_048_576)["notice"]
    assert one.startswith("1 user at 1,048,576 tokens needs 137.4 GB") and "none fits" in one


@pytest.mark.parametrize("dtype, width", [("float32", 4), ("bfloat16", 2), ("float16", 2),
                                          ("int8", 1), ("fp8", 1)])
def test_dtypes(client, dtype, width):
    v = post(client, dtype=dtype)["values"]
    assert v["bytes_per_value"] == width
    scales = 2 * 32 * 8 * 2 if dtype in ("int8", "fp8") else 0  # float16 per K and V vector
    assert v["bytes_per_token"] == 2 * 32 * 1024 * width + scales
    assert v["weights_bytes"] == 2 * 8_030_261_248  # weights stay bfloat16


@pytest.mark.parametrize("preset", DECODER_PRESETS)
def test_presets_fill_their_fields(client, preset):
    cfg = PRESETS[preset]
    v = post(client, preset=preset)["values"]
    assert v["bytes_per_token"] == 2 * cfg.n_layers * cfg.n_kv_heads * cfg.d_head * 2
    assert v["gqa_saving_factor"] == cfg.n_heads / cfg.n_kv_heads


def test_preset_refuses_a_contradicting_field(client):
    body = error(client, preset="llama-2-7b", n_kv=8)
    assert body["param"] == "n_kv" and "key/value heads n_kv" in body["error"]
    assert "llama-2-7b" in body["error"]


def test_n_kv_must_divide_the_heads(client):
    body = error(client, n_kv=3)
    assert body["param"] == "n_kv"
    # spec data (Depends), so the page's slider offers only these
    assert body["error"] == ("'key/value heads n_kv' must be one of 1, 2, 4, 8, 16, 32 when "
                             "query heads h is 32 (it must divide them), got 3")


@pytest.mark.parametrize("params, name", [
    ({"context_len": 1_048_577}, "context length T"), ({"context_len": 0}, "context length T"),
    ({"batch": 2000}, "concurrent users"), ({"dtype": "int4"}, "cache dtype"),
    ({"memory": "81"}, "accelerator, sold as"), ({"head_dim": 100}, "head width d_head"),
    ({"preset": "gpt-5"}, "model"),
])
def test_out_of_range_is_a_400_naming_the_label(client, params, name):
    assert name in error(client, **params)["error"]


def test_the_longest_context_works_at_the_largest_batch(client):
    v = post(client, context_len=1_048_576, batch=1024, n_layers=128, n_heads=128, n_kv=128,
             head_dim=512, dtype="float32")["values"]
    assert v["total_bytes"] == 2 * 128 * 1_048_576 * 128 * 512 * 1024 * 4  # meta: no storage
    assert v["users_fit"] == 0


def test_figure_lines_and_point(client):
    out = post(client)
    names = [t["name"] for t in out["figure"]["data"]]
    assert names[0].startswith("MHA") and names[1].startswith("this cache")
    assert names[2].startswith("weights") and names[3].startswith("accelerator")
    assert names[4].startswith("free after the weights") and names[5] == "your setting"
    assert out["figure"]["layout"]["xaxis"]["type"] == "log"
    assert out["figure"]["layout"]["yaxis"]["type"] == "log"
    point = out["figure"]["data"][5]
    assert point["x"] == [8192] and point["y"] == [2**30 / 1e9]
    card = CARDS["80"].memory_bytes / 1e9
    assert out["figure"]["data"][3]["y"] == [card, card]
    free = (CARDS["80"].memory_bytes - 2 * 8_030_261_248) / 1e9
    assert out["figure"]["data"][4]["y"] == [free, free]


def test_no_free_line_when_the_weights_do_not_fit_and_mha_says_when_it_is_this_cache(client):
    out = post(client, preset="llama-2-70b")
    assert not any(t["name"].startswith("free after") for t in out["figure"]["data"])
    assert "the same as this one" in post(client, preset="llama-2-7b")["figure"]["data"][0]["name"]
    assert "the same" not in post(client)["figure"]["data"][0]["name"]


def test_readouts_keep_the_digit_that_decides(client):
    out = post(client, preset="llama-3-70b", memory="141")
    assert "141.1 GB of weights" in out["summary"] and "at most 3 users" in out["summary"]
    assert "weights (141.1 GB)" in [t["name"] for t in out["figure"]["data"]]
    assert "weights 141.1 GB" in out["table"]["caption"]
    assert out["summary"] and out["table"]["rows"] and "narrow" in out["figure"]


def test_the_card_may_be_sent_as_a_number(client):
    assert post(client, memory=80)["values"] == post(client, memory="80")["values"]
    assert post(client, memory=141.0)["values"]["users_fit"] == 124
    assert error(client, memory=81)["param"] == "memory"
    assert error(client, memory=True)["param"] == "memory"


def test_the_summary_reads_as_a_sentence_at_the_edges(client):
    one = post(client, context_len=1)
    assert "1 user at 1 token holds" in one["summary"] and "memory's only" in one["notice"]
    none = post(client, context_len=1_048_576, batch=1000)
    assert "no user at this length fits" in none["summary"] and "e+" not in none["summary"]
    assert "137,439 GB" in none["summary"]
    single = post(client, context_len=524_288)
    assert "at most 1 user at this length fits" in single["summary"]
    assert "a vLLM server plans in by default" in post(client)["summary"]


def test_a_multi_head_model_is_said_to_be_one_and_its_column_is_not_doubled(client):
    mha = post(client, preset="llama-2-7b")
    assert "it is already multi-head" in mha["summary"] and "1 times" not in mha["summary"]
    assert "n_kv = h = 32 (already multi-head)" in mha["table"]["caption"]
    assert "against" not in mha["table"]["caption"]
    assert mha["table"]["columns"] == ["context length T", "cache, n_kv = 32 (GB)"]
    assert all(len(r) == 2 for r in mha["table"]["rows"])
    same = post(client, n_kv=32)  # the custom model with n_kv = h
    assert "it is already multi-head" in same["summary"] and len(same["table"]["columns"]) == 2
    gqa = post(client)
    assert "it would be 4 times as much" in gqa["summary"]
    assert "n_kv = 8 against n_kv = h = 32" in gqa["table"]["caption"]
    assert len(gqa["table"]["columns"]) == 3


def test_the_24_gb_card_keeps_its_own_article(client):
    out = post(client, memory="24", preset="llama-3-8b", context_len=131_072)
    assert "in a 24 GB card" in out["summary"] and "the a 24" not in out["summary"]
    assert "in a 24 GB card" in out["notice"] and "the a 24" not in out["notice"]
    assert "in the A100 80 GB" in post(client)["summary"]
