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


# The memory a widget may plan against on the CPU: a fixed, stated budget (the host is shared,
# and what is free right now says little about what is free a second later).
CPU_MEMORY_BYTES = 512 * 2 ** 20


def memory_bytes() -> int:
    """Device memory a widget may plan against: on a GPU the bytes free right now
    (`torch.cuda.mem_get_info`), on the CPU the fixed `CPU_MEMORY_BYTES`."""
    dev = device()
    if dev.startswith("cuda"):
        free, _total = torch.cuda.mem_get_info(torch.device(dev))
        return int(free)
    return CPU_MEMORY_BYTES
