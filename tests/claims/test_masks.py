"""Every qualitative sentence of docs/chapters/masks.md, asserted over computed values."""

from __future__ import annotations

import itertools
import pathlib

import pytest
import torch

from backend.compute import causal_mask as cm
from backend.reference import masks

FLOODED = "the river bank flooded"


def run(**params):
    return cm.compute(cm.SPEC.resolve(params))["values"]


def r2(rows):
    return [[round(w, 2) for w in row] for row in rows]


def test_the_last_row_is_the_same_in_encoder_and_decoder_and_earlier_rows_only_lose():
    """'The last row, bank, is the same in both ... the mask only takes information away.'"""
    for words in cm.SENTENCES:
        enc, dec = run(words=words, mask="none"), run(words=words, mask="causal")
        assert enc["weights"][-1] == dec["weights"][-1]
        for i, row in enumerate(dec["weights"]):
            assert all(w == 0 for w in row[i + 1:])  # nothing from later words
            assert row != enc["weights"][i] or i == len(row) - 1


def test_flooded_only_the_flooded_row_matches_and_decoder_rows_do_not_change():
    """'now only the flooded row is the same ... The decoder's first three rows do not change.'"""
    enc, dec = r2(run(words=FLOODED, mask="none")["weights"]), r2(run(words=FLOODED, mask="causal")["weights"])
    assert [i for i in range(4) if enc[i] == dec[i]] == [3]
    three = run(mask="causal")["weights"]
    assert [row[:3] for row in run(words=FLOODED, mask="causal")["weights"][:3]] == three
    assert run(words=FLOODED, mask="none")["weights"][2][2] < run(mask="none")["weights"][2][2]  # 'drops'


def test_additive_and_boolean_give_the_same_weights_when_no_row_is_empty():
    """'on the river-bank sentence they give the same weights to every digit', at every dtype."""
    for words, mask, dtype in itertools.product(cm.SENTENCES, ("none", "causal", "padding"), cm.DTYPES):
        v = run(words=words, mask=mask, dtype=dtype)
        assert v["additive_equals_boolean"] and v["additive_min_equals_boolean"]
        assert v["empty_rows"] == 0 and v["nan_rows"] == 0


def test_padding_real_rows_equal_unpadded_and_pad_row_spreads_evenly():
    for words in cm.SENTENCES:
        p, u = run(words=words, mask="padding"), run(words=words, mask="none")
        n = len(u["tokens"])
        assert [row[:n] for row in p["weights"][:n]] == u["weights"]
        assert len(set(p["weights"][n][:n])) == 1 and p["weights"][n][n] == 0


@pytest.mark.parametrize("words", cm.SENTENCES)
@pytest.mark.parametrize("dtype", list(cm.DTYPES))
def test_after_softmax_rows_lose_weight_and_only_the_last_row_sums_to_one(words, dtype):
    """'the rows no longer add up to 1 ... only bank, which blocks nothing, still sums to 1'."""
    v = run(words=words, mask="causal", form="after_softmax", dtype=dtype)
    enc = run(words=words, mask="none", form="after_softmax", dtype=dtype)
    sums = v["row_sums"]
    assert all(s < 0.99 for s in sums[:-1]) and abs(sums[-1] - 1) < 1e-2
    for i, row in enumerate(v["weights"]):  # 'the weights that remain are the encoder's'
        assert row[: i + 1] == enc["weights"][i][: i + 1]


def test_after_softmax_still_depends_on_future_keys():
    """'the weights still depend on the future keys through the softmax's denominator'."""
    three = run(mask="causal", form="after_softmax")["weights"]
    four = run(words=FLOODED, mask="causal", form="after_softmax")["weights"]
    assert all(four[i][:3] != three[i] for i in range(3))


@pytest.mark.parametrize("dtype", list(cm.DTYPES))
def test_a_row_with_nothing_to_see(dtype):
    """-inf: NaN, one row, the real rows are the unpadded decoder's; dtype minimum / boolean:
    finite and uniform over every key, later ones included."""
    inf = run(mask="causal_padding", dtype=dtype)
    assert inf["empty_rows"] == 1 and inf["nan_rows"] == 1 and inf["nan_row_tokens"] == ["<pad>"]
    assert not inf["additive_equals_boolean"]
    plain = run(mask="causal", dtype=dtype)["weights"]
    assert [row[1:] for row in inf["weights"][1:]] == plain
    for form in ("additive_min", "boolean", "fill_1e4"):
        v = run(mask="causal_padding", form=form, dtype=dtype)
        assert v["nan_rows"] == 0 and v["weights"][0] == [0.25] * 4 and v["empty_row_is_uniform"]


def test_a_nan_row_poisons_the_next_layer():
    """'0 x NaN = NaN, so one empty row poisons the whole sequence'."""
    allowed = cm.allowed_for("causal_padding", 4)
    scores = cm.scores_for(["<pad>", "the", "river", "bank"], torch.float32)
    w = masks.weights_additive(scores, masks.to_additive(allowed, torch.float32, float("-inf")))
    out = w @ torch.randn(4, 4)  # layer 1's output: the pad's row is NaN
    assert out[0].isnan().all() and not out[1:].isnan().any()
    assert (w @ out)[1:].isnan().all()  # layer 2: every real row, though it gives the pad weight 0


def test_sdpa_returns_zeros_for_an_empty_row_and_true_means_takes_part():
    allowed = cm.allowed_for("causal_padding", 4)[None, None]
    E = torch.tensor([cm.EMBEDDINGS[t] for t in ["<pad>", "the", "river", "bank"]])[None, None]
    w = masks.sdpa_weights(E, E, allowed)[0, 0]
    assert (w[0] == 0).all() and torch.allclose(w[1:].sum(-1), torch.ones(3))
    # 004's slip: a True-means-masked triangle attends to exactly the blocked keys
    blocked = torch.ones(3, 3, dtype=torch.bool).triu(1)
    E3 = E[..., 1:, :]
    wrong = masks.sdpa_weights(E3, E3, blocked[None, None])[0, 0]
    assert (wrong[~blocked] == 0).all()  # the past and the diagonal get nothing
    assert abs(float(wrong[0, 1:].sum()) - 1) < 1e-6  # 'the' attends only to the future


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fp32_mask_upcasts_and_its_minimum_becomes_minus_infinity(dtype):
    """The widget's form additive_min_fp32 shows the NaN row again; additive_min stays finite."""
    v = run(mask="causal_padding", dtype=dtype)
    assert v["sum_dtype_with_fp32_mask"] == "float32"
    assert not v["fp32_min_fits"] and v["nan_rows_fp32_min_cast"] == 1
    assert run(mask="causal_padding", form="additive_min_fp32", dtype=dtype)["nan_rows"] == 1
    assert run(mask="causal_padding", form="additive_min", dtype=dtype)["nan_rows"] == 0
    f32 = run(mask="causal_padding", dtype="float32")
    assert f32["nan_rows_fp32_min_cast"] == 0 and f32["fp32_min_fits"]
    assert run(mask="causal_padding", form="additive_min_fp32")["nan_rows"] == 0
    assert abs(run(dtype="bfloat16")["dtype_min"]) < abs(f32["dtype_min"])  # 'a little smaller'


def test_fp32_mask_then_fails_at_the_matmul_or_runs_on_with_a_float32_sum():
    """'Plain code ... stops with expected m1 and m2 to have the same dtype'; 'code that casts the
    weights back ... runs on without a word. Its softmax already runs in float32, so the weights
    cost the same; what the float32 mask adds is the pre-softmax sum ... at twice the size';
    and masked_fill refuses float32's minimum on float16 scores."""
    s16 = cm.scores_for(["the", "river", "bank"], torch.float16)
    mask32 = masks.to_additive(masks.causal_mask(3), torch.float32)
    mask16 = masks.to_additive(masks.causal_mask(3), torch.float16)
    v16 = torch.randn(3, 4).half()
    w = masks.weights_additive(s16, mask32)
    assert w.dtype == torch.float32 and w.element_size() == 2 * s16.element_size()
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        w @ v16
    assert (w.to(s16.dtype) @ v16).dtype == torch.float16  # Hugging Face's cast back: no error
    # Hugging Face's eager softmax: dtype=float32, then back to the query's dtype
    wrong, right = s16 + mask32, s16 + mask16
    assert wrong.element_size() == 2 * right.element_size()  # the sum at twice the size
    hf_wrong = torch.softmax(wrong, -1, dtype=torch.float32)
    hf_right = torch.softmax(right, -1, dtype=torch.float32)
    assert hf_wrong.dtype == hf_right.dtype == torch.float32  # the weights cost the same
    # exact: the allowed scores are the same numbers in both, and either minimum's exp is 0
    assert torch.equal(hf_wrong.to(torch.float16), hf_right.to(torch.float16))
    with pytest.raises(RuntimeError, match="without overflow"):
        s16.masked_fill(~masks.causal_mask(3), torch.finfo(torch.float32).min)


def test_to_additive_is_hugging_faces_eager_mask_conversion():
    """'torch.where(mask, 0, finfo(dtype).min) ... to_additive above is the same conversion'."""
    allowed = masks.and_masks(masks.causal_mask(5), masks.left_padding_mask(torch.tensor([3]), 5))
    for dtype in cm.DTYPES.values():
        hf = torch.where(allowed, torch.tensor(0.0, dtype=dtype), torch.finfo(dtype).min)
        assert torch.equal(masks.to_additive(allowed, dtype), hf)


def test_minus_1e4_fits_float16_and_its_masked_weights_are_exactly_zero():
    """The −1e4 sentinel of older code: finite, so the empty row is uniform; fits float16; exp(-1e4) is exactly
    0 in float32, so every row with something to see equals the boolean form's."""
    assert 1e4 < abs(run(dtype="float16")["dtype_min"])
    for words, mask, dtype in itertools.product(cm.SENTENCES, cm.MASKS, cm.DTYPES):
        v = run(words=words, mask=mask, form="fill_1e4", dtype=dtype)
        assert v["largest_masked_weight"] == 0 and v["nan_rows"] == 0
        b = run(words=words, mask=mask, form="boolean", dtype=dtype)
        rows = [i for i, row in enumerate(v["allowed"]) if any(row)]
        assert [v["weights"][i] for i in rows] == [b["weights"][i] for i in rows]


def test_float16_minimum_on_an_empty_row_of_very_negative_scores_is_nan_again():
    """'if every score in it is that negative, say -20, ... the row is NaN again'; -15 is not."""
    nothing = torch.zeros(4, dtype=torch.bool)
    fp16_min = masks.to_additive(nothing, torch.float16)
    for score, nan in ((-20.0, True), (-16.0, True), (-15.0, False)):
        w = masks.weights_additive(torch.full((4,), score, dtype=torch.float16), fp16_min)
        assert bool(w.isnan().all()) is nan
    assert not masks.weights_boolean(torch.full((4,), -20.0, dtype=torch.float16), nothing).isnan().any()


def test_float16_minimum_overflows_at_the_margin():
    margin = run(dtype="float16")["min_overflow_margin"]
    fp16_min = masks.to_additive(torch.tensor([False]), torch.float16)
    at = torch.tensor([-margin, -margin + 0.1, -margin - 1], dtype=torch.float16) + fp16_min
    assert at.tolist()[0] == float("-inf") and at.tolist()[2] == float("-inf")
    assert at.tolist()[1] == torch.finfo(torch.float16).min
    assert margin == 16


def test_bfloat16_loses_a_digit_float16_keeps_them():
    """'river's weight on itself reads 0.72 instead of 0.73, river's weight on bank 0.22 instead
    of 0.21, and bank's weight on river 0.30 instead of 0.31: three of the nine weights shown
    change ... float16 keeps both decimals of every weight here'. (It listed two of the three.)"""
    bf, f32 = run(mask="none", dtype="bfloat16"), run(mask="none")
    changed = [(i, j) for i, row in enumerate(f32["weights"]) for j, x in enumerate(row)
               if round(bf["weights"][i][j], 2) != round(x, 2)]
    assert changed == [(1, 1), (1, 2), (2, 1)] and len(f32["weights"]) ** 2 == 9
    assert round(bf["weights"][1][1], 2) != round(f32["weights"][1][1], 2)
    # the digit goes in the scores: rounding only the exact weight keeps it
    assert bf["scores"][1][1] != f32["scores"][1][1]
    assert round(bf["weights_rounded_after"][1][1], 2) == round(f32["weights"][1][1], 2)
    for mask in ("none", "causal"):  # 'bank's weight on river ... in the encoder and the decoder alike'
        assert round(run(mask=mask, dtype="bfloat16")["weights"][2][1], 2) != round(run(mask=mask)["weights"][2][1], 2)
        assert run(mask=mask, dtype="bfloat16")["weights"][2][1] == bf["weights"][2][1]
    for mask in ("none", "causal"):
        assert r2(run(mask=mask, dtype="float16")["weights"]) == r2(run(mask=mask)["weights"])


def test_the_bfloat16_weight_quoted_is_the_float32_softmax_then_its_stored_value():
    """'the softmax of the rounded scores, computed in float32, gives 0.7221, which the widget
    stores back in bfloat16, like its scores, as 0.7227' (the page once gave the stored 0.7227
    as the float32 softmax's)."""
    params = cm.SPEC.resolve({"mask": "none", "dtype": "bfloat16"})
    quoted = cm.facts(params)["weights_before_storing"][1][1]
    stored = run(mask="none", dtype="bfloat16")["weights"][1][1]
    scores = cm.scores_for(cm.tokens_for(cm.SENTENCES[0], "none"), torch.bfloat16)
    exact = torch.softmax(scores.float(), dim=-1)[1, 1]  # the rounded scores, softmax in float32
    assert exact.dtype == torch.float32 and quoted == round(float(exact), 4)
    assert f"{quoted:.4f}" != f"{stored:.4f}"  # two different numbers, both printed to 4 places
    assert float(exact.to(torch.bfloat16)) == pytest.approx(stored, abs=5e-5)  # stored = rounded
    # the digit is already gone in float32: the storing is not what costs it
    assert round(quoted, 2) == round(stored, 2) != round(run(mask="none")["weights"][1][1], 2)


def test_exercise_answers():
    prefix = torch.zeros(6, 6, dtype=torch.bool)
    prefix[:, :2] = True
    m = masks.or_masks(masks.causal_mask(6), prefix)
    diff = (m != masks.causal_mask(6)).nonzero().tolist()
    assert diff == [[0, 1]]
    w = masks.sliding_window_mask(8, window=3)  # causal on its own, as exercise 3 says
    assert w.sum(-1).tolist() == [1, 2, 3, 3, 3, 3, 3, 3]
    q, k = torch.arange(8)[:, None], torch.arange(8)[None, :]
    assert ((q - k) < 3).sum(-1).tolist() == [8, 8, 8, 7, 6, 5, 4, 3]  # without the causal half


def test_sdpa_is_a_third_convention_on_this_torch_and_the_triu_answer():
    """The version named is the one installed; SDPA's empty row is neither NaN nor uniform; the
    check-yourself triu mask leaves the last row empty, and SDPA returns zeros for it."""
    v = run(mask="causal_padding")
    assert v["torch_version"] == torch.__version__.split("+")[0]
    assert v["sdpa_empty_row"] == "all zeros"
    E = torch.tensor([cm.EMBEDDINGS[t] for t in ["the", "river", "bank"]])[None, None]
    triu = torch.ones(3, 3, dtype=torch.bool).triu(1)
    w = masks.sdpa_weights(E, E, triu[None, None])[0, 0]
    assert not triu[-1].any() and (w[-1] == 0).all()
    assert (w[~triu] == 0).all()  # the diagonal and the past get nothing


def test_empty_rows_are_named_and_only_in_causal_padding():
    for words, mask, form in itertools.product(cm.SENTENCES, cm.MASKS, cm.FORMS):
        v = run(words=words, mask=mask, form=form)
        assert v["empty_rows"] == (1 if mask == "causal_padding" else 0)


def test_cross_attention_worked():
    """'a table of shape (2, 4)' ... 'There is no triangle: bank reads the whole source, and puts
    0.56 on the source's bank, a later position than its own' ... 'The pad's column is 0 in both
    rows, and each row still sums to 1' ... 'flooded ... puts 0.69 of its weight on river' ...
    checked against SDPA; and the summary: 'every target query sees every real source token'."""
    c = run()["cross"]
    assert c["queries"] == ["bank", "flooded"] and c["keys"] == ["the", "river", "bank", "<pad>"]
    assert c["weights_shape"] == "(2, 4)" and c["mask_shape"] == "(1, 1, 2, 4)"
    assert c["allowed"] == [[True, True, True, False]] * 2  # no triangle, only the pad hidden
    assert all(row[3] == 0 for row in c["weights"]) and c["row_sums"] == [1.0, 1.0]
    assert all(w > 0 for row in c["weights"] for w in row[:3])
    assert c["keys"].index("bank") > c["queries"].index("bank")  # 'a later position than its own'
    assert c["weights"][0] == run(mask="none")["weights"][2] + [0.0]  # bank's encoder row
    assert "flooded" not in c["keys"] and max(range(4), key=lambda j: c["weights"][1][j]) == 1
    assert c["same_as_sdpa"]
    assert round(c["outputs"][1][3]) == 0  # the fourth number of every word is 0
    for params in ({}, {"mask": "none", "dtype": "bfloat16"}, {"form": "after_softmax"}):
        assert run(**params)["cross"] == c  # a fixed example, whatever the widget shows


def test_sdpa_wants_the_negated_blocked_mask():
    """'Negate the mask (~mask) at the boundary': a True-means-blocked mask, negated, gives SDPA
    the boolean form's weights; unnegated it attends to exactly the wrong keys."""
    E = torch.tensor([cm.EMBEDDINGS[w] for w in ("the", "river", "bank")])
    blocked = torch.triu(torch.ones(3, 3, dtype=torch.bool), 1)
    good = masks.sdpa_weights(E[None, None], E[None, None], ~blocked)[0, 0]
    scores = cm.scores_for(["the", "river", "bank"], torch.float32)
    assert torch.allclose(good, masks.weights_boolean(scores, ~blocked), atol=1e-6)
    bad = masks.sdpa_weights(E[None, None], E[None, None], blocked)[0, 0]
    assert bool((bad[:2][~blocked[:2]] == 0).all())  # rows with something to see: only future keys


def test_empty_row_is_uniform_in_every_dtype():
    """The pad's row under causal_padding and a finite sentinel: uniform, in float16 and bfloat16 too."""
    for words, form, dtype in itertools.product(cm.SENTENCES, ("additive_min", "boolean", "fill_1e4"), cm.DTYPES):
        assert run(words=words, mask="causal_padding", form=form, dtype=dtype)["empty_row_is_uniform"]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_three_ways_table_what_happens_and_each_fix(dtype):
    """'Three ways masks go wrong', the table (Part I review K5): after the softmax the rows no
    longer sum to 1, and masking before it fixes that; an all-blocked row under -inf is NaN,
    and a finite minimum or a boolean mask keeps it finite; a float32 mask on half-precision
    scores gives a float32 sum, cast down its minimum brings the NaN row back, and a mask built
    in the scores' own dtype or a boolean one does not."""
    after = run(form="after_softmax", dtype=dtype)["row_sums"]
    assert any(abs(s_ - 1) > 0.01 for s_ in after[:-1])
    before = run(dtype=dtype)["row_sums"]
    assert all(abs(s_ - 1) < 0.01 for s_ in before)
    assert run(mask="causal_padding", dtype=dtype)["nan_rows"] == 1
    for fix in ("additive_min", "boolean"):
        assert run(mask="causal_padding", form=fix, dtype=dtype)["nan_rows"] == 0
    if dtype != "float32":
        assert run(mask="causal_padding", dtype=dtype)["sum_dtype_with_fp32_mask"] == "float32"
        assert run(mask="causal_padding", form="additive_min_fp32", dtype=dtype)["nan_rows"] == 1


def test_the_table_a_boolean_mask_is_safe_applied_not_added():
    """Row 2's fix: 'a boolean mask, given to SDPA or applied with masked_fill, never added (True
    and False would count as 1 and 0)'."""
    allowed = cm.allowed_for("causal_padding", 4)
    scores = cm.scores_for(["<pad>", "the", "river", "bank"], torch.float32)
    added = scores + allowed  # type promotion: the bool becomes 1.0 / 0.0
    assert added.dtype == torch.float32 and torch.equal(added, scores + allowed.float())
    w_added = torch.softmax(added, -1)
    assert (w_added[~allowed] > 0).all()  # every blocked key keeps weight: nothing is blocked
    rows = allowed.any(-1)  # the pad's row has nothing to see: uniform or zeros, never NaN
    w_fill = masks.weights_boolean(scores, allowed)
    assert (w_fill[rows][~allowed[rows]] == 0).all() and not w_fill.isnan().any()
    E = torch.tensor([cm.EMBEDDINGS[t] for t in ["<pad>", "the", "river", "bank"]])[None, None]
    w_sdpa = masks.sdpa_weights(E, E, allowed[None, None])[0, 0]
    assert (w_sdpa[rows][~allowed[rows]] == 0).all() and not w_sdpa.isnan().any()


def test_the_tables_fix_cells_lead_with_one_fix_in_a_few_words():
    """Row 2's 'the fix' packed three fixes, a parenthesis and a caveat into ~45 words (a fresh
    reader could not tell which was recommended): now it leads with the boolean mask, the one the
    section below prefers, and points there for the rest."""
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs/chapters/masks.md").read_text()
    table = text[text.index("## Three ways masks go wrong"):text.index("### Masking after")]
    rows = [r for r in table.splitlines() if r.startswith("| ") and "---" not in r][1:]
    fixes = [r.rstrip(" |").rsplit(" | ", 1)[1] for r in rows]
    assert fixes[1].startswith("**a boolean mask**")
    assert "(#a-row-with-nothing-to-see)" in fixes[1]
    assert all(len(f.split()) <= 30 for f in fixes), [len(f.split()) for f in fixes]


@pytest.mark.parametrize("mask_dtype", [torch.float16, torch.bfloat16])
def test_a_half_precision_mask_on_float32_scores_is_promoted_and_comes_out_right(mask_dtype):
    """Row 4 and 'The other way round': 'the sum is promoted to float32 ... on every row with
    something to see the masked keys get exactly 0 and the weights are the boolean form's. A row
    with nothing to see is the exception, with float16's minimum: ... the softmax of its unmasked
    scores, not uniform (the pad's row, whose scores are all 0, is both; bfloat16's minimum ...
    every such sum rounds back to it, and the row is uniform)'. Measured on torch 2.13: adding
    promotes, it does not raise."""
    for words, mask in itertools.product(cm.SENTENCES, cm.MASKS):
        tokens = cm.tokens_for(words, mask)
        allowed = cm.allowed_for(mask, len(tokens))
        scores = cm.scores_for(tokens, torch.float32)
        additive = masks.to_additive(allowed, mask_dtype)
        assert additive.dtype == mask_dtype and (scores + additive).dtype == torch.float32
        w = masks.weights_additive(scores, additive)
        rows = allowed.any(-1)
        assert torch.equal(w[rows], masks.weights_boolean(scores, allowed)[rows])
        assert (w[rows][~allowed[rows]] == 0).all()
        for i in (~rows).nonzero().flatten().tolist():  # the pad's row: all-zero scores
            assert (scores[i] == 0).all() and torch.allclose(w[i], torch.full_like(w[i], 1 / len(tokens)))
    row = torch.tensor([2.0, -1.0, 0.5, 1.5])  # a row with nothing to see, scores not all equal
    w = masks.weights_additive(row, masks.to_additive(torch.zeros(4, dtype=torch.bool), mask_dtype))
    if mask_dtype == torch.float16:
        assert torch.allclose(w, torch.softmax(row, -1), atol=1e-2)
        assert not torch.allclose(w, torch.full((4,), 0.25), atol=0.1)
    else:
        assert torch.equal(w, torch.full((4,), 0.25))


@pytest.mark.parametrize("q_dtype,mask_dtype", [
    (torch.float32, torch.float16), (torch.float32, torch.bfloat16),
    (torch.float16, torch.float32), (torch.bfloat16, torch.float32)])
def test_sdpa_checks_the_float_masks_dtype(q_dtype, mask_dtype):
    """'Its float attn_mask must be float32 or the queries' own dtype. A float16 or bfloat16
    mask with float32 queries stops with Expected attn_mask dtype to be bool or float or to
    match query dtype, while a float32 mask with float16 or bfloat16 queries is accepted and ...
    masks every row with something to see as the boolean mask does' (torch 2.13, CPU: measured
    here, on whatever torch the page is built with)."""
    tokens = ["<pad>", "the", "river", "bank"]
    allowed = cm.allowed_for("causal_padding", 4)
    E = torch.tensor([cm.EMBEDDINGS[t] for t in tokens], dtype=q_dtype)[None, None]
    eye = torch.eye(4, dtype=q_dtype)[None, None]  # V = I: the output is the weights
    additive = masks.to_additive(allowed, mask_dtype)
    if q_dtype == torch.float32:
        with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float or to match query dtype"):
            torch.nn.functional.scaled_dot_product_attention(E, E, eye, attn_mask=additive)
        return
    w = torch.nn.functional.scaled_dot_product_attention(E, E, eye, attn_mask=additive)[0, 0]
    b = torch.nn.functional.scaled_dot_product_attention(E, E, eye, attn_mask=allowed)[0, 0]
    assert w.dtype == q_dtype
    rows = allowed.any(-1)
    assert torch.allclose(w[rows].float(), b[rows].float(), atol=torch.finfo(q_dtype).eps)
    assert (w[rows][~allowed[rows]] == 0).all()


def test_the_reading_line_holds_what_the_summary_and_questions_use():
    """A fresh reader found the Summary using SDPA's empty row and −1e4, and question masks.3
    naming a form, explained only in a 'Going further' collapsible. SDPA's empty row is now on the
    reading line, −1e4 left the Summary, and every option a question sets is named in the
    question as the dropdown shows it and introduced on the reading line (outside !!!/??? blocks)."""
    from pathlib import Path

    import yaml

    from widgets.build import reading
    root = Path(__file__).resolve().parents[2]
    line, _ = reading.split((root / "docs/chapters/masks.md").read_text(encoding="utf-8"))
    assert '"sdpa_empty_row"' in line
    summary = line[line.index("## Summary"):line.index("## Exercises")]
    assert "1e4" not in summary and "SDPA" in summary
    questions = yaml.safe_load((root / "docs/chapters/_questions/masks.yml").read_text(encoding="utf-8"))
    options = {p.name: set(p.options) for p in cm.SPEC.params if p.type == "choice"}
    defaults = {p.name: p.default for p in cm.SPEC.params}
    named = 0
    for q in questions["questions"]:
        specs = [q["answer"]] if "widget" in q["answer"] else list(q["answer"]["of"].values())
        for spec in specs:
            for name, value in spec.get("params", {}).items():
                if name == "words":  # a sentence, quoted in the question as it reads
                    assert f'"{value}"' in q["ask"] or value == cm.SENTENCES[0]
                    continue
                assert value in options[name]
                if value == defaults[name]:  # the page starts there: nothing to set
                    continue
                assert f"`{value}`" in q["ask"], (q["id"], value)
                assert f"`{value}`" in line, (q["id"], value)
                named += 1
    assert named >= 6
