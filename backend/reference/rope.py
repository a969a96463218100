"""Rotary position embeddings (RoPE): rotate q and k by an angle proportional to position.

Su et al., RoFormer (2021). Pair dimension i with i + d_head/2 (the "rotate half" layout of
GPT-NeoX and Hugging Face Llama) and rotate each pair by pos * theta^(-2i/d_head). Then
q_m . k_n depends on m - n only, and norms are unchanged because rotations are orthogonal.
"""

from __future__ import annotations

import torch


# --8<-- [start:rope]
def rope_cos_sin(
    positions: torch.Tensor, d_head: int, theta: float = 10000.0, dtype: torch.dtype = torch.float32,
    precision: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables for the given positions, each (..., d_head); angles computed in `precision`
    (float32, as Hugging Face's Llama does)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, d_head, 2, dtype=precision, device=positions.device) / d_head))
    angles = positions[..., None].to(precision) * inv_freq  # (..., d_head/2): one angle per pair
    angles = torch.cat((angles, angles), dim=-1)  # (..., d_head): pair i and i + d_head/2 share it
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1): a quarter turn of every (i, i + d_head/2) pair."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate queries and keys (never values). q, k: (B, heads, T, d_head); cos, sin: (B, T, d_head)."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # (B, 1, T, d_head): same rotation for every head
    q_rot = q * cos + rotate_half(q) * sin
    k_rot = k * cos + rotate_half(k) * sin
    return q_rot, k_rot
# --8<-- [end:rope]


def rotate(x: torch.Tensor, position: int, theta: float = 10000.0,
           precision: torch.dtype = torch.float32) -> torch.Tensor:
    """Rotate one vector (or a batch of vectors, last axis d_head) as if it sat at ``position``."""
    cos, sin = rope_cos_sin(torch.tensor(position), x.size(-1), theta, x.dtype, precision)
    return x * cos + rotate_half(x) * sin


# --8<-- [start:rope_reach]
def wavelengths(d_head: int, theta: float = 10000.0) -> torch.Tensor:
    """Positions per full turn of each rotating pair, (d_head/2,): fastest 2*pi, slowest ~2*pi*theta."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, d_head, 2, dtype=torch.float64) / d_head))
    return 2 * torch.pi / inv_freq


def relative_similarity(distances: torch.Tensor, d_head: int, theta: float = 10000.0) -> torch.Tensor:
    """How much a key still looks like the query it equals, `distances` positions apart.

    For q = k with equal energy in every pair, q_m . k_n / |q|^2 = mean_i cos((m - n) w_i).
    1 at distance 0; it oscillates and sinks as the fast pairs wrap around, and only pairs whose
    wavelength exceeds the distance still agree. A larger theta slows every pair down.
    """
    cos, _ = rope_cos_sin(distances.to(torch.float64), d_head, theta, torch.float64)  # (D, d_head)
    return cos.mean(dim=-1)  # (D,)
# --8<-- [end:rope_reach]
