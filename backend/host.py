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
