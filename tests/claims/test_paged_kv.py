"""Every qualitative sentence of docs/chapters/paged-kv.md, asserted over computed values."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from backend.compute import kv_levers as lw
from backend.compute import paged_kv as pw
from backend.reference import kv_levers as kl
from backend.reference.paged import PagedKV, cdiv
from backend.reference.paged_replay import replay

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = (ROOT / "docs/chapters/paged-kv.md").read_text(encoding="utf-8")


@functools.cache
def _paged(items: tuple) -> dict:
    """What `{{ value("paged_kv", ...) }}` reads: compute's values and the build's facts."""
    resolved = pw.SPEC.resolve(dict(items))
    return {**pw.compute(resolved)["values"], **pw.facts(resolved)}


def pv(**p):
    return _paged(tuple(sorted(p.items())))


def lv(**p):
    return lw.compute(lw.SPEC.resolve(p))["values"]


# ------------------------------------------------------------------------------- intuition

def test_the_pages_figure_is_what_the_prose_says():
    from backend.diagrams import paged_blocks
    kv, _ = paged_blocks.tables([37, 20], 16, 2)
    assert kv.tables[0] == [0, 2, 4]  # "points at physical blocks 0, 2 and 4"
    assert [kv.pool.fill[b] for b in kv.tables[0]] == [16, 16, 5]  # two of 16, five of a third
    # "only each request's last block has empty slots"
    for t in kv.tables.values():
        assert all(kv.pool.fill[b] == 16 for b in t[:-1]) and kv.pool.fill[t[-1]] < 16


def test_a_request_takes_a_new_block_only_when_its_last_is_full():
    kv = PagedKV(100, 16)
    kv.add(0, 1)
    for n in range(2, 200):
        before = len(kv.tables[0])
        kv.append(0)
        assert (len(kv.tables[0]) > before) == ((n - 1) % 16 == 0)


def test_paged_memory_has_no_external_fragmentation():
    """Any free blocks serve, wherever they lie: a request fits whenever enough are free."""
    kv = PagedKV(16, 4)
    for s in range(8):
        kv.add(s, 8)  # all 16 blocks, interleaved owners
    for s in (1, 4, 6):  # free scattered requests: holes everywhere
        kv.free(s)
    assert len(kv.pool.free) == 6
    kv.add("new", 24)  # needs exactly the 6 scattered blocks
    assert len(kv.pool.free) == 0


# ------------------------------------------------------------------------------- try it

def test_defaults_contiguous_waste_is_in_the_papers_range_and_mostly_never_written():
    v = pv()
    assert 0.60 <= v["contiguous_waste_share"] <= 0.80
    assert v["contiguous_never_share"] > v["contiguous_empty_share"] / 2  # "most of it"
    assert v["paged_token_share"] > 0.9 > v["contiguous_token_share"] * 3
    assert v["running_ratio"] > 3 and v["paged_running"] > v["contiguous_running"]


def test_paging_sends_requests_back_but_contiguous_never_does():
    v = pv()
    assert v["paged_preempted"] > 0
    r = replay("contiguous", 16384, 16, 256, 1024, 1)
    assert r.preempted == 0


def test_free_memory_is_small_in_both_at_the_defaults():
    v = pv()
    assert v["contiguous_free_share"] < 0.05 and v["paged_free_share"] < 0.05


def test_larger_blocks_leave_more_empty():
    shares = [pv(block_size=b)["paged_token_share"] for b in (1, 4, 16, 64, 256)]
    assert shares == sorted(shares, reverse=True) and shares[-1] < 0.7 < 0.9 < shares[2]
    # paged stays ahead of contiguous at every block size the text names
    assert all(s > pv()["contiguous_token_share"] for s in shares)


def test_blocks_as_long_as_the_requests_lose_pagings_lead():
    """"Make blocks as long as the requests, or longer": at blocks of 256 for requests of mean
    and maximum 64, paged holds tokens in less of the arena than contiguous and runs fewer;
    at 256 for all three the two run about as many; paging wins at blocks well below the max."""
    small = pv(block_size=256, mean_len=64, max_len=64)
    assert small["paged_token_share"] < small["contiguous_token_share"] / 2
    assert small["running_ratio"] < 0.5  # "runs only 0.25 times as many"
    even = pv(block_size=256, mean_len=256, max_len=256)
    assert abs(even["running_ratio"] - 1) < 0.05  # "about as many"
    assert pv(block_size=16, mean_len=64, max_len=64)["running_ratio"] > 1  # blocks < max: wins


def test_a_preempted_request_keeps_its_tokens_and_prefills_them_again_in_one_pass():
    """"the newest running request gives up all its blocks and goes back to the front of the
    queue, keeping the tokens it has generated. When it is admitted again, the keys and values
    of its prompt and of those tokens are computed again in one prefill pass, and it carries on
    where it stopped."""
    from collections import deque

    from backend.reference.paged_replay import Replay, Request, _admit, _write
    kv = PagedKV(3, 4)
    kv.add((0, 0), 4)
    kv.add((1, 0), 4)
    kv.add((2, 0), 3)
    kv.append((2, 0))  # the newest has generated one token; every block is now full
    running = {0: (Request(4, (4,)), [0]), 1: (Request(4, (4,)), [0]), 2: (Request(3, (5,)), [0])}
    queue, out = deque(), Replay("paged", 12)
    assert _write(kv, running, queue, 0, 0, out, True)  # request 0's next token needs a block
    assert 2 not in running and (2, 0) not in kv.tables  # the newest gave up all its blocks
    assert out.preempted == 1 and list(queue) == [Request(3, (5,), (1,))]  # its token kept
    assert not _admit(kv, queue[0], 3, True, 16, 0) and 3 not in {k[0] for k in kv.tables}
    back = Request(3, (5,), (2,))  # admitted again, into room enough: one step takes it all back
    kv = PagedKV(4, 4)
    assert _admit(kv, back, 7, True, 16, 0)
    assert kv.lengths[(7, 0)] == 3 + 2  # prompt and generated tokens, prefilled together
    assert _write(kv, {7: (back, [0])}, deque(), 7, 0, Replay("paged", 16), True)
    assert kv.lengths[(7, 0)] == 6  # and it carries on where it stopped


def test_preemptions_cost_short_prefills_and_their_count_is_the_schedulers():
    """"That happened 203 times ..., but cheaply: a request sent back had generated 5.3 tokens
    on average, where answers are drawn around 128, so each costs one prefill pass again, over
    its prompt and those few tokens, not the steps of a whole answer. How often it happens is
    the scheduler's choice more than paging's. The replay admits whatever fits and keeps no
    block in reserve; keep 1% of the blocks free at admission, as vLLM's block manager does, and
    the same stream is sent back 53 times, with about as many requests running (4.1 times the
    contiguous scheme's)." And the summary: "the price is requests sent back when blocks run
    out, their prompt and the tokens they had generated prefilled again"."""
    v = pv()
    assert v["output_mean_len"] == 128 and v["watermark_share"] == 0.01
    assert 0 < v["paged_victim_mean_written"] < v["output_mean_len"] / 10
    assert v["paged_preempted_watermark"] < v["paged_preempted"] / 2  # the scheduler's choice
    assert abs(v["running_ratio_watermark"] - v["running_ratio"]) < 0.05 * v["running_ratio"]
    assert f"{v['running_ratio_watermark']:.1f}" == f"{v['running_ratio']:.1f}"


def test_a_longer_maximum_hurts_only_the_contiguous_scheme():
    base, long = pv(), pv(max_len=4096)
    assert long["contiguous_token_share"] < base["contiguous_token_share"] / 2
    assert abs(long["paged_token_share"] - base["paged_token_share"]) < 0.02


def test_a_mean_near_the_maximum_shrinks_pagings_lead():
    base, near = pv(), pv(mean_len=1024)
    assert near["contiguous_token_share"] > 2 * base["contiguous_token_share"]
    assert 1 < near["running_ratio"] < base["running_ratio"]


def test_parallel_samples_share_and_widen_the_gap():
    one, four = pv(), pv(samples=4)
    assert one["paged_shared_share"] == 0 < four["paged_shared_share"]
    assert four["running_ratio"] > one["running_ratio"]
    # the widget shows the shared share the bullet and Exercise 2 send the reader to read
    assert "paged_shared_share" in {o.name for o in pw.SPEC.outputs}
    out = pw.compute(pw.SPEC.resolve({"samples": 4}))
    shown = f"{four['paged_shared_share']:.0%}"
    assert shown in out["summary"]
    cols = out["table"]["columns"]
    paged_row = [r for r in out["table"]["rows"] if r[0] == "paged"][0]
    assert paged_row[cols.index("shared by samples")] == shown


# ------------------------------------------------------------------------------- the math

@pytest.mark.parametrize("bs", [1, 4, 16, 64, 256])
def test_empty_slots_are_fewer_than_one_block(bs):
    v = pv(block_size=bs)
    assert v["example_blocks"] == cdiv(1000, bs)
    assert v["example_empty"] == bs * v["example_blocks"] - 1000 <= bs - 1
    assert v["example_empty_bytes"] == v["example_empty"] * 131_072
    # the math's example is another length than Exercise 1's, so it does not print the answer
    assert v["math_tokens"] != v["example_tokens"]
    assert v["math_blocks"] == cdiv(v["math_tokens"], bs)
    assert v["math_empty"] == bs * v["math_blocks"] - v["math_tokens"] <= bs - 1
    assert v["math_empty_bytes"] == v["math_empty"] * 131_072
    assert v["block_bytes"] == bs * 131_072
    # in the replay: at most one partly empty block per running sequence (one sample)
    assert v["paged_empty_share"] * 16384 <= v["paged_running"] * (bs - 1) + 1e-9


# ------------------------------------------------------------------------------- sharing

def test_fork_example():
    v = pv()
    assert (v["fork_blocks"], v["fork_blocks_unshared"], v["fork_copies"]) == (6, 12, 3)
    assert v["fork_copies"] == v["fork_samples"] - 1  # "every sample but the last to write"


def test_prefix_hits_are_whole_blocks():
    assert pv()["prefix_hit_tokens"] == 32 and pv(block_size=64)["prefix_hit_tokens"] == 0
    assert pv(block_size=1)["prefix_hit_tokens"] == 40
    kv = PagedKV(8, 4)
    toks = list(range(12))
    kv.add("a", 12, toks)
    assert kv.add("b", 12, toks) == 8  # all matches, but the last token's block is computed


# ------------------------------------------------------------------------------- levers

def test_levers_at_the_chapters_context():
    v = lv()
    assert v["mha_user_gb"] == 4 * v["gqa_user_gb"]
    assert v["window_cut"] == 8 and lv(context_len=4096)["window_cut"] == 1
    # "no more at any longer one"
    assert lv(context_len=131072)["window_user_bytes"] == v["window_user_bytes"]
    assert v["local_global_user_gb"] < v["gqa_user_gb"]
    assert v["cross_layer_cut"] == 2 and v["fp8_cut"] == 2
    assert 3.5 < v["int4_cut"] < 4  # a quarter, plus the scales


def test_at_long_contexts_the_global_layers_hold_most_of_the_interleaved_cache():
    t = 131072
    glob = 5 * t * 131_072 // 32
    assert glob > lv(context_len=t)["local_global_user_bytes"] / 2


def test_per_token_mla_and_4bit_are_smallest_and_windows_win_long():
    v = lv()
    per_token = {lever.key: v[f"{lever.key}_bytes_per_token"] for lever in kl.LEVERS}
    assert sorted(per_token, key=per_token.get)[:2] == ["int4", "mla"]
    long = lv(context_len=131072)
    assert long["window_user_gb"] < long["mla_user_gb"]
    assert long["window_user_gb"] == min(long[f"{k.key}_user_gb"] for k in kl.LEVERS)
    assert v["mla_saving_vs_mha"] > 0.9


def test_check_yourself_at_2000_tokens_4bit_beats_the_window():
    # below the window the window saves nothing; 4-bit is about a quarter (plus its scales)
    # at any length: a little more than a quarter, never less
    assert kl.user_bytes("window", 2000) == kl.user_bytes("gqa", 2000)
    assert kl.user_bytes("int4", 2000) < kl.user_bytes("window", 2000) / 3
    for t in (1000, 2000, 32768, 131072):
        assert 3.5 < kl.user_bytes("gqa", t) / kl.user_bytes("int4", t) < 4


def test_fp8_here_counts_values_only_and_serving_adds_a_scale_per_vector():
    from backend.compute import kv_cache as kw
    s = kw.compute(kw.SPEC.resolve({"dtype": "fp8"}))["values"]
    v = lv()
    assert v["fp8_bytes_per_token"] == s["values_per_token_bytes"] == 65_536
    assert s["scales_per_token_bytes"] == 1_024 > 0  # "a scale per key and per value vector"
    assert s["scales_per_token_bytes"] == 2 * 32 * 8 * 2  # K and V, 32 layers, 8 heads, fp16


# ------------------------------------------------------------------------------- reading line

def test_reading_line_has_no_handout_references():
    body = CHAPTER.split('??? note "Notes on the sources (for instructors)"')[0]
    assert "handout" not in body.lower() and "§" not in body
    assert not re.search(r"(?<![\d,])00[034]\b", body)
    assert CHAPTER.count('??? note "Notes on the sources (for instructors)"') == 1


def test_the_first_figure_is_in_the_first_quarter():
    first = min(CHAPTER.index("```diagram"), CHAPTER.index("```widget"))
    assert first < len(CHAPTER) / 4


def test_the_vllm_figure_is_only_quoted_as_the_papers():
    assert CHAPTER.count("60 to 80 per cent") == 1 and "Kwon et al., 2023" in CHAPTER


def test_external_fragmentation_is_worst_when_reservations_differ_in_size():
    from backend.reference.paged import ContiguousKV, OutOfBlocks
    same = ContiguousKV(100)
    for s in range(4):
        same.add(s, 1, 25)
    same.free(1)
    same.add("next", 1, 25)  # equal sizes: a freed reservation fits the next exactly
    mixed = ContiguousKV(100)
    for s, size in enumerate((20, 30, 20, 30)):
        mixed.add(s, 1, size)
    mixed.free(0)
    mixed.free(2)
    with pytest.raises(OutOfBlocks):  # 40 slots free, in two holes of 20
        mixed.add("next", 1, 30)


def test_how_request_lengths_are_drawn_and_cut():
    """'Each request's prompt and answer lengths are drawn at random, each around half the mean
    request length (many short, a few long), and a request that would run past the maximum is cut
    there. At the defaults that hardly matters (the requests average 256 tokens), but when the two
    settings are close many requests are cut: at a mean and maximum of 1,024 they average 746
    tokens, and 40% of them stop at the maximum.' And 'the requests, cut at 64, average 47
    tokens'; at a mean of 1,024 (maximum 1,024 by default) 'then average 746'."""
    base, close = pv(), pv(mean_len=1024, max_len=1024)
    assert abs(base["request_mean_len"] / 256 - 1) < 0.01 and base["cut_at_max_share"] < 0.01
    assert f"{close['request_mean_len']:,.0f}" == "746" and f"{close['cut_at_max_share']:.0%}" == "40%"
    assert f"{pv(mean_len=64, max_len=64)['request_mean_len']:.0f}" == "47"
    assert pv(mean_len=1024)["request_mean_len"] == close["request_mean_len"]
    # the stream itself: exponential draws of mean half the setting, one plus the draw, cut
    from backend.reference.paged_replay import request_stream
    first = [next(s) for s in [request_stream(0, 256, 1024, 1)] for _ in range(2000)]
    prompts = [r.prompt for r in first]
    assert abs(sum(prompts) / len(prompts) / 128 - 1) < 0.1


def test_latent_attention_decodes_over_the_latents():
    """'Every head then reads the same 576 cached numbers per token and layer ... For one layer at
    32,768 tokens, in this model's shape, that is 2.16 GFLOP per step instead of 275 (128 times
    less).' The algebra and the counts are held to PyTorch in tests/reference/test_latent_attention.py."""
    v = lv()
    assert v["context_len"] == 32768 and v["mla_numbers_per_token"] == 576
    assert v["mla_numbers_per_token"] * 2 * 32 == v["mla_bytes_per_token"]  # bfloat16, 32 layers
    assert (f"{v['mla_absorbed_gflops']:.3g}", f"{v['mla_expanded_gflops']:.3g}",
            f"{v['mla_absorbed_saving']:.0f}") == ("2.16", "275", "128")
    # rebuilding grows with the cache as fast as scoring it: the saving holds at every length
    for t in (1024, 8192, 131072):
        assert lv(context_len=t)["mla_absorbed_saving"] > 100
