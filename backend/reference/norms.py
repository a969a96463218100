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
        # x: (..., d_model)
        input_dtype = x.dtype
        x = x.to(torch.float32)  # bf16 keeps ~3 significant digits: too few for a sum of squares
        mean_square = x.pow(2).mean(-1, keepdim=True)  # (..., 1)
        x = x * torch.rsqrt(mean_square + self.eps)
        return self.weight * x.to(input_dtype)
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
