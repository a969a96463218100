"""Every qualitative sentence of docs/chapters/heads.md, asserted over computed values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from backend.compute import multi_head as mh

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = [(h, k, d) for d in (64, 256, 512, 1024) for h in (2, 4, 8, 16) if d % h == 0
            for k in mh._divisors(h)]


def run(**p):
    return mh.compute(mh.SPEC.resolve(p))["values"]


def maps_of(**p):
    return torch.tensor([tr["z"] for tr in mh.compute(mh.SPEC.resolve(p))["figure"]["data"]])


@pytest.fixture(scope="module")
def v():
    """What `{{ value("multi_head", ...) }}` reads at the defaults: compute's values and the
    build's facts."""
    p = mh.SPEC.resolve({})
    return {**mh.compute(p)["values"], **mh.facts(p)}


def test_the_two_heads_disagree_and_the_big_head_sits_between(v):
    ex = v["two_heads"]
    a, b, one = ex["head_a"], ex["head_b"], ex["one_head"]
    assert min(a, key=a.get) == "the"  # head A all but ignores "the"
    assert a["the"] < 0.05 and a["river"] > a["the"] and a["bank"] > a["river"]  # leans on river, bank
    assert max(b, key=b.get) == "the"  # head B gives "the" the most weight
    for w in ("the", "river", "bank"):  # one big head in between, word by word
        assert min(a[w], b[w]) < one[w] < max(a[w], b[w])


def test_the_try_moves_head_a_not_head_b(v):
    ex = v["two_heads"]
    assert ex["head_a_try"]["the"] > 5 * ex["head_a"]["the"]  # "jumps"
    assert ex["head_b_try"] == ex["head_b"]  # "do not change at all"


def test_head_widths_settle_at_64_or_128(v):
    assert {r["d_head"] for r in v["head_table"]} == {64, 128}
    assert all(r["width"] == r["d_model"] for r in v["head_table"])


def test_parameters_and_flops_identical_only_weights_grow(v):
    for r in v["head_table"]:  # "identical, not roughly equal ... every row"
        assert r["params_heads"] == r["params_one_head"] and r["flops_heads"] == r["flops_one_head"]
        assert r["scores_heads"] == r["n_heads"] * r["scores_one_head"]  # h times as many


def test_llama3_8b_gqa_factor(v):
    llama = v["head_table"][1]
    assert llama["n_heads"] // llama["n_kv_heads"] == llama["n_rep"] == 4


def test_default_difference_is_all_in_wk_wv(v):
    assert v["params_attention_mha"] - v["params_attention"] == v["params_kv_mha"] - v["params_kv"]
    assert v["kv_bytes_per_token"] < v["kv_bytes_per_token_mha"]


@pytest.mark.parametrize("h, n_kv, d", SETTINGS)
def test_across_the_sliders(h, n_kv, d):
    s = run(n_heads=h, n_kv=n_kv, d_model=d)
    assert s["kv_fraction"] == n_kv / h  # "always n_kv / h, at every width"
    saving = s["params_attention_mha"] - s["params_attention"]
    assert saving <= s["params_attention_mha"] / 2  # "never more than half the layer"
    if n_kv == h:
        assert s["relative_error"] == 0.0 and s["max_weight_change"] == 0.0  # nothing pooled
    else:
        assert s["relative_error"] > 0.5  # pooling unrelated heads changes the layer a lot


@pytest.mark.parametrize("h, d", [(h, d) for d in (64, 256, 512, 1024) for h in (4, 8, 16)])
def test_multi_query_moves_further_than_pairing(h, d):
    assert run(n_heads=h, n_kv=1, d_model=d)["relative_error"] > \
        run(n_heads=h, n_kv=h // 2, d_model=d)["relative_error"]


@pytest.mark.parametrize("h", [2, 4, 8, 16])
def test_one_kv_head_still_gives_different_maps(h):
    maps = maps_of(n_heads=h, n_kv=1)
    for i in range(1, h):
        assert (maps[i] - maps[0]).abs().max() > 0.05  # "the maps still differ"


def test_the_average_of_a_group_resembles_none_of_its_members():
    mha = mh._multi_head(8, 512)[0]
    w = mha.k_proj.weight.view(8, 64, 512)
    mean = w.mean(0)
    for head in w:
        assert torch.linalg.norm(head - mean) / torch.linalg.norm(head) > 0.5


def test_the_widget_refuses_3_of_8_and_names_choices():
    with pytest.raises(mh.ParamError) as err:
        run(n_heads=8, n_kv=3)
    assert "1, 2, 4, 8" in str(err.value)


def test_notebook_prints_the_handout_numbers(capsys):
    nb = json.loads((ROOT / "docs/exercises/llm101-04-two-heads.ipynb").read_text())
    src = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    exec(compile(src.replace("\nshow(fig)", "\n0"), "notebook", "exec"), {})
    out = capsys.readouterr().out
    assert "one big head      the 0.14  river 0.31  bank 0.56" in out
    assert "head A (meaning)  the 0.03  river 0.33  bank 0.64" in out
    assert "head B (generic)  the 0.59  river 0.19  bank 0.22" in out
    assert 'head A, weight for "the": 0.03 -> 0.30' in out and "head B unchanged: True" in out


ALL_D = [(h, k, d) for d in (32, 64, 256, 512, 1024) for h in (2, 4, 8, 16) if d % h == 0
         for k in mh._divisors(h) if k < h]


def test_zero_output_scores_exactly_one():
    from backend.reference.kv_sharing import relative_error
    y = mh._multi_head(8, 512)[3]
    # exact: 0 - y is -y, whose norm sums the same squares in the same order as y's
    assert relative_error(torch.zeros_like(y), y) == 1.0  # "a layer that output zeros would score 1"


def test_multi_query_is_close_to_the_zero_baseline(v):
    assert run(n_kv=1)["relative_error"] > 0.9


@pytest.mark.parametrize("h", [2, 4, 8, 16])
def test_pooled_value_heads_shrink_by_one_over_sqrt_n_rep(h):
    for k in mh._divisors(h)[:-1]:
        s = run(n_heads=h, n_kv=k)
        assert abs(s["v_shrink"] - s["shrink_theory"]) < 0.03  # "about 1/sqrt(n_rep)"


@pytest.mark.parametrize("h, n_kv, d", ALL_D)
def test_change_sits_near_sqrt_one_minus_one_over_n_rep(h, n_kv, d):
    s = run(n_heads=h, n_kv=n_kv, d_model=d)
    theory = (1 - 1 / s["n_rep"]) ** 0.5
    assert abs(s["relative_error"] - theory) < 0.12  # "within 0.12 across the sliders"
    assert s["norm_ratio"] < 1 and s["cosine"] < 1  # the output shrinks and turns
    assert s["entropy"] > s["entropy_mha"]  # "every softmax row flattens" (on average)


def test_change_can_pass_one_at_small_d_and_is_not_monotone():
    assert run(n_heads=16, n_kv=1, d_model=32)["relative_error"] > 1
    assert run(n_heads=16, n_kv=2, d_model=64)["relative_error"] > \
        run(n_heads=16, n_kv=1, d_model=64)["relative_error"]  # "not always larger"


def test_the_default_outputs_quoted(v):
    four, one = run(n_kv=4), run(n_kv=1)
    assert one["norm_ratio"] < four["norm_ratio"] < 1
    assert v["entropy_mha"] < four["entropy"] < one["entropy"]  # rises as n_kv falls


def test_init_note():
    i = mh._constants()["init"]
    assert i["handout"] == i["glorot_per_head"]  # per head, the handout's formula is Glorot's
    assert abs(i["handout"] - i["he"]) < abs(i["handout"] - i["glorot_whole"])  # closer to He


def test_llama3_8b_layer_with_shared_kv(v):
    r = v["head_table"][1]
    assert r["params_shared_kv"] < r["params_heads"]
    assert r["params_shared_kv"] == 2 * 4096 * 4096 + 2 * 4096 * 8 * 128  # hand arithmetic


def test_flop_counter_counts_two_per_multiply_add(v):
    r = v["head_table"][1]
    T, d = v["cost_seq_len"], r["d_model"]
    assert r["flops_projections"] == 4 * 2 * T * d * d


def test_trained_heads_change_at_least_as_much_as_random_ones(v):
    """'In every layer and at every n_kv, pooling MiniLM's trained heads changes the output at
    least as much as the random-heads figure'; the table's columns are what they say."""
    t = v["trained"]
    assert t is not None, "MiniLM must be loadable where the book is built"
    assert (t["n_heads"], t["n_layers"]) == (12, 6)
    assert t["n_kv"] == [6, 4, 3, 2, 1] and t["n_rep"] == [2, 3, 4, 6, 12]
    for k, row, theory, lo, hi in zip(t["n_kv"], t["change"], t["random_theory"],
                                      t["change_min"], t["change_max"]):
        assert len(row) == 6 and lo == min(row) and hi == max(row)
        assert abs(theory - (1 - k / 12) ** 0.5) < 1e-12
        assert all(c >= theory for c in row)
    assert t["n_sentences"] == len(mh.TRAINED_SENTENCES) and mh.SENTENCE + "." in mh.TRAINED_SENTENCES


def test_the_mask_broadcasts_over_heads():
    """'The mask comes with a head axis of size 1 ... and broadcasts over the heads'."""
    from backend.reference import masks
    from backend.reference.config import ModelConfig
    from backend.reference.multi_head import MultiHeadAttention

    torch.manual_seed(0)
    layer = MultiHeadAttention(ModelConfig(vocab_size=1, d_model=32, n_layers=1, n_heads=4, d_ff=1)).eval()
    x = torch.randn(2, 5, 32)
    once = masks.causal_mask(5).expand(2, 1, 5, 5)  # (B, 1, T, T)
    y1, _ = layer(x, x, once)
    y4, _ = layer(x, x, once.repeat(1, 4, 1, 1))  # copied once per head
    assert torch.allclose(y1, y4)


def written_out(scores):
    """The softmax written out in the scores' own dtype: exponentials, their sum, the division."""
    exps = scores.exp()
    return exps / exps.sum(-1, keepdim=True)


def test_the_float32_softmax_accumulates_in_float32_a_different_guard_from_the_scaling_factor():
    """"the softmax is asked for in float32 ... so that its exponentials and their row sum
    accumulate in float32 whatever kernel runs (PyTorch's own CPU kernel already does: asked for
    in bfloat16, it gives the same weights; a softmax written out by hand in bfloat16 would keep
    only 8 significant bits in each). It cannot restore digits the scores lost by being held in
    bfloat16, as the masks chapter's "Going further" shows. That is a different guard from the
    scaling chapter's 1/√d_k ...: a row whose scores are spread that wide saturates in any
    precision, and a scaled row computed in bfloat16 still loses digits." (It once said "for the
    same stability reason as the scaling chapter's", then that the float32 softmax keeps digits
    a bfloat16 one would lose, though PyTorch's bfloat16 kernel gives the same weights, and
    pointed at the masks chapter's mask example, where the softmax already runs in float32.)"""
    from backend.compute import causal_mask
    from backend.reference import scaling

    assert torch.finfo(torch.bfloat16).eps == 2 ** -7  # 8 significant bits, the leading one kept
    g = scaling.make_generator(0)
    unscaled = scaling.random_scores(512, 8, 8, 512, g).double()  # (S, Q, T), 4,096 rows
    scaled = unscaled / 512 ** 0.5
    held = scaled.to(torch.bfloat16)

    exact = torch.softmax(scaled, -1)
    upcast = torch.softmax(held, -1, dtype=torch.float32)         # HF's eager path
    assert (upcast.double() - torch.softmax(held.double(), -1)).abs().max() < 1e-6  # float32 sums
    assert torch.equal(torch.softmax(held, -1), upcast.to(torch.bfloat16))  # the kernel already did
    in_bf16 = written_out(held).double()                          # by hand, in bfloat16
    assert (in_bf16 - exact).abs().max() > (upcast.to(torch.bfloat16).double() - exact).abs().max()
    # what the upcast cannot restore: the masks chapter's weight, from scores held in bfloat16
    held_params = causal_mask.SPEC.resolve({"mask": "none", "dtype": "bfloat16"})
    in_float32 = causal_mask.facts(held_params)["weights_before_storing"][1][1]
    exact_weight = causal_mask.compute(causal_mask.SPEC.resolve({"mask": "none"}))["values"]
    assert round(in_float32, 2) != round(exact_weight["weights"][1][1], 2)

    # the scaling factor's job is not the upcast's: wide scores saturate as often in float32 as in
    # float64, and dividing by sqrt(d_k) is what un-saturates them, in either precision
    def saturated(p):
        return scaling.weight_stats(p).saturated
    assert saturated(torch.softmax(unscaled.float(), -1).double()) == saturated(torch.softmax(unscaled, -1)) > 0.5
    assert saturated(torch.softmax(scaled.float(), -1).double()) == saturated(exact) < 0.01
