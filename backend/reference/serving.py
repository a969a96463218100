"""Serving many users: how big the KV cache is, and how many users fit beside the weights.

The sizes are not a formula typed here. They are read off the book's own cache
(`kv_cache.KVCache`) after filling it, through its own ``update``, with tensors of the right
shape and dtype on PyTorch's ``meta`` device: shapes and dtypes, no storage, so a million-token
cache for a thousand users costs nothing to "allocate". The weights are the book's own
`DecoderLM`, counted on the meta device by `counting.count_parameters`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import torch

from .config import ModelConfig
from .counting import count_parameters
from .kv_cache import KVCache

# The cache dtypes the book compares. int8 and fp8 hold one byte per value, but a quantised
# cache also needs scales to turn those bytes back into numbers (see `QUANTISED`).
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "int8": torch.int8,
    "fp8": torch.float8_e4m3fn,
}
QUANTISED = frozenset({"int8", "fp8"})
SCALE_DTYPE = torch.float16  # one scale per stored key vector and per value vector (see below)
GB = 10**9  # accelerators are sold in decimal gigabytes; GiB = 2**30 is written GiB
GIB = 2**30


@dataclass(frozen=True)
class Card:
    """One accelerator, by the memory CUDA (or HIP) reports for it, not the number it is sold by.

    `reported_gib` is the total `torch.cuda.mem_get_info()` returns, as PyTorch prints it in an
    out-of-memory message ("GPU 0 has a total capacity of 139.80 GiB"): GiB (2**30 bytes),
    rounded to 0.01 GiB. Usable memory is less still: the CUDA context, activations, the serving
    runtime's own buffers and fragmentation all take part of it, so a count of users made from
    this total is an upper bound.

    `bandwidth_gbs` and `peak_tflops` are the vendor's published figures (memory bandwidth in
    GB/s = 10**9 bytes per second; dense bfloat16 tensor throughput in TFLOP/s, without the
    "with sparsity" doubling; fp16 where the card has no bfloat16), named in `datasheet`. They
    are ceilings no kernel reaches, which is why what is computed from them is a lower bound on
    time. None where no single published figure describes the card (the generic 24 GB card).
    """

    name: str
    sold_gb: int  # the figure it is marketed by, in GB = 10**9 bytes
    reported_gib: str  # what CUDA/HIP reports as total, in GiB, as printed (2 decimals)
    bandwidth_gbs: str | None = None  # published memory bandwidth, GB/s
    peak_tflops: str | None = None  # published dense bf16 (or fp16) tensor peak, TFLOP/s
    datasheet: str = ""  # where the two figures above are printed

    @property
    def memory_bytes(self) -> int:
        return int(Fraction(self.reported_gib) * GIB)

    @property
    def bandwidth(self) -> Fraction | None:
        """Bytes per second."""
        return None if self.bandwidth_gbs is None else Fraction(self.bandwidth_gbs) * 10**9

    @property
    def peak_flops(self) -> Fraction | None:
        """FLOP per second."""
        return None if self.peak_tflops is None else Fraction(self.peak_tflops) * 10**12


# Keyed by the marketed GB (the H100, sold as 80 GB like the A100, is "80-h100"). The reported
# totals are read off public PyTorch out-of-memory logs of each card (the CUDA/HIP total;
# nvidia-smi's "MiB" total is a little larger still, e.g. an H200's 143771MiB). Bandwidth and
# peak are the SXM/OAM versions' datasheet figures; the sparse-only "2x" figures are halved.
CARDS: dict[str, Card] = {
    "16": Card("T4 16 GB", 16, "14.74", "320", "65",
               "NVIDIA T4 Tensor Core GPU datasheet: 320+ GB/s, 65 TFLOPS mixed-precision "
               "FP16/FP32 (the T4 has no bfloat16)"),
    "24": Card("a 24 GB card", 24, "22.06"),
    "40": Card("A100 40 GB", 40, "39.39", "1555", "312",
               "NVIDIA A100 Tensor Core GPU datasheet (40GB SXM): 1,555 GB/s, "
               "BFLOAT16 Tensor Core 312 TFLOPS (624 with sparsity)"),
    "48": Card("L40S 48 GB", 48, "44.39", "864", "362.05",
               "NVIDIA L40S GPU datasheet: 864 GB/s, BF16 Tensor Core 362.05 TFLOPS "
               "(733 with sparsity)"),
    "80": Card("A100 80 GB", 80, "79.15", "2039", "312",
               "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM): 2,039 GB/s, "
               "BFLOAT16 Tensor Core 312 TFLOPS (624 with sparsity)"),
    "80-h100": Card("H100 80 GB", 80, "79.11", "3350", "989.4",
                    "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM): 3.35 TB/s, BF16 Tensor "
                    "Core 1,979 TFLOPS with sparsity; 989.4 dense in NVIDIA's H100 "
                    "architecture whitepaper"),
    "141": Card("H200 141 GB", 141, "139.80", "4800", "989.4",
                "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM): 4.8 TB/s, BF16 Tensor Core "
                "1,979 TFLOPS with sparsity (the H100's compute: 989.4 dense)"),
    "192": Card("MI300X 192 GB", 192, "191.98", "5300", "1307.4",
                "AMD Instinct MI300X data sheet: 5.3 TB/s, 1,307.4 TFLOPS BF16 dense "
                "(2,614.9 with sparsity)"),
}


# --8<-- [start:fill]
def filled_cache(n_layers: int, n_kv: int, d_head: int, seq_len: int, batch: int,
                 dtype: torch.dtype) -> KVCache:
    """The reference KVCache after a prefill of `seq_len` tokens for `batch` users, on meta."""
    cache = KVCache(n_layers)
    for layer in range(n_layers):
        k = torch.empty(batch, n_kv, seq_len, d_head, dtype=dtype, device="meta")  # (B, n_kv, T, d_head)
        v = torch.empty(batch, n_kv, seq_len, d_head, dtype=dtype, device="meta")
        cache.update(layer, k, v)
    return cache
# --8<-- [end:fill]


def scale_cache(n_layers: int, n_kv: int, seq_len: int, batch: int) -> KVCache:
    """The scales a quantised cache keeps beside its bytes: here one float16 per key vector and
    one per value vector, i.e. a (B, n_kv, T, 1) tensor for each, in every layer.

    This is the generous choice (a scale per token and head); a scale per whole tensor would
    cost a few bytes per layer. The reference KVCache stores whatever it is handed, so the
    scales go through the same ``update``.
    """
    return filled_cache(n_layers, n_kv, 1, seq_len, batch, SCALE_DTYPE)


def cache_bytes(n_layers: int, n_kv: int, d_head: int, seq_len: int, batch: int = 1,
                dtype: str = "bfloat16") -> tuple[int, int]:
    """(bytes of the keys and values, bytes of their scales) for `batch` users at `seq_len`.
    The scales are 0 for float dtypes, which need none."""
    values = filled_cache(n_layers, n_kv, d_head, seq_len, batch, DTYPES[dtype]).nbytes()
    scales = scale_cache(n_layers, n_kv, seq_len, batch).nbytes() if dtype in QUANTISED else 0
    return values, scales


def weights_bytes(config: ModelConfig, dtype: torch.dtype = torch.bfloat16) -> int:
    """Bytes of the model's weights: its real parameter count (meta device) times the width of one."""
    per_param = torch.empty((), dtype=dtype, device="meta").element_size()
    return count_parameters(config).total * per_param


@dataclass(frozen=True)
class Fit:
    """How many users at one context length fit on one accelerator beside the weights."""

    memory_bytes: int
    weights_bytes: int
    per_user_bytes: int
    users: int  # 0 when the weights alone do not fit

    @property
    def weights_fit(self) -> bool:
        return self.weights_bytes <= self.memory_bytes

    @property
    def free_bytes(self) -> int:
        return max(0, self.memory_bytes - self.weights_bytes)


# --8<-- [start:users_fit]
def users_fit(memory_bytes: int, weights: int, per_user: int) -> Fit:
    """Whole users whose cache fits in what the weights leave free (nothing else is counted:
    activations, the runtime and fragmentation take more in practice, so this is a ceiling)."""
    free = memory_bytes - weights
    return Fit(memory_bytes, weights, per_user, max(0, free) // per_user)
# --8<-- [end:users_fit]


# --8<-- [start:prefix_hit]
def cached_prefix_tokens(shared: int, block: int = 1, minimum: int = 0,
                         prompt: int | None = None) -> int:
    """How many of a prompt's first `shared` tokens (identical to an earlier request's) a prefix
    cache can serve: whole blocks only (a self-hosted engine keeps keys and values in blocks,
    vLLM's of 16 tokens; OpenAI's cache grows in steps of 128), and nothing at all below the
    provider's minimum cacheable length (at least 1,024 tokens at OpenAI and Anthropic).

    Given the `prompt`'s length, at most its first `prompt - 1` tokens come from the cache: an
    engine must still run the last prompt token through the model to get the logits of the
    first new token (vLLM caps a hit at the prompt's length minus one)."""
    if prompt is not None:
        shared = min(shared, prompt - 1)
    if shared < minimum:
        return 0
    return max(0, shared) // block * block
# --8<-- [end:prefix_hit]
