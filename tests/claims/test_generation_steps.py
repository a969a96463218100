"""Every qualitative sentence of "A trained model, one token at a time" (docs/chapters/
kv-cache.md), asserted over the values the generation_steps widget computes at the settings the
text names. Thresholds are what the words mean ("nearly every step": at most one in eight
misses; "close": within a fifth of each other; "less than the count of positions suggests": a
speed-up below the ratio of positions), not windows around today's output."""

from __future__ import annotations

import json
from functools import cache

import torch

from backend.compute import generation_steps as gs
from backend.compute import induction_lab as lab


@cache
def _run(key: str) -> dict:
    return gs.compute(gs.SPEC.resolve(json.loads(key)))["values"]


def run(**params):
    return _run(json.dumps(params, sort_keys=True))


def test_the_cache_size_follows_from_the_shape_and_is_what_the_run_held():
    """'2 × 30 × 3 × 64 × 4 = 46,080 bytes a token ... the cache the run really held was ...';
    'In 16-bit ... a token costs 23,040 bytes and the model's whole context ...'; 'With a
    key/value head for each of its 9 query heads it would be three times as much'"""
    from backend.smollm2.load import model

    c = model()[0].config
    v = run()
    assert (v["n_layers"], v["n_kv_heads"], v["d_head"]) == (c.n_layers, c.n_kv_heads, c.d_head)
    assert v["cache_bytes_per_token"] == 2 * c.n_layers * c.n_kv_heads * c.d_head * 4
    assert v["cache_held_bytes"] == v["cache_bytes"] == v["cache_positions"] * v["cache_bytes_per_token"]
    assert v["cache_bytes_per_token_16bit"] * 2 == v["cache_bytes_per_token"]
    assert v["cache_bytes_context"] == c.max_seq_len * v["cache_bytes_per_token_16bit"]
    assert c.n_heads == 9 and c.n_heads // c.n_kv_heads == 3


def test_the_default_draw_is_the_one_the_text_reads():
    """'step 4 after "The river flows through the ..." drew ..., from N tokens that top-p left'"""
    v = run()
    assert v["step"] == 4 and v["prompt_text"] == gs.PROMPT
    assert 1 < v["kept_tokens"] < v["vocab_size"]  # top-p cut, and left a choice
    assert v["drawn_prob"] > v["drawn_prob_raw"]  # the cut renormalised what was left


def test_a_low_temperature_nearly_always_takes_the_top_token_but_not_always():
    """'Set τ to 0.1 and step to 32: nearly every step takes the most likely token, but not every
    one. Where two tokens are close (...), τ = 0.1 still leaves the second ... of what the two
    share. A low temperature is not greedy decoding.'"""
    v = run(temperature=0.1, step=32)
    assert 0 < len(v["steps_not_top"]) <= 32 // 8
    p1, p2 = v["close_probs"]
    assert p2 > 0.8 * p1
    assert v["close_probs_after"][1] > 0.4
    # the shares after τ are the softmax of the two logits / τ (by hand)
    assert abs(v["close_probs_after"][1] - 1 / (1 + (p1 / p2) ** 10)) < 1e-5


def test_the_cache_saves_less_than_the_count_of_positions_suggests():
    """'at a few dozen positions the cache saves less than the count of positions suggests'
    (measured: the speed-up of a cached step over a recompute, against the positions ratio)"""
    v = run(step=32)
    assert v["timed_positions"] > 24
    assert v["full_ms"] / v["cached_ms"] < v["timed_positions"]


def test_the_induction_head_rests_on_the_first_token_while_nothing_repeats():
    """'The default head is layer 18, head 6, the strongest induction head of the previous
    chapter. Nothing in the prompt repeats yet, and it puts 99.9% of the last token's weight on
    <|endoftext|>'"""
    t = lab.compute(lab.SPEC.resolve({}))["values"]["top_induction"]
    assert (t["layer"], t["head"]) == (gs.SPEC.param("layer").default, gs.SPEC.param("head").default)
    v = run()
    seen = v["tokens"][1: v["cache_positions"]]
    assert len(set(seen)) == len(seen)
    assert v["attention_first"] > 0.9
    assert abs(sum(v["attention"]) - 1) < 1e-4
    assert torch.tensor(v["attention"]).argmax() == 0
