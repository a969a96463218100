"""The T × T table diagram: its grid follows T, its widths follow d and d_k, and every shape it
prints is the shape the book's reference code produces."""

from __future__ import annotations

import math
import re

import pytest
import torch

from backend.diagrams import attention_table as diagram
from backend.reference import river_bank as rb

SUB = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


def labels(**config):
    return [t.translate(SUB) for t in diagram.draw(**config).texts()]


def cells(**config):
    svg = diagram.draw(**config).render("f")
    return len(re.findall(r'<rect [^>]*rx="2"', svg))


@pytest.mark.parametrize("T", [1, 3, 5, 8])
def test_the_table_has_T_rows_of_T_cells(T):
    assert cells(T=T) == T * T
    got = labels(T=T)
    assert [t for t in got if re.fullmatch(r"q\d+", t)] == [f"q{i}" for i in range(1, T + 1)]
    assert [t for t in got if re.fullmatch(r"k\d+", t)] == [f"k{i}" for i in range(1, T + 1)]
    assert f"scores ({T}, {T})" in got


def test_the_hand_example_has_no_projections_and_the_layer_has_three():
    plain, layer = labels(T=3, d=4, learned=False), labels(T=3, d=4, d_k=2)
    assert not {"W_Q", "W_K", "W_V", "Q", "K", "V"} & set(plain)
    assert {"W_Q", "W_K", "W_V", "Q", "K", "V"} <= set(layer)
    assert "X Xᵀ / √4" in plain and "Q Kᵀ / √2" in layer


@pytest.mark.parametrize("T,d,d_k,d_v", [(3, 4, 4, 4), (3, 4, 2, 4), (5, 16, 4, 8)])
def test_every_shape_label_is_the_reference_codes(T, d, d_k, d_v):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(T, d, generator=g, dtype=torch.float64)
    w_q, w_k = (torch.randn(d, d_k, generator=g, dtype=torch.float64) for _ in range(2))
    w_v = torch.randn(d, d_v, generator=g, dtype=torch.float64)
    out, A = rb.self_attention(x, w_q, w_k, w_v)
    got = labels(T=T, d=d, d_k=d_k, d_v=d_v)
    pairs = list(zip(got, got[1:]))
    for name, tensor in (("X", x), ("Q", x @ w_q), ("K", x @ w_k), ("V", x @ w_v), ("A V", out)):
        assert (name, str(tuple(tensor.shape))) in pairs, name
    assert f"scores {tuple(A.shape)}" in got
    torch.testing.assert_close(A.sum(-1), torch.ones(T, dtype=torch.float64))  # "each row"
    expected = torch.softmax((x @ w_q) @ (x @ w_k).T / math.sqrt(d_k), -1)
    torch.testing.assert_close(A, expected)                                   # "/ √d_k"


def test_the_hand_example_is_as_wide_as_its_input():
    words = rb.sentence(rb.WORDS["river"])                  # (3, 4)
    out, A = rb.every_word_in_context(words)
    got = labels(T=3, d=4, learned=False)
    assert ("A X", str(tuple(out.shape))) in list(zip(got, got[1:]))
    assert f"scores {tuple(A.shape)}" in got


def test_the_text_alternative_says_the_numbers():
    c = diagram.draw(T=5, d=16, d_k=4, d_v=8)
    assert "5 × 5" in c.desc and "(5, 4)" in c.desc and "(5, 8)" in c.desc and "(5, 16)" in c.desc
