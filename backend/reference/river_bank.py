"""Self-attention by hand: "the river bank" with four-number word vectors.

Each word is a vector of four hand-picked numbers, read as (water, money, generic, fourth);
the fourth is 0 for every word in the example. "bank" sits halfway between water and money,
and one round of self-attention (score, softmax, mix) pulls it towards whichever sense its
neighbour carries. Here every word uses its own vector as query, key and value; `self_attention`
at the bottom adds the learned projections W_Q, W_K, W_V a real model has.

The numbers are LLM-101's (handout 003, the self-attention walkthrough and exercise 03).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .attention import scaled_dot_product_attention

# --8<-- [start:vectors]
FEATURES = ("water", "money", "generic", "fourth")
WORDS = {                      # (water, money, generic, fourth)
    "the":     (0.3, 0.3, 2.5, 0.0),   # a filler word: almost all "generic"
    "river":   (2.6, 0.0, 0.5, 0.0),   # very "water"
    "savings": (0.0, 2.6, 0.5, 0.0),   # river with water and money swapped
    "bank":    (1.6, 1.6, 0.8, 0.0),   # equally both senses
}


def sentence(neighbour: tuple[float, ...]) -> torch.Tensor:
    """The rows of "the <neighbour> bank": (T=3, d=4), float64 so the hand digits are exact."""
    rows = [WORDS["the"], tuple(neighbour), WORDS["bank"]]
    return torch.tensor(rows, dtype=torch.float64)  # (T, d)
# --8<-- [end:vectors]


@dataclass(frozen=True)
class BankInContext:
    """Every intermediate number of the three steps, for the last word of the sentence."""

    scores: torch.Tensor       # (T,)  bank . word, step 1
    divided: torch.Tensor      # (T,)  scores / sqrt(d), or the scores themselves when unscaled
    exps: torch.Tensor         # (T,)  e^divided, the softmax numerators
    weights: torch.Tensor      # (T,)  exps / exps.sum(), step 2
    before: torch.Tensor       # (d,)  bank's own vector
    after: torch.Tensor        # (d,)  weights @ words, step 3


# --8<-- [start:by_hand]
def bank_in_context(words: torch.Tensor, scaled: bool = True) -> BankInContext:
    """Rebuild the last word of `words` (T, d) as a weighted mix of all T words."""
    bank = words[-1]                                     # (d,)
    scores = words @ bank                                # (T,)  step 1: one dot product per word
    d = words.shape[-1]
    divided = scores / math.sqrt(d) if scaled else scores
    exps = divided.exp()                                 # (T,)  step 2: softmax, written out
    weights = exps / exps.sum()
    after = weights @ words                              # (d,)  step 3: weighted average of rows
    return BankInContext(scores, divided, exps, weights, bank, after)
# --8<-- [end:by_hand]


# --8<-- [start:stable_softmax]
def softmax_written_out(scores: torch.Tensor) -> torch.Tensor:
    """Step 2 as the table computes it: e^x of every score, over their sum (along the last axis)."""
    exps = scores.exp()
    return exps / exps.sum(dim=-1, keepdim=True)


def softmax_stable(scores: torch.Tensor) -> torch.Tensor:
    """The same weights, as code computes them: each row's largest score subtracted first."""
    shifted = scores - scores.amax(dim=-1, keepdim=True)  # the largest becomes 0, the rest < 0
    exps = shifted.exp()                                  # each in (0, 1]: none can overflow
    return exps / exps.sum(dim=-1, keepdim=True)
# --8<-- [end:stable_softmax]


# --8<-- [start:in_matrices]
def every_word_in_context(words: torch.Tensor, scaled: bool = True):
    """All T rows at once: softmax(X X^T / sqrt(d)) X. Returns (new words (T, d), weights (T, T))."""
    scale = None if scaled else 1.0                      # None: the default 1/sqrt(d_k)
    return scaled_dot_product_attention(words, words, words, scale=scale)


def self_attention(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor):
    """What a trained layer does: project first, then attend. x: (T, d); w_q, w_k: (d, d_k); w_v: (d, d_v)."""
    q, k, v = x @ w_q, x @ w_k, x @ w_v                  # (T, d_k), (T, d_k), (T, d_v)
    return scaled_dot_product_attention(q, k, v)         # (T, d_v), weights (T, T)
# --8<-- [end:in_matrices]
