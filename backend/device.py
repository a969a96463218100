"""Which torch device the widgets compute on: a GPU when the host has one.

`BOOK_DEVICE` overrides the choice (e.g. `cpu` on a GPU host shared with training jobs).
"""

from __future__ import annotations

import os
from functools import lru_cache

import torch


@lru_cache(maxsize=1)
def device() -> str:
    wanted = os.environ.get("BOOK_DEVICE", "").strip().lower()
    if wanted:
        if wanted.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"BOOK_DEVICE={wanted!r} but this host has no CUDA device")
        return wanted
    return "cuda" if torch.cuda.is_available() else "cpu"


def describe() -> str:
    """A human name for the device, shown next to every measured number."""
    dev = device()
    if dev.startswith("cuda"):
        return f"{dev} ({torch.cuda.get_device_name(torch.device(dev))})"
    n = torch.get_num_threads()
    return f"cpu ({n} thread{'s' if n != 1 else ''})"


# What one request may ask of each kind of device: the longest context a measured attention
# costs, the largest model (parameters) a widget builds. A GPU with less memory than the
# reference 16 GiB gets proportionally less. Widgets read `limits()`; /api/health shows it,
# and beside it what any widget module's own `device_limits()` returns (e.g. a widget whose
# slider maximum follows `limits()["max_context_tokens"]` reports the maximum it applies).
LIMITS = {
    "cpu": {"max_context_tokens": 4096, "max_model_params": 200_000_000},
    "cuda": {"max_context_tokens": 32768, "max_model_params": 2_000_000_000},
}
_GIB = 1 << 30


def kind() -> str:
    """"cpu" or "cuda": the family of `device()`."""
    return "cuda" if device().startswith("cuda") else "cpu"


@lru_cache(maxsize=1)
def limits() -> dict:
    base = dict(LIMITS[kind()])
    if kind() == "cuda":
        total = torch.cuda.get_device_properties(torch.device(device())).total_memory
        share = min(1.0, total / (16 * _GIB))
        base = {key: int(value * share) for key, value in base.items()}
    return base


def facts() -> dict:
    """The device, for /api/health: kind, GPU name and memory, CUDA version (None on CPU)."""
    dev = device()
    out = {"kind": kind(), "name": None, "memory_total_bytes": None, "memory_free_bytes": None,
           "cuda_version": None, "threads": torch.get_num_threads()}
    if kind() == "cuda":
        index = torch.device(dev)
        free, total = torch.cuda.mem_get_info(index)
        out.update(name=torch.cuda.get_device_name(index), memory_total_bytes=int(total),
                   memory_free_bytes=int(free), cuda_version=torch.version.cuda)
    return out
