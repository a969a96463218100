"""The sentences of docs/chapters/llama.md's "On a trained model": the parity check on
SmolLM2-135M's weights, asserted over the values the widget computes at the settings the text
names. Thresholds are what the words mean ("nearly every position": at least 14 of 16;
"whole logits, not rounding": over 1)."""

from __future__ import annotations

from functools import cache

import pytest

from backend.compute import parity as PARITY


@cache
def values(**params):
    return PARITY.compute(PARITY.SPEC.resolve({"model": "smollm2", **params}))["values"]


# The exact agreements (max_abs_logit_diff == 0.0): why they hold on any CPU is in test_llama.py.
def test_unbroken_the_logits_agree_exactly_and_the_cache_within_its_tolerance():
    """'the full-forward logits still agree exactly'; 'differs ... by ..., more than on the small
    random model'; 'so the trained model's tolerance is 1e-3, not 1e-5'"""
    v = values()
    random = PARITY.compute(PARITY.SPEC.resolve({}))["values"]
    assert v["max_abs_logit_diff"] == 0.0 and v["ok"]
    assert random["cached_vs_uncached_diff"] < v["cached_vs_uncached_diff"] <= v["logit_tolerance"]
    assert v["logit_tolerance"] == 1e-3 and v["n_params"] == 134_515_008


@pytest.mark.parametrize("fault", ["rope_layout", "repeat_kv"])
def test_a_wrong_layout_or_kv_order_changes_the_top_token_nearly_everywhere(fault):
    """'the differences are whole logits, not rounding: a wrong RoPE layout or K/V order changes
    the most likely next token at nearly every position'"""
    v = values(fault=fault)
    assert v["max_abs_logit_diff"] > 1 and not v["ok"]
    assert v["n_positions_argmax_changed"] >= v["n_positions"] - 2


def test_without_the_mask_the_loss_is_lower_than_llamas_and_both_are_high():
    """'it does not make the loss worse; here the broken model's loss is *lower* than Llama's';
    'both models' loss is high, above the 10.8 of an even guess'"""
    v = values(fault="causal_mask")
    assert v["loss"] < v["hf_loss"] and v["max_abs_logit_diff"] > 1
    for fault in ("rope_layout", "repeat_kv", "causal_mask"):
        w = values(fault=fault)
        assert min(w["loss"], w["hf_loss"]) > w["uniform_loss"]


@pytest.mark.parametrize("move", [{"seed": 1}, {"seq_len": 64}])
def test_unbroken_the_trained_model_stays_within_its_tolerance_across_the_controls(move):
    """The tolerance is not drawn around one run: other tokens, the longest and shortest
    sequences."""
    v = values(**move)
    assert v["max_abs_logit_diff"] == 0.0 and v["ok"], v["cached_vs_uncached_diff"]


def test_the_upcast_changes_nothing_in_float32_and_bfloat16_is_refused():
    """'The upcast still changes nothing in float32; the trained model is compared in float32
    only.'"""
    assert values(fault="norm_upcast")["max_abs_logit_diff"] == 0.0
    with pytest.raises(Exception, match="float32"):
        PARITY.SPEC.resolve({"model": "smollm2", "dtype": "bfloat16"})


def test_the_disabled_sizes_note_names_the_models_own_sizes():
    """The size controls' note, typed in the spec (it is read before any model loads), holds
    the loaded config's numbers."""
    from backend.smollm2.load import model

    c = model()[0].config
    note = PARITY.FOR_RANDOM.cases["smollm2"]["note"]
    assert (f"{c.n_layers} layers, width {c.d_model}, {c.n_heads} query heads sharing "
            f"{c.n_kv_heads} key/value heads, d_ff {c.d_ff:,}, {c.vocab_size:,} tokens, "
            f"θ {int(c.rope_theta):,}") in note
