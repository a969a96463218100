"""The KV cache: keep every layer's keys and values so each new token is computed once.

When token T+1 arrives, the keys and values of positions 1..T do not change (the causal mask
guarantees nothing later affects them), so a decode step only projects the new position and
attends over the stored history. The price is memory: 2 * L * T * n_kv * d_head values.
"""

from __future__ import annotations

import torch

from .config import ModelConfig


class KVCache:
    """Per-layer lists of keys and values, grown one step at a time with ``update``."""

    def __init__(self, n_layers: int):
        self.keys: list[torch.Tensor | None] = [None] * n_layers
        self.values: list[torch.Tensor | None] = [None] * n_layers

    # --8<-- [start:kv_update]
    def update(self, layer_idx: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append this step's (B, n_kv, T_new, d_head) keys/values; return the full history."""
        if self.keys[layer_idx] is not None:
            k = torch.cat((self.keys[layer_idx], k), dim=2)  # (B, n_kv, T_past + T_new, d_head)
            v = torch.cat((self.values[layer_idx], v), dim=2)
        self.keys[layer_idx], self.values[layer_idx] = k, v
        return k, v
    # --8<-- [end:kv_update]

    @property
    def seq_len(self) -> int:
        """Positions already stored (read from layer 0; every layer holds the same count)."""
        return 0 if self.keys[0] is None else self.keys[0].size(2)

    def nbytes(self) -> int:
        """Bytes actually held by the stored tensors."""
        tensors = [t for t in self.keys + self.values if t is not None]
        return sum(t.numel() * t.element_size() for t in tensors)


# --8<-- [start:kv_bytes]
def kv_cache_bytes(
    n_layers: int, n_kv_heads: int, d_head: int, seq_len: int, batch: int = 1, dtype: torch.dtype = torch.bfloat16
) -> int:
    """2 (K and V) * L * T * n_kv * d_head values per sequence, times the batch, times bytes per value."""
    bytes_per_value = torch.empty((), dtype=dtype).element_size()
    return 2 * n_layers * seq_len * n_kv_heads * d_head * batch * bytes_per_value
# --8<-- [end:kv_bytes]


def kv_cache_bytes_for(config: ModelConfig, seq_len: int, batch: int = 1, dtype: torch.dtype = torch.bfloat16) -> int:
    """Cache size of a whole model config at context ``seq_len``."""
    return kv_cache_bytes(config.n_layers, config.n_kv_heads, config.d_head, seq_len, batch, dtype)
