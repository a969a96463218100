"""The handout's two-heads example, against hand arithmetic (NumPy, no book code)."""

import numpy as np
import torch

from backend.reference.two_heads import EMBEDDINGS, bank_weights, example, with_moneyed_the


def softmax_of_bank(E: np.ndarray, cols: slice) -> np.ndarray:
    """The handout's recipe by hand: bank's numbers dotted with each word's, / sqrt(width)."""
    part = E[:, cols]
    scores = part @ part[2] / np.sqrt(part.shape[1])
    w = np.exp(scores)
    return w / w.sum()


def test_one_head_and_two_heads_match_hand_arithmetic():
    E = EMBEDDINGS.numpy().astype(np.float64)
    np.testing.assert_allclose(bank_weights(EMBEDDINGS, 1)[0], softmax_of_bank(E, slice(0, 4)), atol=1e-6)
    a, b = bank_weights(EMBEDDINGS, 2)
    np.testing.assert_allclose(a, softmax_of_bank(E, slice(0, 2)), atol=1e-6)  # water, money
    np.testing.assert_allclose(b, softmax_of_bank(E, slice(2, 4)), atol=1e-6)  # generic, unused


def test_handout_digits():
    ex = example()
    r2 = {k: [round(v, 2) for v in d.values()] for k, d in ex.items()}
    assert r2["one_head"] == [0.14, 0.31, 0.56]
    assert [round(v, 3) for v in ex["one_head"].values()] == [0.137, 0.306, 0.557]
    assert r2["head_a"] == [0.03, 0.33, 0.64]
    assert r2["head_b"] == [0.59, 0.19, 0.22]
    assert r2["head_a_try"][0] == 0.30  # "the" jumps from 0.03 to 0.30
    assert ex["head_b_try"] == ex["head_b"]  # exactly: head B never sees the money column


def test_the_try_changes_only_the_money_column():
    diff = (with_moneyed_the() - EMBEDDINGS).nonzero().tolist()
    assert diff == [[0, 1]]
    assert torch.equal(with_moneyed_the()[0], torch.tensor([0.3, 2.5, 2.5, 0.0]))
