"""The self-attention chapter's sentences from "in matrices" on (queries, keys and values, a key
that is not the word, the notes on the sources), asserted over computed values. The chapter's
first sections and its "things to try" are in test_self_attention.py."""

from __future__ import annotations

import math

import pytest
import torch

from backend.compute import river_bank as w
from backend.reference import river_bank as rb

# three words of four numbers: one torch thread (tests/claims/conftest.py)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def run(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def custom(water=2.6, money=0.0, generic=0.5, fourth=0.0, **kw):
    return run(neighbour="custom", water=water, money=money, generic=generic, fourth=fourth, **kw)


RIVER, UNSCALED = run(), run(scaled=False)


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
    """bank's row gives the largest weight any word gives another. The gap between a word's
    score with itself and its best other score decides it: bank (with river), river (with bank),
    "the" (with bank); bank's gap is the smallest, being the shortest vector and sharing the
    largest score between two different words (with river)."""
    A, S, gap = RIVER["matrix"], RIVER["score_matrix"], RIVER["self_margin"]
    off = {(i, j): A[i][j] for i in range(3) for j in range(3) if i != j}
    assert max(off, key=off.get) == (2, 1)
    best_other = [max((j for j in range(3) if j != i), key=lambda j: S[i][j]) for i in range(3)]
    assert best_other == [2, 2, 1]                       # the -> bank, river -> bank, bank -> river
    assert gap == [S[i][i] - S[i][best_other[i]] for i in range(3)]
    assert [format(g, ".2f") for g in gap] == ["3.47", "2.45", "1.20"]
    # the smaller the gap, the more of its row a word gives to its best other word
    order_gap = sorted(range(3), key=lambda i: gap[i])
    order_given = sorted(range(3), key=lambda i: -A[i][best_other[i]])
    assert order_gap == order_given and order_gap[0] == 2
    for i in range(3):  # 'the softmax turns that gap into a ratio of weights'
        assert A[i][i] / A[i][best_other[i]] == pytest.approx(math.exp(gap[i] / 2), rel=1e-12)
    assert min(range(3), key=lambda i: S[i][i]) == 2     # bank: the shortest vector
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
    torch.testing.assert_close(A3, expected, atol=1e-12, rtol=0)


def test_the_spread_of_a_dot_product_grows_as_the_square_root_of_d_k():
    """'d_k is the number of terms summed in each dot product: with independent unit-variance
    entries the standard deviation of such a sum grows as sqrt(d_k)'. With 20,000 samples the
    sample standard deviation is within about 1.5% of the true one (3 standard errors)."""
    g = torch.Generator().manual_seed(0)
    for d_k in (4, 16, 64):
        q = torch.randn(20_000, d_k, generator=g, dtype=torch.float64)
        k = torch.randn(20_000, d_k, generator=g, dtype=torch.float64)
        spread = (q * k).sum(-1).std().item()
        assert spread == pytest.approx(math.sqrt(d_k), rel=0.03)
        assert ((q * k).sum(-1) / math.sqrt(d_k)).std().item() == pytest.approx(1, rel=0.03)


# ---------------------------------------------------------------- a key that is not the word

def test_a_key_that_is_not_the_word():
    """'pick W_K so that every word's key is its generic number alone, moved into the first place'
    ... 'its score for a word is bank's water number times that word's generic number' ...
    '"the", the word with the least water, now gets bank's largest weight' ... 'bank keeps
    0.176 for itself instead of 0.557' ... 'every word's row of weights now puts its largest
    weight on "the"' ... 'the scores are no longer symmetric'."""
    p = RIVER["projected"]
    X = rb.sentence(rb.WORDS["river"])
    for j in range(3):
        assert p["keys"][j] == [X[j, 2].item(), 0.0, 0.0, 0.0]
    for j in range(3):
        assert p["scores"][2][j] == pytest.approx(X[2, 0].item() * X[j, 2].item(), abs=1e-12)
    waters = [row[0] for row in RIVER["vectors"]]
    assert waters.index(min(waters)) == 0                       # "the" has the least water
    generics = [row[2] for row in RIVER["vectors"]]
    assert generics.index(max(generics)) == 0                   # and is the most generic
    assert max(p["weights"]) == p["weights"][0] > RIVER["weights"][0]
    assert p["weights"][2] < RIVER["weights"][2]
    for row in p["matrix"]:
        assert max(row) == row[0]
    S = torch.tensor(p["scores"])
    assert not torch.allclose(S, S.T) and p["scores"][1][0] > 10 * p["scores"][0][1]
    # the values are the words themselves: bank after is its weights times the words
    after = torch.tensor(p["weights"], dtype=torch.float64) @ X
    assert p["bank_after"]["water"] == pytest.approx(after[0].item(), abs=1e-12)
    # and the same with the reference layer, divided by sqrt(d_k) = 2
    expected = torch.softmax(S.double() / 2, dim=-1)
    torch.testing.assert_close(torch.tensor(p["matrix"], dtype=torch.float64), expected)


def test_the_projected_example_does_not_depend_on_the_widgets_settings_beyond_the_words():
    """The example is the chapter's fixed 'the river bank'; the division toggle does not touch it."""
    assert run(scaled=False)["projected"] == RIVER["projected"]


# ---------------------------------------------------------------- notes on the sources

def test_the_sources_note():
    """'The fourth number, 0 for every word, changes no score' and 'True of the vector as a
    whole ..., not of every number in it: bank's water number is slightly higher undivided'."""
    X3 = torch.tensor([w[:3] for w in (rb.WORDS["the"], rb.WORDS["river"], rb.WORDS["bank"])],
                      dtype=torch.float64)
    torch.testing.assert_close((X3 @ X3[-1]).tolist(), RIVER["scores"])
    assert UNSCALED["moved"] < RIVER["moved"]
    assert UNSCALED["water_after"] > RIVER["water_after"]
    assert [round(x, 3) for x in RIVER["weights"]] == [0.137, 0.306, 0.557]
    assert [round(x, 3) for x in UNSCALED["weights"]] == [0.045, 0.221, 0.734]
    assert (round(RIVER["bank_after"]["water"], 2), round(RIVER["bank_after"]["money"], 2)) == (1.73, 0.93)
