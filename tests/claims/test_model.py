"""Every qualitative sentence of docs/chapters/model.md, asserted over the values the page
computes, at the settings the text names and across the ranges it invites the reader to move."""

from __future__ import annotations

import pytest

from backend.compute import REGISTRY

MP = REGISTRY["model_params"]
SA = REGISTRY["sampling"]


def mp(**params):
    return MP.compute(MP.SPEC.resolve(params))["values"]


def sa(**params):
    return SA.compute(SA.SPEC.resolve(params))["values"]


def test_off_by_two_is_finite_and_much_worse():
    """Compared on the same positions, the shifted labels score far worse, worse than uniform
    (default prompt, and others the reader might type)."""
    import math

    for prompt in ("The river flows through the", "The city is the capital of the country and"):
        v = sa(prompt=prompt)
        assert math.isfinite(v["loss_off_by_two"])
        assert v["loss_off_by_two"] > v["loss_right_same"] + 2  # nats, like with like
        assert v["n_scored_off_by_two"] == v["n_scored_right"] - 1 == v["n_prompt_tokens"] - 2
    d = sa()
    assert d["loss_off_by_two"] > d["max_entropy"]  # "worse than guessing uniformly"
    assert d["loss_right_same"] != d["loss_right"]  # the two position sets really differ


def test_book_embedding_share_and_untied_would_outweigh_blocks():
    b = mp(preset="book")
    assert round(b["fraction_embedding"], 3) == 0.400 and b["fraction_embedding"] < 0.5  # not "most"
    assert 2 * b["embedding"] > b["params_in_blocks"]  # "untied, ... would outweigh the blocks"


def test_llama2_family_table():
    vals = [mp(preset=n) for n in ("llama-2-7b", "llama-2-13b", "llama-2-70b")]
    assert {v["d_head"] for v in vals} == {128}
    seven, thirteen, seventy = vals
    assert seventy["n_kv"] == 8 and seventy["kv_group"] == 8
    assert seventy["kv_cache_bytes_per_token"] < thirteen["kv_cache_bytes_per_token"]
    assert seventy["kv_cache_bytes_per_token_mha"] == 8 * seventy["kv_cache_bytes_per_token"]


def test_exercise_answer_about_7b_at_twice_the_depth():
    v = mp(preset="custom", n_layers=64, d_model=2944, n_heads=23, n_kv=23, d_ff=7920)
    assert 0.95 < v["ratio_over_7b"] < 1.05 and abs(2944 - 4096 / 2**0.5) < 64


def test_logits_to_keep_keeps_one_row():
    v = sa()
    assert v["logits_bytes_full"] == v["n_prompt_tokens"] * v["logits_bytes_last"]
    w = mp(preset="llama-3-8b")
    assert w["logits_mib_full"] / w["logits_mib_last"] == w["logit_tokens"] == 4096


def test_handout_corrections_hold():
    v = mp()
    assert v["per_layer"] != 201_000_000 and v["per_layer"] > 12 * 4096**2  # more than the 12 d^2 rule
    assert 0.95 < v["fraction_in_blocks"] and round(v["fraction_in_blocks"], 3) != 0.955  # "95%+" survives
    assert v["ratio_70b_over_13b"] < 5.35  # not 5.4


def test_llama2_over_95_but_not_every_model():
    """"In Llama-2 the blocks hold over 95%"; Llama-3-8B, Llama-3.2-1B and the book's model less."""
    for name in ("llama-2-7b", "llama-2-13b", "llama-2-70b"):
        assert mp(preset=name)["fraction_in_blocks"] > 0.95
    for name in ("llama-3-8b", "llama-3.2-1b", "book"):
        assert mp(preset=name)["fraction_in_blocks"] < 0.90
    assert mp(preset="book")["fraction_in_blocks"] < mp(preset="llama-3.2-1b")["fraction_in_blocks"]


def test_which_models_tie():
    assert [mp(preset=n)["tied"] for n in ("llama-2-7b", "llama-3-8b", "llama-3.2-1b", "book")] == [
        False, False, True, True]


def test_tying_pays_in_the_small_model():
    """"in Llama-3.2-1B the embedding alone is ... of the model": far above Llama-2-7B's share."""
    assert mp(preset="llama-3.2-1b")["fraction_embedding"] > 0.2 > 10 * mp()["fraction_embedding"]


def test_rule_of_thumb_close_for_7b_worse_with_gqa():
    assert -0.01 < mp()["approx_error"] < 0  # "short of the real count"
    seventy = mp(preset="llama-2-70b")
    assert seventy["approx_error"] < 0  # "short as well"
    assert abs(seventy["approx_error"]) > 5 * abs(mp()["approx_error"])
    # "the wider MLP adds more than the smaller W_K, W_V take away" (per layer, vs the 12 d^2 rule)
    d, ff, kv = seventy["d_model"], seventy["d_ff"], seventy["n_kv"] * seventy["d_head"]
    assert 3 * d * (ff - 8 * d / 3) > 2 * d * (d - kv)


@pytest.mark.parametrize("L, d", [(8, 512), (32, 4096), (16, 2048), (4, 128)])
def test_width_quadratic_depth_linear(L, d):
    """"doubling d (and d_ff with it) multiplies a block's parameters by four, doubling L only by two"."""
    base = dict(preset="custom", n_layers=L, d_model=d, n_heads=8, n_kv=8, d_ff=4 * d, vocab=32000)
    one = mp(**base)
    wide = mp(**{**base, "d_model": 2 * d, "d_ff": 8 * d})
    deep = mp(**{**base, "n_layers": 2 * L})
    assert 3.99 < wide["per_layer"] / one["per_layer"] <= 4.0
    assert deep["params_in_blocks"] == 2 * one["params_in_blocks"]


def test_try_double_layers_vs_double_width():
    """The "Try it": neither exactly 2 nor 4 (embedding and head do not grow with depth)."""
    base = mp()["total_params"]
    deep = mp(preset="custom", n_layers=64)
    wide = mp(preset="custom", d_model=8192, d_ff=22016)
    assert deep["ratio_over_7b"] == deep["total_params"] / base
    assert 1.9 < deep["ratio_over_7b"] < 2.0 and 3.8 < wide["ratio_over_7b"] < 4.0


def test_sampling_sentences():
    raw = sa()
    assert sa(temperature=0.5)["entropy"] < raw["entropy_raw"] < sa(temperature=2.0)["entropy"]
    assert sa(top_k=5)["kept_tokens"] == 5
    assert sa(top_p=0.9)["kept_tokens"] > 100  # "spreads its probability thin"
    assert raw["entropy_raw"] < raw["max_entropy"]
    # the order matters: top-p after a flattening temperature keeps more
    assert sa(top_p=0.05, temperature=3.0)["kept_tokens"] > 5 * sa(top_p=0.05)["kept_tokens"]


@pytest.mark.parametrize("temperature", [0.1, 0.5, 1.0, 3.0])
def test_temperature_alone_cuts_nothing(temperature):
    v = sa(temperature=temperature)
    assert v["kept_tokens"] == v["vocab_size"]
    if temperature == 0.1:
        assert v["underflow_tokens"] > 0  # zeros from float32 underflow, not from a cut
        # 'only drawable_tokens can be [drawn], the count the widget's title shows'
        assert v["drawable_tokens"] == v["kept_tokens"] - v["underflow_tokens"] < v["vocab_size"]
        fig = SA.compute(SA.SPEC.resolve({"temperature": temperature}))["figure"]
        assert f"{v['drawable_tokens']:,} of {v['vocab_size']:,} can be drawn" in fig["layout"]["title"]["text"]


def test_one_block_is_not_what_forces_tensor_parallelism():
    """'even Llama-2-70B's block takes [under 2] GB in 16 bits. The whole model ... [is] what
    outgrows one device'"""
    v = mp(preset="llama-2-70b")
    assert v["per_layer_gb_16bit"] == v["per_layer"] * 2 / 1e9 < 2
    assert v["total_params"] * 2 / 1e9 > 80  # more than one 80 GB accelerator holds


def test_the_parameter_diagram_shows_the_widgets_shares():
    """The 'where the parameters sit' figure and the prose read the same counts."""
    from backend.diagrams import param_share

    texts = param_share.draw(["llama-2-7b", "llama-3-8b", "llama-3.2-1b"]).texts()
    for name in ("llama-2-7b", "llama-3-8b", "llama-3.2-1b"):
        assert f"blocks {mp(preset=name)['fraction_in_blocks']:.1%}" in texts


def test_top_k_one_has_zero_entropy():
    v = sa(top_k=1)
    assert v["kept_tokens"] == 1 and v["entropy"] == 0.0 and str(v["entropy"]) == "0.0"


def test_temperature_monotone_across_slider():
    temps = [0.1, 0.3, 0.6, 1.0, 1.5, 2.0, 3.0]
    ents = [sa(temperature=t)["entropy"] for t in temps]
    assert ents == sorted(ents)


def test_seeds_agree_when_cold_and_scatter_when_hot():
    """At τ = 0.1, over seeds spread across the slider's 0-999: the first word varies among the
    few top candidates; what follows is the same string for almost every seed."""
    from collections import Counter

    seeds = range(0, 1000, 50)  # 20 seeds over the whole range
    runs = [sa(temperature=0.1, seed=k) for k in seeds]
    top = {r["token"].strip() for r in runs[0]["probs"][:5]}
    words = [r["continuation"].split() for r in runs]
    firsts = Counter(w[0] for w in words)
    assert len(firsts) >= 2 and set(firsts) <= top  # "now and then one of the next few"
    assert firsts.most_common(1)[0][0] == runs[0]["probs"][0]["token"].strip()  # "mostly the likeliest"
    tails = Counter(" ".join(w[1:]) for w in words)
    assert tails.most_common(1)[0][1] >= 0.8 * len(words)  # "for almost every seed"
    hot = [sa(temperature=2.0, seed=k)["continuation"] for k in range(5)]
    assert len(set(hot)) == 5


def test_where_the_parameters_sit_matrix_by_matrix():
    """'Llama-3-8B: its three MLP matrices hold X, more than two thirds, and the attention Y, less
    than a quarter of that; W_K and W_V are each 0.25 of W_Q: 8 key/value
    heads serve 32 query heads. In Llama-2-7B ... the four attention matrices are equal'."""
    v = mp(preset="llama-3-8b")
    assert v["share_mlp"] > 2 / 3
    assert v["share_attention"] < v["share_mlp"] / 4
    assert v["k_over_q"] == v["v_proj_params"] / v["q_proj_params"] == 8 / 32
    assert (v["n_kv"], v["n_heads"]) == (8, 32)
    l2 = mp(preset="llama-2-7b")
    assert l2["q_proj_params"] == l2["k_proj_params"] == l2["v_proj_params"] == l2["o_proj_params"]
    assert l2["share_attention"] == pytest.approx(l2["attention"] / l2["total_params"])
    # the parts the bars are cut into add up to the widget's totals
    for name in ("llama-3-8b", "llama-3.2-1b", "book"):
        w = mp(preset=name)
        assert sum(w[f"{k}_params"] for k in ("q_proj", "k_proj", "v_proj", "o_proj")) == w["attention"]
        assert sum(w[f"{k}_params"] for k in ("gate_proj", "up_proj", "down_proj")) == w["mlp"]


def test_smollm2s_count_and_its_embedding_share():
    """'SmolLM2-135M ... counts to 134,515,008 parameters' (the checkpoint's tensors: tests/
    smollm2/test_load.py); 'The embedding alone is 21% of it: in a small model with a large
    vocabulary, the table of token vectors is a large part of the whole.'"""
    s = mp(preset="smollm2-135m")
    assert (s["n_layers"], s["d_model"], s["n_heads"], s["n_kv"]) == (30, 576, 9, 3)
    assert s["tied"] and s["lm_head"] == 0
    assert s["fraction_embedding"] > 0.2 > 3 * mp(preset="llama-3-8b")["fraction_embedding"]


def test_smollm2s_next_token_distribution_is_barely_sharper_on_the_river_prompt():
    """'It is barely sharper on this prompt: its untouched entropy is 5.85 nats against the
    book's model's 6.08 (over a vocabulary twelve times as large), its most likely token ... has
    only 5.8% (the book's model's ... 3.4%), and top-p = 0.9 leaves 876 tokens.'"""
    from backend.compute import sampling

    def s(**p):
        return sampling.compute(sampling.SPEC.resolve(p))["values"]

    smol, book = s(model="smollm2"), s()
    assert smol["vocab_size"] == 49152
    assert 0.9 * book["entropy_raw"] < smol["entropy_raw"] < book["entropy_raw"]
    assert smol["vocab_size"] == 12 * book["vocab_size"]
    assert book["top_prob"] < smol["top_prob"] < 0.1
    assert s(model="smollm2", top_p=0.9)["kept_tokens"] > 100
