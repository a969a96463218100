"""Every qualitative sentence of docs/chapters/scaling.md, asserted over the values the page
computes: at the settings the text names, and across the head-size and positions sliders where
the text invites the reader to move them (seed at its default, as the page starts).

Where a sentence is about a population ("the bigger the head, the more rows ..."), consecutive
slider stops are compared with a slack of 3 standard errors of the two sample proportions,
and the ends of the range must differ by far more than that.
"""

from __future__ import annotations

import math

import pytest
import torch

from backend.reference import river_bank as rb
from backend.reference import scaling
from tests.support.scaling_page import (
    D_KS,
    GRID,
    MODULE,
    POSITIONS,
    SEED,
    slack,
    v,
    widget_rows,
)

# --- Intuition -----------------------------------------------------------------------------

def test_softmax_ignores_a_shift_but_not_the_size_of_differences():
    """"A softmax ignores a constant added to every score ... Scores of 0.5 and 1.0 give two
    weights of similar size; multiply both scores by ten and the smaller weight falls below 1%.\""""
    s = torch.tensor([0.5, 1.0], dtype=torch.float64)
    assert torch.allclose(torch.softmax(s + 123.0, -1), torch.softmax(s, -1), rtol=1e-12)
    small, large = torch.softmax(s, -1).tolist()
    assert large / small < 2                       # similar size (0.38, 0.62)
    assert torch.softmax(10 * s, -1).min() < 0.01  # 0.0067


def test_head_128_spreads_scores_about_root_two_wider_than_head_64():
    """"A head of size 128 produces scores spread about sqrt(2) times as wide as 64": the
    measured ratio of standard deviations agrees with sqrt(2) within 4 combined standard errors
    (delta method: SE(sd) = SE(var) / (2 sd))."""
    a, b = v(128), v(64)
    ratio = math.sqrt(a["var_unscaled"] / b["var_unscaled"])
    rel = math.hypot(a["var_standard_error"] / a["var_unscaled"],
                     b["var_standard_error"] / b["var_unscaled"]) / 2
    assert abs(ratio - math.sqrt(2)) < 4 * rel * ratio


# --- Measuring it --------------------------------------------------------------------------

def test_bigger_heads_get_fewer_pairs_and_the_prose_says_so():
    """docs/chapters/_compute/scaling.md: "draws a fixed budget of random numbers ... A bigger
    head therefore gets a noisier estimate"."""
    assert v(64)["n_pairs"] == 10_000 and v(512)["n_pairs"] < v(64)["n_pairs"]
    pairs = [v(d)["n_pairs"] for d in D_KS]
    assert pairs == sorted(pairs, reverse=True)
    assert v(512)["var_standard_error"] > v(64)["var_standard_error"]


@pytest.mark.parametrize("d_k", [4, 64, 512])
def test_widget_digits_differ_from_the_handout_by_about_a_standard_error(d_k):
    """"its digits differ from the handout's, by about as much as the standard error predicts":
    each is within 4 standard errors of d_k (the handout's with 100,000 pairs)."""
    values = v(d_k)
    assert abs(values["var_unscaled"] - d_k) < 4 * values["var_standard_error"]
    handout = values[f"handout_var_unscaled_{d_k}"]
    assert abs(handout - d_k) < 4 * scaling.variance_standard_error(d_k, values["handout_pairs"])


def test_the_default_draw_is_handout_000s_and_the_box_is_reproduced():
    """Notes on the sources: "seeding the generator with 0 reproduces every one of its digits,
    and the widget's default draw (seed 0) is those same 10,000 pairs"; the box's table "book
    computes" column."""
    x = v()
    if SEED == 0:
        assert f"{x['var_unscaled']:.2f} {x['var_scaled']:.3f}" == "64.03 1.000"
    assert (f"{x['handout000_var_unscaled']:.2f} {x['handout000_var_scaled']:.3f} "
            f"{x['handout000_max_prob_unscaled']:.4f} {x['handout000_entropy_unscaled']:.3f} "
            f"{x['handout000_max_prob_scaled']:.4f} {x['handout000_entropy_scaled']:.3f}"
            ) == "64.03 1.000 0.9980 0.014 0.4125 1.708"


def test_handout_000s_row_is_far_above_the_mean_largest_weight():
    """Notes on the sources: its largest weight "is far above the mean largest weight ... over
    the book's queries" (and is one of the ordinary extreme rows: above 0.99)."""
    x = v()
    assert x["handout000_max_prob_unscaled"] > 0.99
    assert x["handout000_max_prob_unscaled"] - x["max_prob_unscaled"] > 0.1


def test_typical_score_at_head_512_is_about_23():
    """"At head size 512 the typical score is about sqrt(512) ~ 23 away from zero; the
    measured spread is ..." (within 4 standard errors; delta method SE(sd) = SE(var)/(2 sd))."""
    x = v(512)
    assert f"{x['sqrt_d_k']:.0f}" == "23"
    assert abs(x["score_sd"] - x["sqrt_d_k"]) < 4 * x["var_standard_error"] / (2 * x["score_sd"])


def test_handout_table_middle_column_is_the_handouts_printed_digits():
    x = v()
    assert [f"{x[f'handout_var_unscaled_{d}']:.1f} {x[f'handout_var_scaled_{d}']:.2f}"
            for d in (4, 64, 512)] == ["4.0 1.01", "64.1 1.00", "514.2 1.00"]


# --- What a large variance does to the softmax (d_k = 64, 8 positions) ---------------------

def test_default_setting_sentences():
    """"more than a third of all queries already put 99% of their weight on a single key ...
    the typical row gets less than a quarter of the gradient an even row would ... Scaled, the
    typical row gets about as much as an even row, and almost no row is starved.\""""
    x = v()
    assert x["saturated_unscaled"] > 1 / 3
    assert x["grad_unscaled"] < 0.25
    assert 0.5 < x["grad_scaled"] < 2
    assert x["starved_scaled"] < 0.01


def test_the_frobenius_bound_on_saturated_rows():
    """"|J|_F is at most about 2 (1 - p_max)": exactly, <= e sqrt(4 + e^2) with e = 1 - p_max;
    checked on the widget's rows and on adversarial rows (the rest of the mass on one key, or
    spread evenly)."""
    rows = [widget_rows(d, t, False) for d, t in ((64, 8), (1024, 2), (512, 512), (16, 64))]
    for p in rows:
        e = p.sort(-1, descending=True).values[:, 1:].sum(-1)  # 1 - p_max, without cancelling
        assert (scaling.score_gradient(p) <= e * torch.sqrt(4 + e ** 2) * (1 + 1e-9)).all()
    for e in (0.5, 0.1, 0.01, 1e-6):
        for t in (2, 8, 512):
            two = torch.tensor([1 - e, e] + [0.0] * (t - 2), dtype=torch.float64)
            spread = torch.tensor([1 - e] + [e / (t - 1)] * (t - 1), dtype=torch.float64)
            for p in (two, spread):
                assert scaling.score_gradient(p).item() <= e * math.sqrt(4 + e * e) * (1 + 1e-12)
            assert scaling.score_gradient(two).item() > 1.9 * e * (1 - e)  # "about": it is reached


@pytest.mark.parametrize("d_k,n_positions", [(d, t) for d in (16, 64, 256, 1024) for t in POSITIONS])
def test_collapsed_rows_get_almost_no_gradient_and_the_others_still_get_some(d_k, n_positions):
    """Intro: "a collapsed row passes little gradient back to its scores"; note: "the collapsed
    rows get little gradient (never more than half of what an even row gets, and at up to 64
    positions nearly always under a tenth), the others still get some"."""
    p = widget_rows(d_k, n_positions, False)
    rel = scaling.score_gradient(p) / scaling.even_row_gradient(n_positions)
    collapsed = p.max(-1).values >= 0.99
    if collapsed.any():
        assert rel[collapsed].max() < 0.5
    if n_positions <= 64 and collapsed.sum() >= 20:
        assert (rel[collapsed] < scaling.STARVED).double().mean() >= 0.85
    if (~collapsed).sum() > 10:
        assert rel[~collapsed].median() > scaling.STARVED


def test_a_single_extreme_draw_like_the_handouts_is_ordinary():
    """Note: "a row with a largest weight above 0.99 and an entropy near 0.01 nats is an
    ordinary outcome at d_k = 64" (handout 000 printed 0.9980 and 0.014)."""
    p = widget_rows(64, 8, False)
    entropy = -torch.special.xlogy(p, p).sum(-1)
    assert ((p.max(-1).values >= 0.998) & (entropy <= 0.02)).double().mean() > 0.15


# --- More positions, bigger heads (the whole slider ranges) --------------------------------

def test_large_t_unscaled_fewer_rows_starve_but_rows_stay_peaked():
    """At d_k = 64: "the starved share falls as T grows ... a row that is not starved ... gets
    *more* gradient than an even row over 512 keys ... its largest weight stays above one half
    at every T"; and "Raise the number of positions and watch ... the unscaled starved share
    falls, its largest weight does not come down to the scaled one's"."""
    for a, b in zip(POSITIONS, POSITIONS[1:]):
        assert v(64, b)["starved_unscaled"] <= v(64, a)["starved_unscaled"] + slack(
            v(64, a), v(64, b), "starved_unscaled")
    assert v(64, 512)["starved_unscaled"] < v(64, 2)["starved_unscaled"] / 5
    p = widget_rows(64, 512, False)
    rel = scaling.score_gradient(p) / scaling.even_row_gradient(512)
    assert rel[rel >= scaling.STARVED].median() > 1 and v(64, 512)["grad_unscaled"] > 1
    for t in list(POSITIONS) + [3, 17, 100, 300, 511]:
        assert v(64, t)["max_prob_unscaled"] > 0.5
        assert v(64, t)["max_prob_unscaled"] > v(64, t)["max_prob_scaled"]


@pytest.mark.parametrize("d_k", [d for d in D_KS if d > 1])
def test_more_positions_lower_the_starved_share_at_every_head_size(d_k):
    """The starved share falls with T at every head size (ends of the range, and no rise between
    stops beyond sampling error); at d_k = 1 the two columns are the same numbers."""
    for a, b in zip(POSITIONS, POSITIONS[1:]):
        assert v(d_k, b)["starved_unscaled"] <= v(d_k, a)["starved_unscaled"] + slack(
            v(d_k, a), v(d_k, b), "starved_unscaled")
    assert v(d_k, 512)["starved_unscaled"] < v(d_k, 2)["starved_unscaled"]


@pytest.mark.parametrize("d_k,n_positions", GRID)
def test_scaled_column_over_the_whole_range(d_k, n_positions):
    """"Scaled ... the typical row keeps getting between half and twice an even row's gradient,
    and no more than a few percent of rows are starved at any T" (and at any head size:
    Summary, "keeps the typical row's gradient near an even row's")."""
    x = v(d_k, n_positions)
    assert 0.5 < x["grad_scaled"] < 2
    assert x["starved_scaled"] < 0.05


def test_scaled_largest_weight_falls_as_t_grows():
    for d_k in D_KS:
        maxes = [v(d_k, t)["max_prob_scaled"] for t in POSITIONS]
        assert maxes == sorted(maxes, reverse=True)


@pytest.mark.parametrize("n_positions", POSITIONS)
def test_the_bigger_the_head_the_more_rows_starve_and_saturate(n_positions):
    """"At every number of positions, the bigger the head, the more unscaled rows are starved";
    intro: "the bigger the head, the more of the softmax's rows collapse"; Summary: "the share
    of such rows grows with the head size" (the reading line shows it at 8 positions)."""
    for key in ("starved_unscaled", "saturated_unscaled"):
        for a, b in zip(D_KS, D_KS[1:]):
            assert v(b, n_positions)[key] >= v(a, n_positions)[key] - slack(
                v(a, n_positions), v(b, n_positions), key)
        assert v(1024, n_positions)[key] > v(1, n_positions)[key] + 0.3


def test_head_512_and_head_1024_sentences():
    """"at d_k = 1024 it is X of rows over 2 positions and still Y over 512"; the reading line's
    "A bigger head makes it worse. At head size 512, still over 8 positions, ... the scaled
    column stays where it was at head size 64"."""
    # "still": a large share ("from only N queries over M key sets, the budget's floor")
    assert v(1024, 512)["starved_unscaled"] > 0.3
    assert v(1024, 512)["n_queries"] == MODULE.MIN_QUERIES == min(v(d, t)["n_queries"] for d, t in GRID)
    assert v(1024, 2)["starved_unscaled"] > v(1024, 512)["starved_unscaled"]
    assert v(512)["starved_unscaled"] > v(64)["starved_unscaled"]
    assert v(512)["starved_scaled"] < 0.01 and v(64)["starved_scaled"] < 0.01
    assert abs(v(512)["grad_scaled"] - v(64)["grad_scaled"]) < 0.05


def test_check_yourself_over_512_positions_unscaled_rows_often_beat_an_even_row():
    """Check yourself: "Set positions to 512 at head size 64: the unscaled median score gradient
    ÷ even row's reads above 1 ... The unscaled rows that beat it are peaked on a few keys ...
    over all rows there the values panel's max weight, unscaled, is X, against Y scaled. And a
    bigger head starves them again: at head size 1,024 over 512 positions, Z" (everything the
    answer needs is on the values panel, not in the collapsible)."""
    p = widget_rows(64, 512, False)
    rel = scaling.score_gradient(p) / scaling.even_row_gradient(512)
    assert (rel > 1).double().mean() > 0.5 and v(64, 512)["grad_unscaled"] > 1
    top4 = p.sort(-1, descending=True).values[:, :4].sum(-1)  # 'a few keys': four hold 90%+
    assert top4[rel > 1].median() > 0.9
    assert v(64, 512)["max_prob_unscaled"] > 0.5 > 10 * v(64, 512)["max_prob_scaled"]
    assert v(1024, 512)["starved_unscaled"] > 5 * v(64, 512)["starved_unscaled"]


# --- When e^x overflows

def test_an_overflowing_term_is_nan_the_others_zero_and_a_float16_sum_overflows_alone():
    """"Such a term's weight is ∞/∞, not a number (NaN), and every other weight in its row is a
    finite number over ∞, 0; the row's output, its weights times the values, is then NaN in
    every entry. In float16 the row's sum can also overflow when no single term does (two
    scores of 10.5, each below the limit, already do it), and then every weight is 0." (It said
    one such term "turns its whole row into NaN", and counted only NaN rows.)"""
    limits = v(64, 8)
    one = rb.softmax_written_out(torch.tensor([100.0, 1.0, 2.0]))
    assert torch.isnan(one[0]) and (one[1:] == 0).all()
    assert torch.isnan(one @ torch.randn(3, 4)).all()
    two = torch.tensor([10.5, 10.5, 2.0])
    assert (two < limits["exp_limit_float16"]).all()
    zeros = rb.softmax_written_out(two.half())
    assert torch.isfinite(zeros).all() and (zeros == 0).all()


def test_the_written_out_softmax_overflows_unscaled_and_the_stable_one_never_does():
    """"The share of rows where they [the weights] do not [sum to 1] ... [table at (64, 8),
    (512, 512), (1,024, 512), with the rows and, at 512 positions, the counts] ... Dividing by √d_k
    keeps every row summing to 1 at these settings; subtracting each row's largest score keeps
    every row summing to 1 whatever the scores"."""
    default, wide, widest = v(64, 8), v(512, 512), v(1024, 512)
    assert wide["overflow_rows"] == widest["overflow_rows"] == 256
    for x in (wide, widest):
        for name in ("float16", "float32"):
            assert x[f"overflow_{name}_unscaled_rows"] == pytest.approx(
                x[f"overflow_{name}_unscaled"] * 256, abs=1e-9)
    assert default["overflow_float16_unscaled"] > 0.3        # half the default rows in float16
    assert default["overflow_float32_unscaled"] == 0          # float32 holds them
    assert 0 < wide["overflow_float32_unscaled"] < widest["overflow_float32_unscaled"]
    assert widest["overflow_float32_unscaled"] > 0.5
    for x in (default, wide, widest):
        assert x["overflow_float32_unscaled"] <= x["overflow_float16_unscaled"]
        assert x["overflow_scaled"] == x["overflow_stable"] == 0
        assert x["overflow_scaled"] == max(x["overflow_float16_scaled"], x["overflow_float32_scaled"])


@pytest.mark.parametrize("d_k,n_positions", GRID)
def test_subtracting_the_largest_score_keeps_every_row_finite_at_every_setting(d_k, n_positions):
    """"subtracting each row's largest score keeps every row finite whatever the scores", over
    every stop of both sliders (and a few off them)."""
    assert v(d_k, n_positions)["overflow_stable"] == 0


# --- What the argument assumes, and where models bend it --------------------------------

def test_aligned_keys_grow_like_d_k_and_only_dividing_by_d_k_holds_them():
    """"Divided by √d_k, such scores average 4.0 at head size 64 and 11.3 at head size 512,
    still growing with the head; divided by d_k instead, they average 0.50 at both." (The
    chapter once called the factor "not a hyperparameter" without saying that the argument
    holds for independent queries and keys only.)"""
    small, large = v(64), v(512)
    c = small["aligned_correlation"]
    assert large["aligned_mean_scaled"] / small["aligned_mean_scaled"] == pytest.approx(
        math.sqrt(512 / 64), rel=0.02)                       # like sqrt(d_k) after the division
    assert f"{small['aligned_mean_over_d']:.2f}" == f"{large['aligned_mean_over_d']:.2f}"
    assert small["aligned_mean_over_d"] == pytest.approx(c, abs=0.01)
    for d_k in D_KS:  # at every stop, the divided-by-sqrt(d_k) mean is about c sqrt(d_k)
        assert v(d_k)["aligned_mean_scaled"] == pytest.approx(c * math.sqrt(d_k), rel=0.1, abs=0.05)
    # and the independent pairs of the same chapter do not grow: variance 1 after the division
    assert small["var_scaled"] == pytest.approx(1, abs=0.05)


def test_t5_divides_by_nothing_and_starts_its_queries_root_d_k_smaller():
    """"T5 divides by nothing. It draws its query weights √d_k times smaller than its key
    weights ... so its undivided scores start with variance 1 all the same" (transformers, as
    installed)."""
    from transformers import T5Config, T5EncoderModel

    d_model, d_k = 512, 64
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = T5EncoderModel(T5Config(vocab_size=32, d_model=d_model, d_kv=d_k, num_heads=8,
                                        d_ff=64, num_layers=1))
        x = torch.randn(20_000, d_model)
    attn = model.encoder.block[0].layer[0].SelfAttention
    assert attn.scaling == 1.0
    assert attn.q.weight.std().item() == pytest.approx((d_model * d_k) ** -0.5, rel=0.02)
    assert attn.k.weight.std().item() == pytest.approx(d_model ** -0.5, rel=0.02)
    with torch.no_grad():  # queries and keys of unrelated unit-variance tokens, 8 heads of 64
        q, k = attn.q(x).view(-1, 8, d_k), attn.k(x.roll(1, 0)).view(-1, 8, d_k)
    assert (q * k).sum(-1).var().item() == pytest.approx(1, abs=0.05)


def test_gemma_2_divides_by_the_root_of_query_pre_attn_scalar():
    """"Gemma 2 divides by the square root of a number in its configuration,
    query_pre_attn_scalar. In the 27B model that number is 144, the model's width over its
    number of heads (4,608 / 32), while each head is 128 wide." The 27B's numbers are
    google/gemma_pytorch's get_config_for_27b; the scale is transformers' Gemma2Attention."""
    from transformers import Gemma2Config
    from transformers.models.gemma2.modeling_gemma2 import Gemma2Attention

    width, heads, head_dim, scalar = 4608, 32, 128, 144
    assert scalar == width // heads != head_dim
    small = Gemma2Config(vocab_size=32, hidden_size=256, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=head_dim,
                         query_pre_attn_scalar=scalar)
    scale = Gemma2Attention(small, 0).scaling
    assert scale == pytest.approx(scalar ** -0.5) and scale != pytest.approx(head_dim ** -0.5)


def test_the_argument_assumes_independent_zero_mean_unit_variance_entries():
    """"The variance argument assumes that the entries of q and k are independent, with mean 0
    and variance 1. The variance was dealt with above: at PyTorch's default initialisation it is
    not 1, and the scores' variance is still in proportion to d_k." (It said the argument rests
    on "one assumption", independence, though the chapter had shown unit variance failing.)"""
    x = v(64, 8)
    assert x["linear_init_var"] < 0.5
    assert x["linear_init_score_var"] == pytest.approx(64 * x["linear_init_var"] ** 2, rel=0.2)


def test_gemma_2_caps_its_scores_at_50():
    """"It also caps its scores, passing each through 50 tanh(s / 50) before the softmax
    (attn_logit_softcapping = 50.0 in transformers' Gemma2Config), so none can pass 50"."""
    from transformers import Gemma2Config
    from transformers.models.gemma2 import modeling_gemma2

    assert Gemma2Config().attn_logit_softcapping == 50.0
    q = torch.tensor([[[[40.0]]]])                                # one head, one position
    k = torch.tensor([[[[10.0], [1.0]]]])                         # scores 400 and 40
    module = torch.nn.Module()
    module.num_key_value_groups, module.training, module.head_dim = 1, False, 1
    _, w = modeling_gemma2.eager_attention_forward(module, q, k, torch.zeros(1, 1, 2, 1), None,
                                                   scaling=1.0, softcap=50.0)
    capped = 50 * torch.tanh(torch.tensor([400.0, 40.0]) / 50)
    torch.testing.assert_close(w[0, 0, 0], torch.softmax(capped, -1))
    assert (capped < 50).all()


def test_exercise_2_dividing_by_d_k_shrinks_independent_scores_towards_even_rows():
    """Exercise 2: "The variance becomes d_k / d_k² = 1/d_k: the scores shrink towards 0 and
    the softmax tends to uniform as d_k grows"."""
    g = scaling.make_generator(SEED)
    for d_k in (16, 512):
        unscaled, _ = scaling.dot_product_variance(d_k, 4000, g)
        assert unscaled / d_k ** 2 == pytest.approx(1 / d_k, rel=0.1)
    rows = [torch.softmax(scaling.random_scores(d_k, 8, 4, 64, g) / d_k, -1) for d_k in (16, 512)]
    assert rows[1].max() < rows[0].max() and rows[1].max() < 1 / 8 + 0.05
