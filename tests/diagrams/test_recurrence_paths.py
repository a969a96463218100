"""The chain-against-attention diagram: its shape follows T, and its path lengths are the ones
the book's reference code has (counted in the autograd graph, one tanh per RNN step, one
softmax per attention layer)."""

from __future__ import annotations

import re

import pytest
import torch

from backend.diagrams import recurrence_paths as diagram
from backend.reference import recurrence as r
from backend.reference import river_bank as rb

SUB = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


def labels(T):
    return [t.translate(SUB) for t in diagram.draw(T=T).texts()]


@pytest.mark.parametrize("T", [3, 6, 10])
def test_the_picture_has_T_states_T_inputs_and_T_outputs(T):
    got = labels(T)
    assert [t for t in got if re.fullmatch(r"h\d+", t)] == [f"h{i}" for i in range(1, T + 1)]
    assert [t for t in got if t.startswith("y")] == [f"y{i}" for i in range(1, T + 1)]
    assert sum(t in {f"x{i}" for i in range(1, T + 1)} for t in got) == 2 * T
    svg = diagram.draw(T=T).render("f")
    assert svg.count("<polygon") == T + (T - 1) + T   # inputs up, chain links, attention reads


def test_more_positions_draw_a_longer_chain_but_attention_stays_one_step():
    short, long = labels(4), labels(9)
    assert "h1 to h4: 3 steps in a row" in short and "h1 to h9: 8 steps in a row" in long
    assert "x1 to y4: 1 step" in short and "x1 to y9: 1 step" in long


def longest_chain(fn, node_name):
    """The most `node_name` nodes on any path back from fn's grad_fn to the inputs."""
    memo = {}

    def walk(node):
        if node is None:
            return 0
        if node in memo:
            return memo[node]
        below = max((walk(n) for n, _ in node.next_functions), default=0)
        memo[node] = below + (type(node).__name__ == node_name)
        return memo[node]
    return walk(fn)


@pytest.mark.parametrize("T", [4, 9])
def test_the_labels_path_lengths_are_the_reference_codes(T):
    g = torch.Generator().manual_seed(0)
    X, _, W_h, W_x, b = r.random_problem(T, 8, g)
    X.requires_grad_(True)
    h_T = r.one_after_another(X, W_h, W_x, b)[-1]
    steps_through = longest_chain(h_T.grad_fn, "TanhBackward0")   # h_1 .. h_T: T tanh steps
    assert steps_through - 1 == diagram.chain_hops(T)
    assert f"h1 to h{T}: {steps_through - 1} steps in a row" in labels(T)
    (grad,) = torch.autograd.grad(h_T.sum(), X)
    assert grad[0].abs().sum() > 0                                  # x_1 does reach h_T

    Xa = torch.randn(T, 8, generator=g, dtype=torch.float64, requires_grad=True)
    y_T = rb.every_word_in_context(Xa)[0][-1]
    assert longest_chain(y_T.grad_fn, "SoftmaxBackward0") == 1     # one attention step
    (grad,) = torch.autograd.grad(y_T.sum(), Xa)
    assert (grad.abs().sum(-1) > 0).all()                           # it reads every input


def test_the_text_alternative_says_the_numbers():
    c = diagram.draw(T=7)
    assert "7 states" in c.desc and "after 6 further steps" in c.desc and "one step" in c.desc
