"""Counted costs of h heads vs one head, against hand arithmetic of the matmuls."""

import pytest

from backend.reference.head_cost import HEAD_SHAPES, attention_cost, head_table


@pytest.mark.parametrize("d, h, T", [(512, 8, 16), (64, 4, 10), (96, 3, 7)])
def test_counts_equal_hand_arithmetic(d, h, T):
    c = attention_cost(d, h, T)
    assert c["params"] == 4 * d * d  # W_Q, W_K, W_V, W_O, no biases
    assert c["flops_projections"] == 4 * 2 * T * d * d  # 4 matmuls (T x d) @ (d x d)
    assert c["flops_scores_and_mix"] == 2 * 2 * T * T * d  # Q K^T and W V: h * (2 T^2 d/h) each
    assert c["flops"] == c["flops_projections"] + c["flops_scores_and_mix"]
    assert c["score_elements"] == h * T * T


def test_widths_of_the_published_shapes():
    rows = {r["model"]: r for r in head_table()}
    got = {name: (r["n_heads"], r["d_head"], r["width"]) for name, r in rows.items()}
    assert got == {"Transformer base (2017)": (8, 64, 512), "Llama 2 7B / Llama 3 8B": (32, 128, 4096),
                   "GPT-3 175B": (96, 128, 12288)}
    assert set(rows) == set(HEAD_SHAPES)
    for r in rows.values():
        assert r["params_heads"] == r["params_one_head"] == 4 * r["d_model"] ** 2
        assert r["flops_heads"] == r["flops_one_head"]
        assert r["scores_heads"] == r["n_heads"] * r["scores_one_head"]
