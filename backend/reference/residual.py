"""The residual as an identity path: how much gradient reaches the bottom of a deep stack.

Each layer is the book's pre-norm MLP sublayer, f(x) = SwiGLU(RMSNorm(x)). The same weights
are wired four ways: without a residual, with and without the norm (x <- MLP(x), x <- f(x)),
pre-norm (x <- x + f(x)), and post-norm as
in the 2017 paper (x <- Norm(x + MLP(x))). For y = x + f(x), dy/dx = I + df/dx: the I is a path
that no layer can shrink, so the gradient at layer 0 cannot fade the way a product of
Jacobians does.
"""

from __future__ import annotations

import torch
from torch import nn

from backend.reference.rng import isolated_rng

from .config import ModelConfig
from .mlp import SwiGLU
from .norms import RMSNorm

WIRINGS = ("plain", "plain_norm", "pre_norm", "post_norm")


class Stack(nn.Module):
    """n_layers MLP sublayers with one of three wirings; forward returns every layer's input."""

    def __init__(self, n_layers: int, d_model: int, d_ff: int, wiring: str):
        super().__init__()
        if wiring not in WIRINGS:
            raise ValueError(f"wiring must be one of {WIRINGS}, got {wiring!r}")
        config = ModelConfig(vocab_size=1, d_model=d_model, n_layers=n_layers, n_heads=1, d_ff=d_ff)
        self.wiring = wiring
        self.norms = nn.ModuleList(RMSNorm(d_model) for _ in range(n_layers))
        self.mlps = nn.ModuleList(SwiGLU(config) for _ in range(n_layers))

    # --8<-- [start:wirings]
    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        # x: (N, d_model); returns the input of every layer and the output: n_layers + 1 tensors
        states = [x]
        for norm, mlp in zip(self.norms, self.mlps):
            if self.wiring == "plain":
                x = mlp(x)  # no identity path and no norm: dy/dx = df/dx
            elif self.wiring == "plain_norm":
                x = mlp(norm(x))  # a norm but no identity path
            elif self.wiring == "pre_norm":
                x = x + mlp(norm(x))  # dy/dx = I + df/dx
            else:  # post_norm: the norm sits on the residual path itself
                x = norm(x + mlp(x))
            states.append(x)
        return states
    # --8<-- [end:wirings]


def gradient_by_layer(n_layers: int, d_model: int, d_ff: int, wiring: str, seed: int = 0,
                      n_tokens: int = 64) -> list[float]:
    """||dL/dx_l|| for l = 0 .. n_layers, divided by the norm at the top (so the top is 1).

    L = sum(y * g) for a fixed random g, so the gradient arriving at the output is g itself.
    """
    gen = torch.Generator().manual_seed(seed)
    with isolated_rng(seed):  # the layers' default initialisation
        stack = Stack(n_layers, d_model, d_ff, wiring)
    x = torch.randn(n_tokens, d_model, generator=gen, requires_grad=True)
    states = stack(x)
    for s in states:
        s.retain_grad()
    g = torch.randn(n_tokens, d_model, generator=gen)
    (states[-1] * g).sum().backward()
    top = states[-1].grad.norm()
    return [(s.grad.norm() / top).item() for s in states]


def activation_norms(n_layers: int, d_model: int, d_ff: int, wiring: str, seed: int = 0,
                     n_tokens: int = 64) -> list[float]:
    """||x_l|| for l = 0 .. n_layers: the forward pass of the same stack gradient_by_layer builds."""
    gen = torch.Generator().manual_seed(seed)
    with isolated_rng(seed):
        stack = Stack(n_layers, d_model, d_ff, wiring)
    x = torch.randn(n_tokens, d_model, generator=gen)
    with torch.no_grad():
        return [s.norm().item() for s in stack(x)]
