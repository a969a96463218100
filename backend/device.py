"""Which torch device the widgets compute on: a GPU when the host has one.

`BOOK_DEVICE` (see `backend.settings`) overrides the choice (e.g. `cpu` on a GPU host shared
with training jobs).
"""

from __future__ import annotations

from functools import lru_cache

import torch

from backend import settings


@lru_cache(maxsize=1)
def device() -> str:
    wanted = settings.get("BOOK_DEVICE")
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
