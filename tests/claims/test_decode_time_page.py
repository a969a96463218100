"""The decode-time chapter as a page and as a student reads it: its figures, the reading line,
the instructors' notes and the sentences that lean on other chapters, asserted over the values
the widget computes. The chapter's own sentences and the published figures the model is held
to are in test_decode_time.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.compute import decode_roofline as dr
from backend.reference import decode_time as dt
from backend.reference import serving
from backend.reference.presets import PRESETS

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "docs/chapters/decode-time.md"
LLAMA3 = PRESETS["llama-3-8b"]


def v(**p):
    return dr.compute(dr.SPEC.resolve(p))["values"]


# ------------------------------------------------------------------------- the page itself

def test_first_figure_is_early_and_the_reading_line_names_no_handout():
    text = CHAPTER.read_text()
    first = min(text.index("```widget"), text.index("```diagram"))
    assert first / len(text) < 0.25
    reading = text[:text.index('??? note "Notes on the sources')]
    assert not re.search(r"handout|§|(?<![\d,])00\d\b|LLM-101", reading)
    assert text.rstrip().splitlines()[-1].startswith("    ")   # the notes close the chapter
    assert text.count('??? note "Notes on the sources (for instructors)"') == 1


def test_going_further_short_contexts_turn_compute_bound_and_throughput_stops_growing():
    s = v(context_len=1)
    assert s["users_fit"] == 525_864 and s["compute_bound_batch"] == 154
    assert s["users_fit"] > 1000 * s["compute_bound_batch"]
    t256, t1024 = v(context_len=1, batch=256), v(context_len=1, batch=1024)
    assert t256["bound"] == t1024["bound"] == "compute"
    assert t256["tok_s_total"] == pytest.approx(t1024["tok_s_total"])
    assert f"{t1024['tok_s_total']:,.0f}" == f"{t256['tok_s_total']:,.0f}"
    assert v(context_len=1, batch=128)["tok_s_total"] < t256["tok_s_total"]


def test_going_further_tensor_parallel_shares():
    """Llama 3 70B does not fit on one A100 80 GB; its 8 key/value heads split whole over 8 cards."""
    assert not v(preset="llama-3-70b")["weights_fit"]
    cfg = PRESETS["llama-3-70b"]
    assert cfg.n_kv_heads == 8 and cfg.n_heads % 8 == 0
    w, c = dt.bytes_per_step(cfg, 1, 8192)
    assert w / 8 < serving.CARDS["80"].memory_bytes     # an eighth of the weights fits on one card


# ------------------------------------------------------------------- a student's reading

def test_the_opening_kv_cache_put_no_time_on_memory_bound():
    """'Inference and the KV cache said, without putting a time on it, that decode is
    memory-bound': its decode bullet names memory-bound and gives no time or bandwidth."""
    kv = (ROOT / "docs/chapters/kv-cache.md").read_text()
    bullet = kv[kv.index("- **Decode**"):]
    bullet = bullet[:bullet.index("\n\n")]
    assert "*memory-bound*" in bullet
    assert not re.search(r"\bms\b|second|GB/s|value\(", bullet)
    assert "ended on a word" not in CHAPTER.read_text()


def test_the_cache_formula_and_llama_3_8bs_shapes():
    """C(T) = 2 L n_kv d_head b T with b = 2 in bfloat16; L, h, n_kv, d_head the preset's."""
    s = v()
    assert (s["n_layers"], s["n_heads"], s["n_kv_heads"], s["d_head"]) == (32, 32, 8, 128)
    assert (s["n_layers"], s["n_heads"], s["n_kv_heads"], s["d_head"]) == (
        LLAMA3.n_layers, LLAMA3.n_heads, LLAMA3.n_kv_heads, LLAMA3.d_head)
    assert s["cache_bytes_per_number"] == 2
    for T in (1, 8192, 128_000):
        per_user, _ = serving.cache_bytes(32, 8, 128, T, 1)
        assert per_user == 2 * 32 * 8 * 128 * s["cache_bytes_per_number"] * T
        assert v(context_len=T)["per_user_gb"] * serving.GB == pytest.approx(per_user)


def test_serving_is_the_previous_chapter_and_derives_what_this_one_uses():
    """Part III review K2: this chapter used serving's numbers (64 users fit at 8,192 tokens,
    1.07 GB each, the CUDA-reported 85.0 GB) before serving derived them. Serving now comes
    first, in the nav and in the contents, and this chapter's 'the previous chapter ... counted
    this size', 'as the previous chapter counted' and kv-cache's 'the chapter after that one'
    say so; serving's forward pointer says 'the next chapter'."""
    nav = (ROOT / "mkdocs.yml").read_text()
    assert nav.index("chapters/serving.md") < nav.index("chapters/decode-time.md")
    between = nav[nav.index("chapters/serving.md"):nav.index("chapters/decode-time.md")]
    assert between.count("chapters/") == 1        # nothing in between: the previous chapter
    contents = (ROOT / "docs/index.md").read_text()
    # Part III's list starts at 14 (tests/site/test_exercise_titles.py checks the numbering)
    part3 = re.findall(r'<li markdown="span">\[([^\]]+)\]',
                       contents[contents.index('<ol start="14" markdown>'):])
    assert part3[2:4] == ["Serving many users", "What one token takes"]  # 16 and 17
    page = CHAPTER.read_text()
    assert "next chapter" not in page and page.count("the previous chapter") == 2
    assert "the previous chapter, [Serving many users](serving.md#what-one-token-costs)" in page
    assert "subject of the chapter after that one, [What one token takes](decode-time.md)" in (
        ROOT / "docs/chapters/kv-cache.md").read_text()
    serving_page = (ROOT / "docs/chapters/serving.md").read_text()
    assert "in the next chapter,\n[What one token takes](decode-time.md)" in serving_page
    # the numbers it recalls are the serving chapter's own: 64 users, in both chapters' widgets
    from backend.compute import kv_cache

    users = kv_cache.compute(kv_cache.SPEC.resolve({}))["values"]["users_fit"]
    assert users == v()["users_fit"] == 64


# Meta's published config.json of Llama 3.1 8B (meta-llama/Llama-3.1-8B), typed here: the same
# shapes as Llama 3 8B, a context of 131,072 positions (its rope_scaling aside).
LLAMA31_8B = {"vocab_size": 128256, "hidden_size": 4096, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
              "max_position_embeddings": 131072}


def test_long_conversations_are_llama_3_1_8b_with_llama_3_8bs_shapes():
    c = LLAMA31_8B
    assert (c["vocab_size"], c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
            c["num_key_value_heads"], c["intermediate_size"]) == (
        LLAMA3.vocab_size, LLAMA3.d_model, LLAMA3.n_layers, LLAMA3.n_heads, LLAMA3.n_kv_heads,
        LLAMA3.d_ff)
    assert LLAMA3.max_seq_len == v()["max_seq_len"] == 8192 < 128_000 <= c["max_position_embeddings"]
    # 128k: 128 x 1,024 tokens is what it reads
    assert c["max_position_embeddings"] == 128 * 1024
    # the widget says so past the preset's length, and still does the arithmetic
    long_ = dr.compute(dr.SPEC.resolve({"batch": 4, "context_len": 128_000}))
    assert "published context is at most 8,192" in long_["notice"]
    assert long_["values"]["batch_fits"] and long_["values"]["step_ms"] > 0
    assert "notice" not in dr.compute(dr.SPEC.resolve({"batch": 4, "context_len": 8192}))


def test_summary_ridges_span_the_offered_cards():
    s = v()
    ridges = {k: v(card=k)["ridge"] for k in dr.TIMED_CARDS}
    assert s["ridge_min"] == min(ridges.values()) and s["ridge_max"] == max(ridges.values())
    assert s["ridge_min_card"] == serving.CARDS[min(ridges, key=ridges.get)].name == "A100 80 GB"
    assert s["ridge_max_card"] == serving.CARDS[max(ridges, key=ridges.get)].name == "L40S 48 GB"
    assert (f"{s['ridge_min']:.0f}", f"{s['ridge_max']:.0f}") == ("153", "419")
    assert all(s["ridge_min"] <= r <= s["ridge_max"] for r in ridges.values())
    # the values don't depend on the card chosen
    assert v(card="16")["ridge_min"] == s["ridge_min"]
    assert round(s["intensity_one_user"]) == 1


def test_checking_drafts_takes_no_longer_than_a_plain_step():
    assert v()["verify_over_step"] <= 1.0 + 1e-9
    assert v()["verify_ms"] <= v()["step_ms"] * 1.0000001


def test_exercise_one_needs_the_context_set_to_one():
    """'Check it in the widget, with the context set to 1': there the step shown is the floor
    to the three figures given; at the default 8,192 tokens it is not."""
    at1 = v(preset="llama-3-70b", card="141", context_len=1)
    at8k = v(preset="llama-3-70b", card="141")
    assert f"{at1['step_ms']:.3g}" == f"{at1['floor_ms']:.3g}" == "29.4"
    assert f"{at8k['step_ms']:.3g}" != f"{at1['floor_ms']:.3g}"
    assert at1["floor_ms"] == at8k["floor_ms"]


def test_the_instructors_notes_speak_to_an_instructor():
    text = CHAPTER.read_text()
    assert "review of" not in text and "Part III" not in text


def test_an_eager_step_launches_every_operation_from_the_cpu():
    """Instructors' notes: 'Run as the book's code runs, in eager PyTorch, one decode step of the
    book's model at Llama 3 8B's shape dispatches 1,566 operations that each make a new tensor,
    every one a kernel the CPU launches in turn'. The count, read off the meta device, grows with
    the layers (every layer launches its own) and is the same at any context (a step's kernels
    are the same whatever the cache holds); a layer alone launches dozens."""
    n = dr.facts(dr.SPEC.resolve({}))["eager_step_ops"]
    assert n == dr.eager_step_operations("llama-3-8b") > 1000
    assert dr.eager_step_operations("llama-3-8b", 64) == n
    per_layer = (n - dr.eager_step_operations("llama-3.2-1b")) / (LLAMA3.n_layers - PRESETS["llama-3.2-1b"].n_layers)
    assert per_layer > 24 and float(per_layer).is_integer()
