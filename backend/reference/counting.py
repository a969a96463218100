"""Parameter counts from the real modules, built on PyTorch's ``meta`` device.

A meta tensor has a shape and a dtype but no storage, so a 70B-parameter DecoderLM costs no
memory to build. Counting its parameters cannot drift from the model, because it *is* the model.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

import torch

from .config import ModelConfig
from .model import DecoderLM


@dataclass(frozen=True)
class ParamCount:
    total: int
    embedding: int
    attention: int
    mlp: int
    norms: int
    lm_head: int  # 0 when tied: the head reuses the embedding matrix
    per_layer: int  # one decoder block (attention + mlp + its two norms)

    def to_dict(self) -> dict:
        return asdict(self)


def _component(name: str) -> str:
    if name.startswith("embed_tokens"):
        return "embedding"
    if name.startswith("lm_head"):
        return "lm_head"
    if ".attn." in name:
        return "attention"
    if ".mlp." in name:
        return "mlp"
    if "norm" in name:
        return "norms"
    raise ValueError(f"parameter {name} belongs to no component")


def build_on_meta(config: ModelConfig) -> DecoderLM:
    with torch.device("meta"):
        return DecoderLM(config)


# --8<-- [start:count]
@functools.lru_cache(maxsize=64)  # configs are frozen (hashable) and counts immutable
def count_parameters(config: ModelConfig) -> ParamCount:
    """Total and per-component parameter counts; a tied LM head is counted once, as the embedding."""
    model = build_on_meta(config)
    parts = dict.fromkeys(("embedding", "attention", "mlp", "norms", "lm_head"), 0)
    for name, p in model.named_parameters():  # named_parameters skips the second name of a tied weight
        parts[_component(name)] += p.numel()
    per_layer = sum(p.numel() for p in model.layers[0].parameters())
    return ParamCount(total=sum(parts.values()), per_layer=per_layer, **parts)
# --8<-- [end:count]


# The finest split the widgets draw: each projection summed over all L layers, the norms together.
MATRICES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@functools.lru_cache(maxsize=64)
def count_by_matrix(config: ModelConfig) -> dict[str, int]:
    """Parameters by matrix, from the same meta-device model: embedding, each attention and MLP
    projection over all layers, the norms, and the LM head (0 when tied). Sums to the total."""
    parts = dict.fromkeys(("embedding", *MATRICES, "norms", "lm_head"), 0)
    for name, p in build_on_meta(config).named_parameters():
        matrix = name.split(".")[-2]  # layers.3.attn.q_proj.weight -> q_proj
        part = matrix if matrix in MATRICES else _component(name)
        parts[part] += p.numel()
    return parts


def count_module(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
