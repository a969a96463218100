"""The original Transformer's fixed sinusoidal position encoding (Vaswani et al., 2017, §3.5).

PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).
Sine and cosine are interleaved, so each (2i, 2i+1) pair is a point on a circle that turns by a
fixed angle per step: moving k positions is the same rotation wherever you start.
"""

from __future__ import annotations

import torch


# --8<-- [start:sinusoidal]
def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Returns (n_positions, d_model); added to the token embeddings, not learned."""
    return sinusoidal_at(torch.arange(n_positions), d_model, base)


def sinusoidal_at(positions: torch.Tensor, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The rows of the table for the given positions only, (len(positions), d_model)."""
    if d_model % 2:
        raise ValueError(f"d_model must be even for sine/cosine pairs, got {d_model}")
    pos = positions.to(torch.float64)[:, None]  # (T, 1)
    i = torch.arange(d_model // 2, dtype=torch.float64)[None, :]  # (1, d/2)
    angles = pos / base ** (2 * i / d_model)  # (T, d/2): slower waves for larger i
    pe = torch.stack((angles.sin(), angles.cos()), dim=-1)  # (T, d/2, 2)
    return pe.flatten(-2).float()  # (T, d): sin, cos, sin, cos, ...
# --8<-- [end:sinusoidal]
