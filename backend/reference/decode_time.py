"""What one decode step takes: a roofline model from the book's own byte and parameter counts.

A decode step reads every weight once and each user's whole cache, and does about two FLOPs per
weight per user plus the attention over the cache. Neither can go faster than the card's
published memory bandwidth and peak FLOP/s allow, so

    step time >= max(bytes read / bandwidth, FLOPs / peak)

(Williams, Waterman and Patterson, "Roofline", CACM 2009). This is a *lower bound*: real kernels
reach a fraction of either ceiling, and nothing here (launch overhead, sampling, the scheduler,
communication) is counted. Nothing is measured: the bytes come from `serving` (the book's cache
on the meta device and its `DecoderLM`'s parameter count), the ceilings from `serving.CARDS`.
Units: bytes, FLOPs and seconds, as exact fractions until the caller rounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import torch

from .config import ModelConfig
from .counting import count_parameters
from .serving import Card, cache_bytes, weights_bytes


# --8<-- [start:step]
def bytes_per_step(config: ModelConfig, batch: int, context: int) -> tuple[int, int]:
    """(weight bytes, cache bytes) one decode step reads: every weight once for the whole batch,
    and each user's own cache of `context` tokens, for that user only (bfloat16 throughout)."""
    cache, _ = cache_bytes(config.n_layers, config.n_kv_heads, config.d_head, context, batch)
    return weights_bytes(config, torch.bfloat16), cache


def flops_per_step(config: ModelConfig, batch: int, context: int) -> tuple[int, int]:
    """(weight FLOPs, attention FLOPs) of one decode step: a multiply and an add per weight per
    user (2 x params), and scores q.k plus the weighted sum of values over the cache
    (2 + 2 FLOPs per query head, per head width, per cached token, per layer)."""
    params = count_parameters(config).total
    attention = 4 * config.n_layers * config.n_heads * config.d_head * context
    return 2 * params * batch, attention * batch


def step_time(config: ModelConfig, card: Card, batch: int, context: int) -> Fraction:
    """Seconds one decode step takes at the least: the slower of reading and computing."""
    read = sum(bytes_per_step(config, batch, context)) / card.bandwidth
    compute = sum(flops_per_step(config, batch, context)) / card.peak_flops
    return max(read, compute)
# --8<-- [end:step]


# --8<-- [start:formats]
# Bytes a weight takes in each number format: bfloat16 2; int8 1 (its per-row scales, one
# 16-bit number per output row, add under 0.1% and are left out); int4 half a byte plus a 16-bit
# scale for each group of 128 weights (the common group size of GPTQ and AWQ checkpoints), 4.125
# bits. Every weight is counted in the format, the embedding and output layer too.
WEIGHT_FORMATS = {"bfloat16": Fraction(2), "int8": Fraction(1), "int4": Fraction(33, 64)}


def weight_bytes_as(config: ModelConfig, fmt: str) -> int:
    """Bytes of the model's weights stored in `fmt`, rounded up to whole bytes."""
    return math.ceil(count_parameters(config).total * WEIGHT_FORMATS[fmt])
# --8<-- [end:formats]


# --8<-- [start:ridge]
def ridge_point(card: Card) -> Fraction:
    """FLOPs per byte at which the card's two ceilings meet: below it, work is memory-bound."""
    return card.peak_flops / card.bandwidth


def intensity(config: ModelConfig, batch: int, context: int) -> Fraction:
    """FLOPs one decode step does per byte it reads."""
    return Fraction(sum(flops_per_step(config, batch, context)),
                    sum(bytes_per_step(config, batch, context)))
# --8<-- [end:ridge]


def weights_compute_batch(config: ModelConfig, card: Card) -> int:
    """The smallest batch at which multiplying by the weights takes as long as reading them
    (2 x params x B / peak >= weight bytes / bandwidth): about the ridge point, since a
    bfloat16 weight is 2 bytes and costs 2 FLOPs per user."""
    params = count_parameters(config).total
    need = Fraction(weights_bytes(config, torch.bfloat16)) * ridge_point(card) / (2 * params)
    return -(-need.numerator // need.denominator)  # ceil


def compute_bound_batch(config: ModelConfig, card: Card, context: int) -> int | None:
    """The smallest batch whose whole step is compute-bound, or None if no batch is: each user
    adds cache bytes as well as FLOPs, so when a user's own reads take longer than its FLOPs,
    batching never reaches the roof."""
    w, c1 = bytes_per_step(config, 1, context)
    f1 = sum(flops_per_step(config, 1, context))
    per_user = Fraction(f1) / card.peak_flops - Fraction(c1) / card.bandwidth
    if per_user <= 0:
        return None
    need = Fraction(w) / card.bandwidth / per_user
    return max(1, -(-need.numerator // need.denominator))


@dataclass(frozen=True)
class Step:
    """One decode step of `batch` users at `context` tokens on `card`, by the roofline."""

    weight_bytes: int
    cache_bytes: int
    weight_flops: int
    attention_flops: int
    read_s: Fraction  # bytes / bandwidth
    compute_s: Fraction  # FLOPs / peak
    batch: int

    @property
    def seconds(self) -> Fraction:
        return max(self.read_s, self.compute_s)

    @property
    def bound(self) -> str:
        return "memory" if self.read_s >= self.compute_s else "compute"

    @property
    def tokens_per_s_per_user(self) -> Fraction:
        return 1 / self.seconds

    @property
    def tokens_per_s(self) -> Fraction:
        return self.batch / self.seconds

    @property
    def seconds_per_token(self) -> Fraction:
        """Card time per token served: what the card's hourly price is divided by."""
        return self.seconds / self.batch


def step(config: ModelConfig, card: Card, batch: int, context: int) -> Step:
    w, c = bytes_per_step(config, batch, context)
    fw, fa = flops_per_step(config, batch, context)
    return Step(w, c, fw, fa, Fraction(w + c) / card.bandwidth,
                Fraction(fw + fa) / card.peak_flops, batch)


def never_compute_bound_from(config: ModelConfig, card: Card) -> int | None:
    """The shortest context at which no batch makes the step compute-bound: from there on, one
    user's cache takes longer to read than that user's FLOPs take to do. None if that never
    happens (a cache so small, or a card so slow at arithmetic, that it always amortises)."""
    per_token, _ = cache_bytes(config.n_layers, config.n_kv_heads, config.d_head, 1, 1)
    per_token_flops = 4 * config.n_layers * config.n_heads * config.d_head
    gap = Fraction(per_token) / card.bandwidth - Fraction(per_token_flops) / card.peak_flops
    if gap <= 0:
        return None
    need = Fraction(2 * count_parameters(config).total) / card.peak_flops / gap
    return need.numerator // need.denominator + 1


# --8<-- [start:prefill]
def prefill_time(config: ModelConfig, card: Card, prompt: int) -> Fraction:
    """Seconds a prefill of `prompt` tokens for one user takes at the least, the floor under
    the time to the first token: the weights are read once for all the prompt's positions, and
    position i attends over i keys (causal), 4 L h d_head FLOPs for each."""
    params = count_parameters(config).total
    attention = 2 * config.n_layers * config.n_heads * config.d_head * prompt * (prompt + 1)
    flops = 2 * params * prompt + attention
    w = weights_bytes(config, torch.bfloat16)
    written, _ = cache_bytes(config.n_layers, config.n_kv_heads, config.d_head, prompt, 1)
    return max(Fraction(w + written) / card.bandwidth, Fraction(flops) / card.peak_flops)
# --8<-- [end:prefill]


# --8<-- [start:verify]
def verify_step(config: ModelConfig, card: Card, batch: int, context: int, k: int) -> Step:
    """One step that checks k drafted tokens per user (speculative decoding): the k + 1
    positions share one read of the weights and of the user's cache, and do k + 1 tokens' FLOPs.
    (The draft model's own cost is not counted.)"""
    w, c = bytes_per_step(config, batch, context)
    fw, fa = flops_per_step(config, batch, context)
    return Step(w, c, fw * (k + 1), fa * (k + 1), Fraction(w + c) / card.bandwidth,
                Fraction((fw + fa) * (k + 1)) / card.peak_flops, batch)
# --8<-- [end:verify]


def spare_prefill_tokens(config: ModelConfig, card: Card, batch: int, context: int) -> int:
    """Prompt tokens whose FLOPs fit in a memory-bound decode step's idle arithmetic (chunked
    prefill): (read time - compute time) x peak / FLOPs of one token at `context`. 0 if the
    step is compute-bound already."""
    s = step(config, card, batch, context)
    spare = (s.read_s - s.compute_s) * card.peak_flops
    per_token = sum(flops_per_step(config, 1, context))
    return max(0, int(spare / per_token))
