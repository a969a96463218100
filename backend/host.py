"""What the host lets this process use, read without importing torch (settings and gunicorn's
master ask before anything else is loaded)."""

from __future__ import annotations

import math
import os
from pathlib import Path


def available_cpus(cgroup: str = "/sys/fs/cgroup") -> int:
    """CPUs this process may use: the scheduler's affinity, capped by a container's CPU quota
    (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`), rounded up."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    root = Path(cgroup)
    quota = period = None
    try:
        text = (root / "cpu.max").read_text().split()
        if text and text[0] != "max":
            quota, period = int(text[0]), int(text[1])
    except (OSError, ValueError, IndexError):
        try:
            q = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
            if q > 0:
                quota, period = q, int((root / "cpu" / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            pass
    if quota and period:
        cpus = min(cpus, max(1, math.ceil(quota / period)))
    return max(1, cpus)


M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas for this process and the workers it forks (the setting is
    process state, copied by fork). Each thread that allocates may otherwise get an arena of its
    own, up to 8 per core, and a server with 64 threads a worker holds freed memory in all of
    them (tests/faults/test_memory.py holds the server's peak). The same as MALLOC_ARENA_MAX=2,
    which is honoured first where it is set. False where the C library is not glibc."""
    import ctypes
    import ctypes.util

    if os.environ.get("MALLOC_ARENA_MAX"):
        return True  # glibc read it at start
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        return bool(libc.mallopt(M_ARENA_MAX, int(arenas)))
    except (OSError, AttributeError):
        return False
