"""river_bank.py against independent oracles: PyTorch's fused attention and MultiheadAttention,
and the arithmetic handout 003 prints."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from backend.reference import river_bank as rb

RIVER = rb.sentence(rb.WORDS["river"])
SAVINGS = rb.sentence(rb.WORDS["savings"])


def r(t, nd):
    return [round(x, nd) for x in t.tolist()]


def sdpa_weights(q, k, scale=None):
    """F.scaled_dot_product_attention does not return its weights; with V = I its output is them."""
    eye = torch.eye(k.shape[-2], dtype=k.dtype)
    return F.scaled_dot_product_attention(q, k, eye, scale=scale)


def test_the_handouts_vectors():
    """003: the (0.3, 0.3, 2.5), river (2.6, 0, 0.5), bank (1.6, 1.6, 0.8), a fourth number 0;
    savings is river with water and money swapped."""
    assert RIVER.tolist() == [[0.3, 0.3, 2.5, 0.0], [2.6, 0.0, 0.5, 0.0], [1.6, 1.6, 0.8, 0.0]]
    w, m, g, f = rb.WORDS["river"]
    assert rb.WORDS["savings"] == (m, w, g, f)


def test_step_one_scores_are_the_handouts_dot_products():
    """003: bank·the = 1.6×0.3 + 1.6×0.3 + 0.8×2.5 = 2.96, bank·river = 4.56, bank·bank = 5.76."""
    step = rb.bank_in_context(RIVER)
    hand = [1.6 * 0.3 + 1.6 * 0.3 + 0.8 * 2.5, 1.6 * 2.6 + 1.6 * 0.0 + 0.8 * 0.5,
            1.6 * 1.6 + 1.6 * 1.6 + 0.8 * 0.8]
    assert step.scores.tolist() == pytest.approx(hand, abs=1e-12)
    assert r(step.scores, 2) == [2.96, 4.56, 5.76]


def test_step_two_prints_the_handouts_table():
    """003: ÷2 gives 1.48 / 2.28 / 2.88, e^x 4.39 / 9.78 / 17.81 (sum 31.98), weights 0.137 / 0.306 / 0.557."""
    step = rb.bank_in_context(RIVER)
    assert r(step.divided, 2) == [1.48, 2.28, 2.88]
    assert r(step.exps, 2) == [4.39, 9.78, 17.81]
    assert round(step.exps.sum().item(), 2) == 31.98
    assert r(step.weights, 3) == [0.137, 0.306, 0.557]


def test_step_three_mix_and_the_savings_flip():
    """003: water 1.73, money 0.93 after 'the river'; 0.93 / 1.73 after 'the savings'."""
    river, savings = rb.bank_in_context(RIVER), rb.bank_in_context(SAVINGS)
    assert r(river.before[:2], 2) == [1.6, 1.6]
    assert r(river.after[:2], 2) == [1.73, 0.93]
    assert r(savings.after[:2], 2) == [0.93, 1.73]
    # the hand formula with the handout's rounded weights gives the same two digits
    assert round(0.137 * 0.3 + 0.306 * 2.6 + 0.557 * 1.6, 2) == 1.73
    assert round(0.137 * 0.3 + 0.306 * 0.0 + 0.557 * 1.6, 2) == 0.93


def test_unscaled_weights():
    """003 exercise 03's Try: without / sqrt(4) the weights become 0.045 / 0.221 / 0.734."""
    assert r(rb.bank_in_context(RIVER, scaled=False).weights, 3) == [0.045, 0.221, 0.734]


@pytest.mark.parametrize("scaled", [True, False])
@pytest.mark.parametrize("words", [RIVER, SAVINGS], ids=["river", "savings"])
def test_by_hand_matches_pytorch_fused_attention(words, scaled):
    """The three steps for bank are F.scaled_dot_product_attention with q = bank, k = v = words."""
    step = rb.bank_in_context(words, scaled=scaled)
    scale = None if scaled else 1.0
    q = words[-1:]                                                       # (1, d)
    torch.testing.assert_close(step.after, F.scaled_dot_product_attention(q, words, words, scale=scale)[0])
    torch.testing.assert_close(step.weights, sdpa_weights(q, words, scale=scale)[0])


def test_random_words_by_hand_match_fused_attention():
    """Not only the handout's numbers: any sentence, any width."""
    g = torch.Generator().manual_seed(3)
    for T, d in [(2, 1), (5, 4), (9, 16)]:
        words = torch.randn(T, d, generator=g, dtype=torch.float64)
        step = rb.bank_in_context(words)
        torch.testing.assert_close(step.after, F.scaled_dot_product_attention(words[-1:], words, words)[0])


@pytest.mark.parametrize("scaled", [True, False])
def test_in_matrices_every_row_at_once(scaled):
    """softmax(X X^T / sqrt(d)) X for all three words; bank's row is the by-hand computation."""
    out, w = rb.every_word_in_context(RIVER, scaled=scaled)
    scale = None if scaled else 1.0
    torch.testing.assert_close(out, F.scaled_dot_product_attention(RIVER, RIVER, RIVER, scale=scale))
    torch.testing.assert_close(w, sdpa_weights(RIVER, RIVER, scale=scale))
    torch.testing.assert_close(w[-1], rb.bank_in_context(RIVER, scaled=scaled).weights)
    assert w.shape == (3, 3)


def test_self_attention_with_projections_matches_torch_multihead_attention():
    """Q = X W_Q, K = X W_K, V = X W_V, then attention: nn.MultiheadAttention with one head,
    no biases and an identity output projection computes the same thing."""
    g = torch.Generator().manual_seed(0)
    T, d = 5, 8
    x = torch.randn(T, d, generator=g, dtype=torch.float64)
    w_q, w_k, w_v = (torch.randn(d, d, generator=g, dtype=torch.float64) / math.sqrt(d) for _ in range(3))
    out, weights = rb.self_attention(x, w_q, w_k, w_v)

    mha = torch.nn.MultiheadAttention(d, num_heads=1, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w_q.T, w_k.T, w_v.T]))  # nn.Linear stores W^T
        mha.out_proj.weight.copy_(torch.eye(d, dtype=torch.float64))
    ref_out, ref_w = mha(x[None], x[None], x[None])
    torch.testing.assert_close(out, ref_out[0])
    torch.testing.assert_close(weights, ref_w[0])


def test_identity_projections_are_the_hand_example():
    """The handout's example is self-attention with W_Q = W_K = W_V = I: nothing to learn."""
    eye = torch.eye(4, dtype=torch.float64)
    out, w = rb.self_attention(RIVER, eye, eye, eye)
    torch.testing.assert_close(out[-1], rb.bank_in_context(RIVER).after)
    torch.testing.assert_close(w[-1], rb.bank_in_context(RIVER).weights)
