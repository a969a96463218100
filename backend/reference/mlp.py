"""The position-wise MLP: the classic two-matrix version and Llama's gated SwiGLU.

Classic (Vaswani et al., 2017): W2 relu(W1 x + b1) + b2.
SwiGLU (Shazeer, 2020, "GLU Variants Improve Transformer"): W_down (silu(W_gate x) * W_up x).
The third matrix is paid for by narrowing d_ff, which is why Llama's d_ff is not 4 d.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .config import ModelConfig


# --8<-- [start:swiglu]
class SwiGLU(nn.Module):
    """Gated MLP: one branch proposes a value, the other (through SiLU) gates it elementwise."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.gate_proj = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.up_proj = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.down_proj = nn.Linear(config.d_ff, config.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B, T, d_model) -> (B, T, d_ff) -> (B, T, d_model)
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
# --8<-- [end:swiglu]


# --8<-- [start:mlp]
class MLP(nn.Module):
    """Two matrices and a ReLU between them; with biases, as in the 2017 paper, by default."""

    def __init__(self, config: ModelConfig, bias: bool = True):
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, config.d_ff, bias=bias)
        self.fc2 = nn.Linear(config.d_ff, config.d_model, bias=bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B, T, d_model) -> (B, T, d_ff) -> (B, T, d_model)
        return self.fc2(self.dropout(F.relu(self.fc1(x))))
# --8<-- [end:mlp]


# --8<-- [start:hidden_size]
def swiglu_hidden_size(d_model: int, multiple_of: int = 256, ffn_dim_multiplier: float | None = None) -> int:
    """Meta's rule for d_ff: 2/3 of 4 d (same parameters as a 4d two-matrix MLP), optionally
    scaled, rounded up to a multiple. Llama-2-7B: 11008; Llama-3-8B (x1.3, multiple 1024): 14336."""
    hidden = int(2 * 4 * d_model / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)
# --8<-- [end:hidden_size]


# --8<-- [start:equal_width]
def gated_width_for_equal_params(d_ff_plain: float) -> float:
    """The SwiGLU width with a two-matrix MLP's parameters: 3 d w = 2 d d_ff, so w = 2/3 d_ff."""
    return 2 * d_ff_plain / 3
# --8<-- [end:equal_width]


# --8<-- [start:worked]
# A SwiGLU small enough to follow by hand: d = 2, d_ff = 3, weights chosen so that each hidden
# unit shows one behaviour of the gate (wide open, nearly shut, exactly shut).
WORKED_X = (1.0, 2.0)
WORKED_GATE = ((2.0, 1.0), (-1.0, -1.0), (0.5, -0.25))   # (d_ff, d): rows are hidden units
WORKED_UP = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))
WORKED_DOWN = ((1.0, 0.0, 1.0), (0.0, 1.0, -1.0))         # (d, d_ff)


def worked_example() -> dict[str, list[float]]:
    """Every intermediate of the book's SwiGLU on WORKED_X, in float64."""
    layer = SwiGLU(ModelConfig(vocab_size=1, d_model=2, n_layers=1, n_heads=1, d_ff=3)).double()
    with torch.no_grad():
        for linear, weights in ((layer.gate_proj, WORKED_GATE), (layer.up_proj, WORKED_UP),
                                (layer.down_proj, WORKED_DOWN)):
            linear.weight.copy_(torch.tensor(weights, dtype=torch.float64))
        x = torch.tensor(WORKED_X, dtype=torch.float64)
        z = layer.gate_proj(x)
        gate, up = F.silu(z), layer.up_proj(x)
        out = layer(x)
    return {"x": list(WORKED_X), "z": z.tolist(), "gate": gate.tolist(), "up": up.tolist(),
            "hidden": (gate * up).tolist(), "out": out.tolist()}
# --8<-- [end:worked]
