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


# The memory a widget may plan against on the CPU: a fixed, stated budget (the host is shared,
# and what is free right now says little about what is free a second later).
CPU_MEMORY_BYTES = 512 * 2 ** 20


@lru_cache(maxsize=1)
def memory_bytes() -> int:
    """Device memory a widget may plan against, asked once per process: on a GPU this worker's
    share of the bytes free (`torch.cuda.mem_get_info` divided by `WEB_CONCURRENCY`), on the
    CPU the fixed `CPU_MEMORY_BYTES`.

    Widgets ask at import, and gunicorn imports them in its master before forking workers; a
    process that has initialised CUDA cannot hand it to a forked child, so unless CUDA is
    already initialised here the question goes to a short-lived child process."""
    dev = device()
    if not dev.startswith("cuda"):
        return CPU_MEMORY_BYTES
    index = torch.device(dev).index or 0
    if torch.cuda.is_initialized():
        free, _total = torch.cuda.mem_get_info(index)
    else:
        import subprocess
        import sys

        ask = f"import torch; print(torch.cuda.mem_get_info({index})[0])"
        out = subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True,
                             timeout=120, check=True)
        free = int(out.stdout.split()[-1])
    return worker_share(int(free), card_workers())


def card_workers() -> int:
    """Workers that share one card: this server's (`WEB_CONCURRENCY`) times the replicas that
    share the card (`BOOK_GPU_REPLICAS`, which compose.gpu.yaml sets with its replica count)."""
    return int(settings.get("WEB_CONCURRENCY")) * int(settings.get("BOOK_GPU_REPLICAS"))


def worker_share(free_bytes: int, workers: int) -> int:
    """One worker's share of a card's free bytes. The timing lock keeps two measurements from
    running at once, but not what each worker holds on the card between requests (its own CUDA
    context, the models it loaded, what its allocator keeps), nor the widgets that compute
    without timing: each worker plans against its share, so that a ceiling request fits
    whatever the others hold."""
    return free_bytes // max(1, workers)


def release_cached_memory() -> bool:
    """After a computation on a GPU, hand the caching allocator's spare blocks back to the card
    when they hold more than a quarter of this worker's budget (a ceiling run reserves most of
    it, and would otherwise keep it from the other workers). True when it released."""
    if kind() != "cuda":
        return False
    index = torch.device(device())
    if torch.cuda.memory_reserved(index) - torch.cuda.memory_allocated(index) \
            <= memory_bytes() // 4:
        return False
    torch.cuda.empty_cache()
    return True



def kind() -> str:
    """"cpu" or "cuda": the family of `device()`."""
    return "cuda" if device().startswith("cuda") else "cpu"


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
