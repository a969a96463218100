"""The scaling chapter's sentences about what its figure shows as the sliders move, about the
query and W_Q one step further back, and about initialisation, asserted over the values the page
computes (seed at its default). The chapter's other sentences, and how populations are compared
(a slack of 3 standard errors), are in test_scaling.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from backend.device import device
from backend.reference import scaling
from tests.support.scaling_page import (
    D_KS,
    MODULE,
    POSITIONS,
    SEED,
    run,
    slack,
    v,
    widget_rows,
)
from widgets.build import reading

CHAPTER = Path(__file__).resolve().parents[2] / "docs/chapters/scaling.md"


# --- Push on it: what the figure shows as the sliders move ---------------------------------

def _trace(fig, name):
    return next(t for t in fig["data"] if t.get("name") == name)


def test_curves_do_not_move_with_the_head_size_and_the_rings_do():
    """"The two variance curves ... do not move; what moves is the pair of orange rings, the
    measurement at your head size, which sits near the dashed line Var = d_k on the red side
    and near 1 on the blue side" (4.5 standard errors)."""
    curves = None
    for d_k in list(D_KS) + [3, 100, 700, 1000]:
        fig = run(d_k, 8)["figure"]
        now = [_trace(fig, n)["y"] for n in ("Var(q·k)", "Var(q·k/√d_k)", "d_k (theory)")]
        curves = curves or now
        assert now == curves
        ring = next(t for t in fig["data"] if t["mode"] == "markers" and t["showlegend"] is False)
        assert ring["x"] == [d_k, d_k]
        x = v(d_k, 8)
        assert ring["y"] == [x["var_unscaled"], x["var_scaled"]]
        assert abs(x["var_unscaled"] - d_k) < 4.5 * x["var_standard_error"]
        assert abs(x["var_scaled"] - 1) < 4.5 * x["var_standard_error"] / d_k


def test_rank_one_holds_most_unscaled_weight_from_head_32_up():
    """"From head size 32 up, unscaled, more than half of the weight sits in rank 1 at every
    number of positions"."""
    for d_k in [d for d in D_KS if d >= 32] + [33, 700]:
        for t in list(POSITIONS) + [511]:
            assert v(d_k, t)["max_prob_unscaled"] > 0.5
    assert v(16, 512)["max_prob_unscaled"] < 0.5  # and "from 32" is where it starts


@pytest.mark.parametrize("d_k", list(D_KS) + [100])
def test_scaled_weight_lies_mostly_past_rank_16_from_128_positions(d_k):
    """"scaled, the weight spreads out, and from 128 positions on most of it lies beyond the
    sixteen largest keys" (the last bar of the figure)."""
    for t in (128, 200, 256, 512):
        fig = run(d_k, t)["figure"]
        assert _trace(fig, "softmax(q·k/√d_k)")["y"][-1] > 0.5


# --- One step further back: the query and W_Q ----------------------------------------------

def _query_ratios(d_k, n_positions):
    """Per row: |dL/dq| unscaled / scaled, on the widget's own draw."""
    g = scaling.make_generator(SEED, device())
    scaling.dot_product_variance(d_k, MODULE.n_pairs_for(d_k), g, device())
    s, q = MODULE.queries_for(d_k, n_positions)
    q, k = scaling.random_queries_and_keys(d_k, n_positions, s, q, g, device())
    sub = slice(0, -(-MODULE.QUERY_ROWS // s))  # the rows the widget measures at the query
    scores, keys = (q @ k.transpose(-2, -1)).double()[:, sub], k.double()
    c = 1 / math.sqrt(d_k)
    return (scaling.query_gradient(torch.softmax(scores, -1), keys, 1.0)
            / scaling.query_gradient(torch.softmax(scores * c, -1), keys, c)).flatten().cpu()


def test_two_things_pull_against_each_other_at_the_query():
    """"Two things pull against each other: unscaled, a row skips that second factor, but a
    collapsed row has almost no J g for it to multiply." The same weights and keys send the
    query exactly sqrt(d_k) times more at scale 1 than at 1/sqrt(d_k); and, the factor taken out,
    the collapsed unscaled rows' |K^T J| is a tiny fraction of their scaled rows'."""
    s, q = MODULE.queries_for(64, 8)
    g = scaling.make_generator(SEED, device())
    scaling.dot_product_variance(64, MODULE.n_pairs_for(64), g, device())
    qs, k = scaling.random_queries_and_keys(64, 8, s, q, g, device())
    scores, keys = (qs @ k.transpose(-2, -1)).double(), k.double()
    p_u, p_s = torch.softmax(scores, -1), torch.softmax(scores / 8, -1)
    assert torch.allclose(scaling.query_gradient(p_s, keys, 1.0),
                          8 * scaling.query_gradient(p_s, keys, 1 / 8))
    bare = (scaling.query_gradient(p_u, keys, 1.0) / scaling.query_gradient(p_s, keys, 1.0)).cpu()
    collapsed = (p_u.max(-1).values >= 0.99).cpu()
    assert bare[collapsed].median() < 0.1 / 8  # so even the skipped factor of 8 cannot make it up
    assert bare[~collapsed].median() > 0.1 / 8


def test_the_query_gradient_is_on_the_reading_line():
    """A fresh reader found the Summary's query bullet and Push on it's query readout explained
    only inside a "Going further" collapsible. The derivation, the head-size table and its
    sentence are now on the reading line (outside every !!!/??? block); the collapsible keeps
    the code, the split behind the median and the other lengths."""
    line, side = reading.split(CHAPTER.read_text(encoding="utf-8"))
    for needed in ("c\\, K^\\top J g", "pays its \\(1/\\sqrt{d_k}\\) a second time",
                   '"grad_q_ratio", fmt=".2g", d_k=128', '"query_starved", fmt=".0%", d_k=512',
                   "from 128, the typical row sends less too",
                   '"starved_unscaled", fmt=".0%", d_k=512'):
        assert needed in line, needed
    flat = " ".join(line.split())
    assert "watch the median gradient at the query, unscaled ÷ scaled, drop below one half" in flat
    assert "scaling.py:query_gradient" not in line and "The split behind the median" in side


def test_at_the_default_the_typical_unscaled_row_sends_as_much_to_the_query_but_split():
    """"the typical unscaled row sends as much gradient to W_Q as the scaled one, or more. The
    median hides a split: X of the unscaled rows (the collapsed ones) send less than a tenth
    ..., while most of the rest send more"; "at its scores the typical row gets less than a
    quarter"."""
    x = v()
    assert x["grad_q_ratio"] >= 1 and x["grad_unscaled"] < 0.25
    assert x["query_starved"] > 0.2
    r = _query_ratios(64, 8)
    assert r.median().item() == pytest.approx(x["grad_q_ratio"])
    s, q = MODULE.queries_for(64, 8)
    p = widget_rows(64, 8, False).reshape(s, q, 8)[:, :-(-MODULE.QUERY_ROWS // s)].reshape(-1, 8)
    collapsed = p.max(-1).values >= 0.99
    assert (r[collapsed] < scaling.STARVED).double().mean() > 0.5   # the starved ones: collapsed
    assert (r[r < scaling.STARVED].shape[0] and
            collapsed[r < scaling.STARVED].double().mean() > 0.8)
    rest = r[r >= scaling.STARVED]
    assert (rest > 1).double().mean() > 0.5


def test_more_positions_raise_the_query_ratio_at_head_64():
    ratios = [v(64, t)["grad_q_ratio"] for t in POSITIONS]
    assert ratios == sorted(ratios)


def test_a_bigger_head_lowers_the_query_ratio_over_8_positions():
    """"over 8 positions it is at least 1 up to d_k = 64, and from d_k = 128 it is below one
    half and falls with every doubling"; Summary: "from d_k = 128 (over 8 positions) the
    typical row sends less too"."""
    for d in D_KS:
        if d <= 64:
            assert v(d, 8)["grad_q_ratio"] >= 1 - 1e-12
    big = [v(d, 8)["grad_q_ratio"] for d in D_KS if d >= 128]
    assert max(big) < 0.5 and big == sorted(big, reverse=True)


def test_over_512_positions_the_query_ratio_stays_above_one_up_to_512():
    """"Over 512 positions the median is above 1 at every head size from 2 to 512" (at d_k = 1
    the two versions are the same scores: exactly 1)."""
    assert v(1, 512)["grad_q_ratio"] == pytest.approx(1, abs=1e-9)
    for d in D_KS:
        if 2 <= d <= 512:
            assert v(d, 512)["grad_q_ratio"] > 1
    for t in POSITIONS:
        assert v(64, t)["n_query_rows"] == v(64, t)["n_queries"]


def test_summary_head_64_from_8_positions_the_unscaled_query_gets_as_much():
    """Summary: "the typical unscaled row of a 64-wide head over 8 positions gets as much
    gradient as a scaled one" (and at every length above 8 too)."""
    for t in POSITIONS:
        if t >= 8:
            assert v(64, t)["grad_q_ratio"] >= 1


@pytest.mark.parametrize("n_positions", POSITIONS)
def test_the_bigger_the_head_the_more_rows_send_the_query_almost_nothing(n_positions):
    """"a random share of rows sends almost none, a share that grows with the head size" (the
    reading line, over 8 positions), and the collapsible: "at every number of positions"."""
    key = "query_starved"
    for a, b in zip(D_KS, D_KS[1:]):
        assert v(b, n_positions)[key] >= v(a, n_positions)[key] - slack(
            v(a, n_positions), v(b, n_positions), key)
    assert v(1024, n_positions)[key] > v(16, n_positions)[key] + 0.3


def test_at_512_positions_a_share_is_known_to_a_few_points():
    """"at 512 positions a share is known to a few percentage points": the binomial standard
    error of a share near one half is between 1 and 5 points, and the column has the fewest."""
    n = v(64, 512)["n_queries"]
    assert 0.01 < math.sqrt(0.25 / n) < 0.05
    assert n == min(v(64, t)["n_queries"] for t in POSITIONS)


# --- How strong is it at initialisation? -----------------------------------------------------

def _init_draw(var: float, d_k: int, n_positions: int = 8, n_sets: int = 32, per_set: int = 128):
    """Softmax rows of unscaled scores for queries and keys with entries of variance `var`."""
    g = scaling.make_generator(1234 + SEED, "cpu")
    sd = math.sqrt(var)
    q = sd * torch.randn(n_sets, per_set, d_k, generator=g, dtype=torch.float64)
    k = sd * torch.randn(n_sets, n_positions, d_k, generator=g, dtype=torch.float64)
    scores = q @ k.transpose(-2, -1)
    return scores, torch.softmax(scores, -1)


def test_pytorch_default_and_gpt2_initialisations_give_queries_of_variance_about_a_third():
    """"PyTorch's default nn.Linear draws smaller weights: ... queries of variance 0.33, and
    GPT-2's weights of standard deviation 0.02 at width 768 give 0.31"; "scores of variance 7.1,
    about what a unit-variance head of size 7 has"."""
    x = v()
    assert abs(x["linear_init_var"] - 1 / 3) < 0.01   # kaiming_uniform(a=sqrt 5): 1/(3 fan_in)
    assert x["gpt2_init_var"] == pytest.approx(768 * 0.02 ** 2)
    assert x["linear_init_var"] < 1 and x["gpt2_init_var"] < 1          # "smaller"
    assert x["linear_init_score_var"] == pytest.approx(64 * x["linear_init_var"] ** 2)
    assert f"{x['linear_init_score_var']:.0f}" == "7"


def test_at_pytorchs_default_the_collapse_is_milder():
    """"Measured directly on such a head, only about 1% of rows are saturated and 3% starved.
    So the collapse at the very start is milder than the table above." (It once quoted the
    unit-variance head of size 7, 2% and 5%: a stand-in a fresh reader measured as 2x too high.)
    The widget's figures against the test's own draw of the same statistic (another seed)."""
    x64 = v(64)
    assert x64["init_saturated"] < x64["saturated_unscaled"] / 5
    assert x64["init_starved"] < x64["starved_unscaled"] / 5
    _, p = _init_draw(x64["linear_init_var"], 64)
    stats = scaling.weight_stats(p)
    # two draws of 4,096 rows: a share near 2% has a standard error near 0.2 points
    assert abs(stats.saturated - x64["init_saturated"]) < 0.01
    assert abs(stats.starved - x64["init_starved"]) < 0.015


def test_at_any_scale_of_the_weights_a_wider_head_collapses_more_rows():
    """"the score variance is d_k sigma^4, in proportion to d_k whatever sigma is, so at any
    scale of the weights a wider head collapses more rows"."""
    for var in (v()["linear_init_var"], v()["gpt2_init_var"], 1.0):
        s64, p64 = _init_draw(var, 64)
        s256, p256 = _init_draw(var, 256)
        assert s64.var().item() == pytest.approx(64 * var ** 2, rel=0.1)
        assert s256.var().item() == pytest.approx(256 * var ** 2, rel=0.1)
        assert scaling.weight_stats(p256).saturated > scaling.weight_stats(p64).saturated + 0.05


# --- The W_Q table and its sentence ----------------------------------------------------------

def test_query_table_the_share_of_rows_sending_almost_nothing_grows_across_its_columns():
    """The table's columns (16, 64, 128, 512 over 8 positions) and "a random share of rows sends
    almost none, a share that grows with the head size until, from 128, the typical row sends
    less too"."""
    cols = [v(d, 8) for d in (16, 64, 128, 512)]
    shares = [c["query_starved"] for c in cols]
    assert shares == sorted(shares) and shares[0] < 0.1 < shares[1]
    assert [c["grad_q_ratio"] >= 1 for c in cols] == [True, True, False, False]
