"""What attention costs: the T^2 terms counted, and the two ways of paying them measured.

The explicit ("eager") path is the book's own `attention.scaled_dot_product_attention`, which
materialises the (T, T) scores and weights of every head. The fused path is PyTorch's
`F.scaled_dot_product_attention`, which on CPU and on CUDA dispatches to a FlashAttention-style
kernel (Dao et al., 2022): it walks the keys in blocks with a running softmax, so the T x T
matrix never exists in memory, and returns the same output.
"""

from __future__ import annotations

import math
import statistics
import time
import weakref
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from backend.reference.attention import scaled_dot_product_attention
from backend.reference.context import attention_pairs


# --8<-- [start:counts]
def score_flops(T: int, d_head: int, n_heads: int = 1, batch: int = 1) -> int:
    """FLOPs of the two T x T products, Q K^T and weights @ V (2 per multiply-add): 4 B h T^2 d."""
    return 2 * 2 * batch * n_heads * attention_pairs(T) * d_head


def projection_flops(T: int, d_head: int, n_heads: int = 1, batch: int = 1,
                     n_kv_heads: int | None = None) -> int:
    """FLOPs of the projections Q, K, V and output, d = h * d_head: 8 B T d^2 with full K and V.
    With grouped-query attention (n_kv_heads < n_heads) K and V are d x (n_kv_heads * d_head)."""
    d = n_heads * d_head
    d_kv = (n_kv_heads or n_heads) * d_head
    return 2 * batch * T * (2 * d * d + 2 * d * d_kv)


def crossover_context(d_head: int, n_heads: int, n_kv_heads: int | None = None) -> int:
    """The T at which the scores' 4 T^2 d FLOPs equal the projections': T = d + d_kv
    (2d with full K and V)."""
    return n_heads * d_head + (n_kv_heads or n_heads) * d_head


def mlp_flops(T: int, d_model: int, d_ff: int, batch: int = 1, gated: bool = True) -> int:
    """FLOPs of the MLP: two d x d_ff matrices, three when gated (SwiGLU, as in Llama)."""
    return 2 * batch * T * (3 if gated else 2) * d_model * d_ff


def layer_crossover_context(d_head: int, n_heads: int, n_kv_heads: int, d_ff: int,
                            causal: bool = False) -> int:
    """The T at which the scores' FLOPs equal every other matmul of the layer (the four
    projections and a gated MLP), per token: 4 T d = projections + MLP, so T = that / (4 d).
    A causal kernel that skips the masked half scores about T^2 / 2 pairs: twice the T."""
    d = n_heads * d_head
    per_token = projection_flops(1, d_head, n_heads, 1, n_kv_heads) + mlp_flops(1, d, d_ff)
    return round(per_token / ((2 if causal else 4) * d))


def score_bytes(T: int, n_heads: int = 1, batch: int = 1, dtype=torch.float32) -> int:
    """Bytes of one (B, h, T, T) score matrix in `dtype`."""
    return batch * n_heads * attention_pairs(T) * dtype.itemsize
# --8<-- [end:counts]


# --8<-- [start:working_set]
def eager_bytes_per_score(dtype=torch.float32) -> int:
    """Bytes per query-key pair the explicit path holds at its peak. Float32 (or wider): the
    scores and the weights side by side, 2 x 4 = 8. Narrower inputs are softmaxed in float32:
    the scores, their float32 copy and the float32 weights, 2 + 4 + 4 = 10 for bfloat16."""
    size = dtype.itemsize
    return 2 * size if size >= 4 else size + 4 + 4


def eager_bytes(T: int, n_heads: int = 1, batch: int = 1, dtype=torch.float32) -> int:
    """The explicit path's T x T working set, the term that binds first."""
    return batch * n_heads * attention_pairs(T) * eager_bytes_per_score(dtype)


def largest_context(budget_bytes: int, n_heads: int = 1, batch: int = 1,
                    dtype=torch.float32) -> int:
    """The largest T whose explicit working set fits `budget_bytes`:
    T_max = floor(sqrt(budget / (B h bytes_per_score)))."""
    return math.isqrt(budget_bytes // (batch * n_heads * eager_bytes_per_score(dtype)))
def fused_bytes(T: int, d_head: int, n_heads: int = 1, batch: int = 1,
                dtype=torch.float32) -> int:
    """What the fused kernel creates: its (B, h, T, d_head) output in `dtype` and one float32
    per query (the log of each row's softmax sum, kept for the backward pass)."""
    return batch * n_heads * T * (d_head * dtype.itemsize + 4)
# --8<-- [end:working_set]


# --8<-- [start:paths]
def eager(q, k, v):
    """The book's explicit attention: materialises (B, h, T, T) scores and weights."""
    out, _weights = scaled_dot_product_attention(q, k, v)  # (B, h, T, d_head)
    return out


def fused(q, k, v):
    """PyTorch's fused kernel: the same output, never holding a T x T matrix."""
    return F.scaled_dot_product_attention(q, k, v)  # (B, h, T, d_head)
# --8<-- [end:paths]


# --8<-- [start:blocked]
def blocked(q, k, v, block: int = 128):
    """FlashAttention's idea in plain PyTorch (Dao et al., 2022): walk the keys in blocks,
    keeping per query a running max m, a running sum of exponentials l and a running weighted
    sum of values; when a block raises the max, rescale what came before by exp(m_old - m_new).
    Holds (T, block) scores at a time, never (T, T). Computes in float32."""
    scale = q.size(-1) ** -0.5
    qf = q.float()
    m = torch.full((*q.shape[:-1], 1), float("-inf"), device=q.device)  # (B, h, T, 1)
    l = torch.zeros_like(m)                                              # (B, h, T, 1)
    acc = torch.zeros((*q.shape[:-1], v.size(-1)), device=q.device)      # (B, h, T, d_head)
    for start in range(0, k.size(-2), block):
        kb = k[..., start:start + block, :].float()                     # (B, h, block, d_head)
        vb = v[..., start:start + block, :].float()
        s = qf @ kb.transpose(-2, -1) * scale                            # (B, h, T, block)
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        p = torch.exp(s - m_new)                                         # (B, h, T, block)
        rescale = torch.exp(m - m_new)  # 0 on the first block, where m is -inf
        l = l * rescale + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale + p @ vb
        m = m_new
    return (acc / l).to(q.dtype)                                         # (B, h, T, d_head)
# --8<-- [end:blocked]


def fused_kernel(q, k, v) -> str:
    """The kernel PyTorch actually runs for `fused` on these inputs: the name of the aten op
    the call dispatches to (e.g. _scaled_dot_product_flash_attention_for_cpu on a CPU,
    _scaled_dot_product_efficient_attention or _scaled_dot_product_flash_attention on CUDA),
    or "math" when it falls back to PyTorch's plain bmm-and-softmax path."""
    ops = OpNames()
    with torch.no_grad(), ops:
        fused(q, k, v)
    kernels = [name for name in ops.names if name.startswith("_scaled_dot_product_")]
    return kernels[0] if kernels else "math"


class OpNames(TorchDispatchMode):
    """Records the names of the aten ops that run while the mode is on (e.g. 'bmm')."""

    def __init__(self):
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def random_qkv(batch: int, n_heads: int, T: int, d_head: int, dtype=torch.float32,
               device: str = "cpu", seed: int = 0):
    """Queries, keys and values of shape (B, h, T, d_head), drawn in float32 then cast."""
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, n_heads, T, d_head, generator=g).to(device=device,
                                                                         dtype=dtype)
                 for _ in range(3))


class LiveBytes(TorchDispatchMode):
    """Counts the bytes of the tensors PyTorch operations create while the mode is on, and
    the most of them alive at once. A storage counts from the op that creates it until the
    last tensor viewing it is freed; views and in-place results add nothing. What a kernel
    allocates for itself and frees before returning (a fused kernel's per-thread blocks) is
    not an op's output and is not seen."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self._storages: dict[int, list[int]] = {}  # data_ptr -> [nbytes, tensors viewing it]

    def _release(self, ptr: int) -> None:
        entry = self._storages.get(ptr)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.live -= entry[0]
            del self._storages[ptr]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {a.untyped_storage().data_ptr()
                  for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            ptr = storage.data_ptr()
            entry = self._storages.get(ptr)
            if entry is None:
                if ptr == 0 or ptr in inputs:  # empty, or a view of something made before
                    continue
                entry = self._storages[ptr] = [storage.nbytes(), 0]
                self.live += storage.nbytes()
                self.peak = max(self.peak, self.live)
            entry[1] += 1
            weakref.finalize(t, self._release, ptr)
        return out


# --8<-- [start:peak]
def peak_bytes(fn, *args) -> int:
    """Peak bytes `fn(*args)` allocates beyond what already exists. CUDA: the caching
    allocator's own peak counter. CPU: the most bytes of op outputs alive at once (LiveBytes)."""
    if args[0].device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        with torch.no_grad():
            out = fn(*args)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - before
        del out
        return peak
    with torch.no_grad(), LiveBytes() as counter:
        out = fn(*args)
        del out
    return counter.peak
# --8<-- [end:peak]


@dataclass(frozen=True)
class Runs:
    """Wall-clock times of repeated runs, in ms."""

    ms: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.ms)

    @property
    def fastest(self) -> float:
        return min(self.ms)

    @property
    def slowest(self) -> float:
        return max(self.ms)


# --8<-- [start:timing]
def time_paths(paths, args, repeats: int = 5, warmup: int = 1) -> list[Runs]:
    """Time each of `paths` on the same `args`, alternating runs so every path is sampled over
    the same stretch of time. CUDA: events recorded on the stream around each run, read after
    a synchronise (the launch returns before the kernel finishes). CPU: the clock around a run."""
    on_cuda = args[0].device.type == "cuda"

    def clock(fn) -> float:
        if on_cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args)
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end)
        t0 = time.perf_counter()
        fn(*args)
        return (time.perf_counter() - t0) * 1000

    runs = [[] for _ in paths]
    with torch.no_grad():
        for i in range(warmup + repeats):
            for fn, out in zip(paths, runs):
                ms = clock(fn)
                if i >= warmup:  # the first runs pay for allocation and kernel start-up
                    out.append(ms)
    return [Runs(tuple(r)) for r in runs]
# --8<-- [end:timing]
