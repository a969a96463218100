"""Two heads over "the river bank": a head is a slice of each word's numbers.

The LLM-101 handout's hand-made example. Each word has four numbers (water, money, generic, and
an unused fourth). One big head scores "bank" against every word on all four; split the four
into two heads of two and head A sees only (water, money), head B only (generic, fourth).
With identity projections, splitting into heads is exactly ``split_heads``: no new machinery.
"""

from __future__ import annotations

import torch

from .attention import scaled_dot_product_attention
from .multi_head import split_heads

# --8<-- [start:words]
WORDS = ("the", "river", "bank")
# columns: water, money, generic, (unused)
EMBEDDINGS = torch.tensor([
    [0.3, 0.3, 2.5, 0.0],  # the
    [2.6, 0.0, 0.5, 0.0],  # river
    [1.6, 1.6, 0.8, 0.0],  # bank
])
MONEYED_THE = torch.tensor([0.3, 2.5, 2.5, 0.0])  # give "the" a large money value
# --8<-- [end:words]


# --8<-- [start:bank_weights]
def bank_weights(embeddings: torch.Tensor, n_heads: int) -> torch.Tensor:
    """How much "bank" (the last word) attends to each word, in each of n_heads heads: (h, T).

    No learned projections: every word's query, key and value is its own embedding, so head i
    is nothing but columns [i * d/h, (i + 1) * d/h) of the numbers, scaled by 1/sqrt(d/h).
    """
    x = embeddings[None]  # (B=1, T, d)
    heads = split_heads(x, n_heads)  # (1, h, T, d/h): one slice of the columns per head
    query = heads[:, :, -1:]  # (1, h, 1, d/h): "bank" asks the question
    _, weights = scaled_dot_product_attention(query, heads, heads)  # (1, h, 1, T)
    return weights[0, :, 0]  # (h, T)
# --8<-- [end:bank_weights]


def with_moneyed_the() -> torch.Tensor:
    """The embeddings with "the" replaced by the handout's [0.3, 2.5, 2.5, 0.0]."""
    e = EMBEDDINGS.clone()
    e[0] = MONEYED_THE
    return e


def example() -> dict:
    """The handout's numbers: one big head, heads A and B, and A and B after the "Try"."""
    one = bank_weights(EMBEDDINGS, 1)[0]
    a, b = bank_weights(EMBEDDINGS, 2)
    a_try, b_try = bank_weights(with_moneyed_the(), 2)
    one_try = bank_weights(with_moneyed_the(), 1)[0]

    def named(w):
        return {word: float(x) for word, x in zip(WORDS, w)}

    return {"one_head": named(one), "head_a": named(a), "head_b": named(b),
            "one_head_try": named(one_try), "head_a_try": named(a_try), "head_b_try": named(b_try)}
