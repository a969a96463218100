"""Every qualitative sentence of docs/chapters/self-attention.md, asserted over computed values:
at the settings the text names, and across the sliders where it invites the reader to move them."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from backend.reference import river_bank as rb
from backend.widgets import river_bank as w

@pytest.fixture(autouse=True)
def _one_thread():
    """Three words of four numbers: torch's thread pool only adds overhead on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


GRID = (-3.0, -1.5, -0.2, 0.0, 0.7, 1.6, 2.6, 3.0)   # across each custom slider's range


def run(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def custom(water=2.6, money=0.0, generic=0.5, fourth=0.0, **kw):
    return run(neighbour="custom", water=water, money=money, generic=generic, fourth=fourth, **kw)


RIVER, SAVINGS, UNSCALED = run(), run(neighbour="savings"), run(scaled=False)


def custom_grid():
    for water, money, generic in itertools.product(GRID, GRID, (-3.0, 0.0, 0.5, 3.0)):
        yield water, money, generic


# ---------------------------------------------------------------- intro and the three words

def test_bank_after_depends_on_its_neighbour():
    """'the vector for "bank" after the step depends on what stood next to it'"""
    assert RIVER["bank_after_vector"] != SAVINGS["bank_after_vector"]
    assert RIVER["vectors"][2] == SAVINGS["vectors"][2]  # same bank going in


def test_fourth_number_is_zero_and_bank_starts_between_the_senses():
    """'a fourth number that is 0 for every word here'; 'bank starts exactly between the two
    senses'; 'the river should pull it towards water'."""
    assert all(rb.WORDS[word][3] == 0 for word in rb.WORDS)
    assert RIVER["bank_before"]["water"] == RIVER["bank_before"]["money"]
    assert RIVER["leans"] == "water" and RIVER["water_after"] > RIVER["money_after"]


# ---------------------------------------------------------------- step 1

def test_river_outscores_the_through_the_water_position():
    """'River outscores "the" because the two share the water position ...: that one product
    alone is larger than bank's whole score with "the", which shares only the generic position
    with bank. bank's highest score is with itself.'"""
    the, river, bank = RIVER["vectors"]
    s_the, s_river, s_bank = RIVER["scores"]
    assert s_river > s_the
    assert bank[0] * river[0] > s_the
    the_terms = [b * t for b, t in zip(bank, the)]
    assert max(the_terms) == the_terms[2]  # generic is the only sizeable overlap
    assert the_terms[2] > the_terms[0] + the_terms[1]
    assert s_bank == max(RIVER["scores"])


# ---------------------------------------------------------------- steps 2 and 3, the flip

def test_weights_positive_and_sum_to_one_and_bank_leans_water():
    assert all(p > 0 for p in RIVER["weights"]) and math.isclose(sum(RIVER["weights"]), 1)
    assert RIVER["leans"] == "water"


def test_the_savings_flip_is_exact():
    """'The flip is exact, not approximate ... savings gets the same weight ... the whole
    weighted average is the river result with its first two numbers swapped.'
    Widget: 'The weights do not move at all, and water and money trade places.'"""
    assert SAVINGS["weights"] == RIVER["weights"]
    assert SAVINGS["scores"][1] == RIVER["scores"][1]
    r, s = RIVER["bank_after_vector"], SAVINGS["bank_after_vector"]
    assert (s[0], s[1], s[2], s[3]) == (r[1], r[0], r[2], r[3])
    assert SAVINGS["leans"] == "money"


@pytest.mark.parametrize("scaled", [True, False])
def test_swapping_water_and_money_swaps_the_result_at_every_custom_setting(scaled):
    """The reason given for the flip holds for any neighbour, not only river."""
    for water, money, generic in custom_grid():
        a = custom(water, money, generic, scaled=scaled)
        b = custom(money, water, generic, scaled=scaled)
        # exact in real arithmetic; in float64 the sums are added in another order
        assert a["weights"] == pytest.approx(b["weights"], abs=1e-12)
        assert a["water_after"] == pytest.approx(b["money_after"], abs=1e-12)
        assert a["money_after"] == pytest.approx(b["water_after"], abs=1e-12)


# ---------------------------------------------------------------- "things to try"

def test_a_neighbour_with_banks_own_numbers_ties():
    """'The custom word now scores as high as bank itself, the two share the largest weight
    ..., and bank ends on the diagonal. A neighbour with no preference cannot give bank one.'"""
    v = custom(1.6, 1.6, 0.8, 0.0)
    assert v["scores"][1] == v["scores"][2]
    assert v["weights"][1] == v["weights"][2] == max(v["weights"])
    assert v["water_after"] == v["money_after"] and v["leans"].startswith("neither")


@pytest.mark.parametrize("scaled", [True, False])
def test_any_neighbour_without_preference_leaves_bank_on_the_diagonal(scaled):
    for water, generic in itertools.product(GRID, (-3.0, 0.0, 0.5, 3.0)):
        v = custom(water, water, generic, scaled=scaled)
        assert v["water_after"] == v["money_after"]


def test_raising_water_with_money_zero():
    """'Set the custom word's money to 0 and raise its water from 0 to 3. The lean towards
    water grows the whole way, from none at water 0 ... Go below 0 and bank tilts, only
    slightly, towards money: a word that is "anti-water" takes a little weight.'"""
    ups = [custom(x / 10, 0.0) for x in range(0, 31)]
    leans = [v["lean"] for v in ups]
    assert leans[0] == 0.0
    assert all(b > a for a, b in zip(leans, leans[1:]))
    assert all(b["weight_neighbour"] > a["weight_neighbour"] for a, b in zip(ups, ups[1:]))
    at_zero = ups[0]
    for x in range(-30, 0):
        v = custom(x / 10, 0.0)
        assert v["lean"] < 0 and v["leans"] == "money"
        assert abs(v["lean"]) < 0.1 * RIVER["lean"]            # only slightly
        assert v["weight_neighbour"] < at_zero["weight_neighbour"]  # a little weight


def test_the_fourth_number_is_handed_over_but_not_scored():
    """'Its score does not change, because bank's fourth number is 0, yet bank picks up a
    fourth number of its own from the mix.'"""
    base = custom(fourth=0.0)
    for f in (0.5, 1.0, 3.0):
        v = custom(fourth=f)
        assert v["scores"] == base["scores"] and v["weights"] == base["weights"]
        assert v["bank_after_vector"][3] > 0
    assert custom(fourth=-2.0)["bank_after_vector"][3] < 0


def _inside_triangle(p, a, b, c, eps=1e-9):
    def cross(o, u, v):
        return (u[0] - o[0]) * (v[1] - o[1]) - (u[1] - o[1]) * (v[0] - o[0])
    area = cross(a, b, c)
    if abs(area) < 1e-12:  # the three words on a line: bank lies between the extremes
        return all(min(q[i] for q in (a, b, c)) - eps <= p[i] <= max(q[i] for q in (a, b, c)) + eps
                   for i in range(2))
    s = [cross(a, b, p) / area, cross(b, c, p) / area, cross(c, a, p) / area]
    return all(x >= -eps for x in s)


@pytest.mark.parametrize("scaled", [True, False])
def test_weights_positive_and_bank_inside_the_triangle_at_every_setting(scaled):
    """'Whatever numbers you type, the three weights stay positive and add up to 1, and bank
    after ... always lands inside the triangle the three words make.'"""
    for water, money, generic in custom_grid():
        v = custom(water, money, generic, scaled=scaled)
        assert all(p > 0 for p in v["weights"]) and math.isclose(sum(v["weights"]), 1)
        a, b, c = (row[:2] for row in v["vectors"])
        assert _inside_triangle((v["water_after"], v["money_after"]), a, b, c)


# ---------------------------------------------------------------- without the division

def test_without_the_division_bank_copies_more_of_itself():
    """'Dividing every score by 2 halves the gaps ... the largest score takes a bigger share:
    here bank itself ... bank copies more of itself and mixes less. It moves ... less ..., and
    its lean towards water shrinks.'"""
    assert RIVER["divided"] == [s / 2 for s in RIVER["scores"]]
    assert RIVER["scores"].index(max(RIVER["scores"])) == 2
    assert UNSCALED["weight_bank"] > RIVER["weight_bank"]
    assert UNSCALED["moved"] < RIVER["moved"]
    assert 0 < UNSCALED["lean"] < RIVER["lean"]


def test_one_number_goes_the_other_way():
    """'bank's water number is slightly higher unscaled. The weight bank takes back for itself
    comes from "the" as much as from river, and "the" has far less water than bank, so giving it
    less weight raises the average water by more than giving river less lowers it.'"""
    assert UNSCALED["water_after"] > RIVER["water_after"]
    assert UNSCALED["water_after"] - RIVER["water_after"] < 0.1  # slightly
    d = [u - s for u, s in zip(UNSCALED["weights"], RIVER["weights"])]
    assert d[0] < 0 and d[1] < 0 and d[2] > 0
    assert math.isclose(d[0], d[1], rel_tol=0.15)  # as much from "the" as from river
    water = [row[0] for row in RIVER["vectors"]]
    from_the = d[0] * (water[0] - water[2])       # > 0: less of a low-water word
    from_river = d[1] * (water[1] - water[2])     # < 0: less of a high-water word
    assert from_the > -from_river > 0
    assert math.isclose(from_the + from_river, UNSCALED["water_after"] - RIVER["water_after"])


@pytest.mark.parametrize("name", ["river", "savings"])
def test_switching_the_division_off_never_lowers_the_top_words_weight(name):
    """'at every setting of the widget, switching the division off gives the highest-scoring
    word at least as much weight as before'"""
    settings = [run(neighbour=name, scaled=s) for s in (True, False)]
    settings_custom = [(custom(x, m, g, scaled=True), custom(x, m, g, scaled=False))
                       for x, m, g in custom_grid()]
    for on, off in [tuple(settings)] + settings_custom:
        top = on["scores"].index(max(on["scores"]))
        assert off["weights"][top] >= on["weights"][top] - 1e-12


# ---------------------------------------------------------------- in matrices

def test_the_weight_matrix():
    """'The last row is the hand computation. Each word's largest weight is on itself, because
    with these vectors each word's highest score is its own. Although the scores are symmetric,
    the weights are not.' Check yourself: each row sums to 1; a column 'need not sum to
    anything in particular'."""
    A, S = torch.tensor(RIVER["matrix"]), torch.tensor(RIVER["score_matrix"])
    torch.testing.assert_close(A[2], torch.tensor(RIVER["weights"]), atol=1e-7, rtol=0)
    assert all(int(A[i].argmax()) == i for i in range(3))
    assert all(int(S[i].argmax()) == i for i in range(3))
    torch.testing.assert_close(S, S.T, atol=0, rtol=0)
    assert RIVER["matrix"][0][1] > RIVER["matrix"][1][0]  # the->river 0.086 vs river->the 0.060
    torch.testing.assert_close(A.sum(-1), torch.ones(3, dtype=A.dtype))
    assert not torch.allclose(A.sum(0), torch.ones(3, dtype=A.dtype))


def test_exercise_2_answer():
    """bank's row gives the largest weight any word gives another; bank has the smallest score
    with itself and the largest score with another word (river)."""
    A, S = RIVER["matrix"], RIVER["score_matrix"]
    off = {(i, j): A[i][j] for i in range(3) for j in range(3) if i != j}
    assert max(off, key=off.get) == (2, 1)
    assert min(range(3), key=lambda i: S[i][i]) == 2
    off_s = {(i, j): S[i][j] for i in range(3) for j in range(i + 1, 3)}
    assert max(off_s, key=off_s.get) == (1, 2)


def test_exercise_3_answer():
    """(0, 0, 0.5, 0): 'It leans neither way ... It still moves: both senses shrink.'"""
    v = custom(0.0, 0.0, 0.5, 0.0)
    assert v["leans"].startswith("neither")
    assert v["water_after"] < v["bank_before"]["water"] and v["money_after"] < v["bank_before"]["money"]


# ---------------------------------------------------------------- queries, keys and values

def test_projections():
    """'The hand example is the special case W_Q = W_K = W_V = I.' 'With separate W_Q and W_K,
    the score of i for j ... need not equal' that of j for i. Exercise 4: the weight matrix is
    not symmetric in either case. The divisor is sqrt(d_k), the key length."""
    X = rb.sentence(rb.WORDS["river"])
    eye = torch.eye(4, dtype=torch.float64)
    out, A = rb.self_attention(X, eye, eye, eye)
    torch.testing.assert_close(A, torch.tensor(RIVER["matrix"], dtype=torch.float64))
    g = torch.Generator().manual_seed(1)
    w_q, w_k, w_v = (torch.randn(4, 4, generator=g, dtype=torch.float64) for _ in range(3))
    S = (X @ w_q) @ (X @ w_k).T
    assert not torch.allclose(S, S.T)
    _, A2 = rb.self_attention(X, w_q, w_k, w_v)
    assert not torch.allclose(A2, A2.T) and not torch.allclose(A, A.T)
    # d_k = 2 while d = 4: the divisor follows the key length
    w_q2, w_k2 = w_q[:, :2], w_k[:, :2]
    _, A3 = rb.self_attention(X, w_q2, w_k2, w_v)
    expected = torch.softmax((X @ w_q2) @ (X @ w_k2).T / math.sqrt(2), dim=-1)
    torch.testing.assert_close(A3, expected, atol=1e-6, rtol=0)
