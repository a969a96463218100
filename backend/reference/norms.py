"""RMSNorm and LayerNorm, side by side.

LayerNorm (Ba et al., 2016) centres and rescales, then applies a gain and a bias. RMSNorm
(Zhang & Sennrich, 2019) only rescales to unit root-mean-square and has a gain but no bias;
Llama uses it before every sublayer.
"""

from __future__ import annotations

import torch
from torch import nn


# --8<-- [start:rmsnorm]
class RMSNorm(nn.Module):
    """x / rms(x) * g. The reduction runs in float32 even when the model runs in bf16/fp16."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # the gain g

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (..., d_model) in bf16, fp16 or fp32; the output keeps x's dtype
        wide = x.float()  # bf16's 8 bits round the scale factor coarsely; a bf16 running sum stalls
        inv_rms = (wide * wide).mean(-1, keepdim=True).add(self.eps).rsqrt()  # (..., 1), fp32
        unit = wide * inv_rms  # (..., d_model): RMS 1, still fp32
        return self.weight * unit.to(x.dtype)  # round once, then the gain
# --8<-- [end:rmsnorm]


# --8<-- [start:layernorm]
class LayerNorm(nn.Module):
    """(x - mean) / std * g + b, over the last axis (biased variance, as in the paper and PyTorch)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)  # (..., 1)
        var = (x - mean).pow(2).mean(-1, keepdim=True)  # (..., 1), divides by d, not d - 1
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias
# --8<-- [end:layernorm]


# --8<-- [start:no_upcast]
def rmsnorm_no_upcast(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """RMSNorm with every step in x's own dtype: the squares, their mean and the product."""
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))
# --8<-- [end:no_upcast]


def rmsnorm_rounded_at(x: torch.Tensor, dtype: torch.dtype, steps: tuple[str, ...],
                       eps: float = 1e-5) -> torch.Tensor:
    """RMSNorm in float64 except that the named steps are rounded to dtype, to see which costs what.

    steps, in order of the computation: "squares" (each x_i^2), "mean_square" (the row's mean of
    squares), "rsqrt" (the per-row factor 1/sqrt(mean square + eps)), "product" (x times it).
    """
    r = lambda t, step: t.to(dtype).double() if step in steps else t  # noqa: E731
    x = x.double()  # (N, d)
    squares = r(x * x, "squares")
    mean_square = r(squares.mean(-1, keepdim=True), "mean_square")  # (N, 1)
    inv_rms = r(torch.rsqrt(mean_square + eps), "rsqrt")  # (N, 1)
    return r(x * inv_rms, "product")


def rmsnorm_float64(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """The exact answer to compare against: the same formula in float64, gain 1."""
    x = x.to(torch.float64)
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


# --8<-- [start:running_sum]
def running_mean_square(row: torch.Tensor, dtype: torch.dtype) -> float:
    """mean(x^2) with a running sum *held in dtype*, one element at a time, as a naive loop would.

    PyTorch's own reduction kernels keep a float32 accumulator even for bf16 inputs; this
    loop does not, so it shows what "summing 4096 bf16 numbers" costs when nobody upcasts.
    """
    total = torch.zeros((), dtype=dtype)
    for v in row.to(dtype).pow(2):  # row: (d,)
        total = total + v  # rounded to dtype after every add
    return total.item() / row.numel()
# --8<-- [end:running_sum]
