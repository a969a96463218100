"""How much a model learns from one passage: the training signal of each family, and why a
decoder gets all of it in one pass.

A decoder-only model (GPT) is trained to predict every next token: a passage of n tokens gives
n - 1 targets. An encoder-only model (BERT) hides a fraction of the tokens and predicts only
those: about n * rate targets (BERT: 15%, Devlin et al. 2019 §3.1). Both are written here as the
labels tensor the loss reads, with IGNORE_INDEX where a position contributes nothing, so the
count is the number of positions the loss actually sees.

Teacher forcing plus the causal mask is what lets the decoder's n - 1 predictions come from
one forward pass: `teacher_forced` and `prefix_by_prefix` give the same logits, the second with
one pass per position; `free_running` (the model fed its own guesses) cannot be batched at all.
"""

from __future__ import annotations

import torch
from torch import nn

from backend.reference.masks import causal_mask

IGNORE_INDEX = -100  # a label the loss skips (PyTorch's cross_entropy default)


# --8<-- [start:labels]
def decoder_labels(ids: torch.Tensor) -> torch.Tensor:
    """(n,) -> (n,): position t is trained on token t + 1; the last has nothing after it."""
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[:-1] = ids[1:]
    return labels


def masked_count(n: int, rate: float) -> int:
    """How many of n tokens BERT's data script picks: round(n * rate), at least one. Python's
    round sends exact halves to the even neighbour: 2.5 -> 2, 3.5 -> 4."""
    return max(1, round(n * rate))


def encoder_labels(ids: torch.Tensor, rate: float, generator: torch.Generator) -> torch.Tensor:
    """(n,) -> (n,): only the hidden positions keep their own token as the target."""
    n = ids.numel()
    hidden = torch.randperm(n, generator=generator)[: masked_count(n, rate)]  # (k,)
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[hidden] = ids[hidden]
    return labels


def predictions(labels: torch.Tensor) -> int:
    """The training signals a passage gives: positions whose loss term is not skipped."""
    return int((labels != IGNORE_INDEX).sum())
# --8<-- [end:labels]


# --8<-- [start:counts]
def decoder_predictions(n: int) -> int:
    return max(n - 1, 0)


def encoder_predictions(n: int, rate: float) -> int:
    return masked_count(n, rate) if n > 0 else 0


def expected_ratio(n: int, rate: float) -> float:
    """(n - 1) / (n * rate) = (1 - 1/n) / rate: the ratio before the hidden count is rounded."""
    return (n - 1) / (n * rate)


def whole_ratio(n: int, rate: float) -> float:
    """The ratio a real model gets: whole predictions against whole predictions."""
    return decoder_predictions(n) / encoder_predictions(n, rate)
# --8<-- [end:counts]


def span_targets(n: int, rate: float = 0.15, mean_span: float = 3.0) -> tuple[int, int, int]:
    """T5's span corruption, counted: (hidden tokens, spans, decoder targets). Hidden tokens as
    BERT's round(n * rate); spans = round(hidden / mean_span), as T5's random_spans_noise_mask;
    the decoder writes each span's sentinel and its tokens (the closing end token not counted)."""
    hidden = masked_count(n, rate)
    spans = max(1, round(hidden / mean_span))
    return hidden, spans, hidden + spans


# --8<-- [start:pairs]
def attention_pairs(n_src: int, n_tgt: int, skip_masked: bool) -> dict:
    """Query-key pairs scored by one attention layer of each kind, for a prompt of n_src tokens
    and an answer of n_tgt. Dense kernels score every pair of the score matrix; kernels that skip
    masked blocks (FlashAttention's causal mode) score only the allowed ones."""
    def scored(t_q: int, t_kv: int, causal: bool) -> int:
        if not skip_masked or not causal:
            return t_q * t_kv
        return int(causal_mask(t_q, t_kv).sum())

    n = n_src + n_tgt
    return {"decoder_only": scored(n, n, causal=True),
            "encoder_decoder": scored(n_src, n_src, causal=False)     # encoder self-attention
            + scored(n_tgt, n_tgt, causal=True)                       # decoder self-attention
            + scored(n_tgt, n_src, causal=False)}                     # cross-attention
# --8<-- [end:pairs]


# --8<-- [start:passes]
def sequential_passes(target_len: int, end_token: bool = True) -> int:
    """Forward passes to produce a target one token at a time: one per target token, plus one
    for the end-of-sequence token when the model must also learn where to stop."""
    return target_len + int(end_token)


class CountingModel(nn.Module):
    """Wraps a model whose forward maps (B, T) ids to (B, T, V) logits; counts the calls."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model, self.passes = model, 0

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        self.passes += 1
        return self.model(ids)


def teacher_forced(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """(B, T) true tokens in, (B, T, V) logits out: every position's input is known, one pass."""
    return model(ids)


def prefix_by_prefix(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The same logits, one pass per position: position t sees the true tokens 0..t only."""
    return torch.stack([model(ids[:, : t + 1])[:, -1] for t in range(ids.size(1))], dim=1)


def free_running(model: nn.Module, start: torch.Tensor, steps: int) -> torch.Tensor:
    """No teacher forcing: each input is the model's own previous guess, so pass t cannot
    start before pass t - 1 has finished. (B, T0) -> (B, T0 + steps)."""
    ids = start
    for _ in range(steps):
        guess = model(ids)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        ids = torch.cat([ids, guess], dim=1)
    return ids
# --8<-- [end:passes]
