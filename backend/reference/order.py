"""Attention on its own is blind to word order; a position signal is what tells it.

Self-attention mixes a sentence's vectors with weights that depend only on which vectors are
present, so shuffling the words shuffles the outputs and nothing else: "dog bites man" and
"man bites dog" give "dog" the same vector. Adding a different vector per position (here the
2017 sinusoids) breaks that symmetry. Vaswani et al. (2017) §3.5.
"""

from __future__ import annotations

import torch

from .attention import scaled_dot_product_attention
from .sinusoidal import sinusoidal_encoding

# Hand-picked, readable word vectors (a trained model learns its own), four numbers each.
# Columns: "animal", "action", "human", and a fourth left at 0 so a position signal shows.
WORD_VECTORS: dict[str, tuple[float, ...]] = {
    "dog":   (2.0, 0.1, 0.4, 0.0),
    "bites": (0.3, 2.2, 0.2, 0.0),
    "man":   (0.5, 0.1, 2.1, 0.0),
}


# --8<-- [start:order]
def embed(words: list[str]) -> torch.Tensor:
    """(T, d) word vectors, one row per word."""
    return torch.tensor([WORD_VECTORS[w] for w in words], dtype=torch.float64)


def add_positions(x: torch.Tensor, strength: float = 1.0) -> torch.Tensor:
    """x + strength * PE: the same word gets a different vector at each position."""
    pe = sinusoidal_encoding(x.size(0), x.size(1)).to(x.dtype)  # (T, d)
    return x + strength * pe


def self_attend(x: torch.Tensor) -> torch.Tensor:
    """Each row rebuilt as a weighted mix of all rows (no learned projections, no mask)."""
    out, _ = scaled_dot_product_attention(x, x, x)  # (T, d)
    return out


def vector_of(word: str, words: list[str], strength: float | None = None) -> torch.Tensor:
    """The attention output at `word`'s position, with no position signal or with one."""
    x = embed(words)
    if strength is not None:
        x = add_positions(x, strength)
    return self_attend(x)[words.index(word)]
# --8<-- [end:order]
