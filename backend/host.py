"""What the host lets this process use, read without importing torch (settings and gunicorn's
master ask before anything else is loaded)."""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"


def available_cpus(cgroup: str | None = None, proc_cgroup: str | None = None) -> int:
    """CPUs this process may use: the scheduler's affinity (else `os.cpu_count()`), capped by
    the tightest CPU quota of its cgroup and the cgroups above it, rounded up (1.5 CPUs is 2)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = cpu_quota(cgroup, proc_cgroup)
    if quota is not None:
        cpus = min(cpus, max(1, math.ceil(quota)))
    return max(1, cpus)


def cpu_quota(cgroup: str | None = None, proc_cgroup: str | None = None) -> float | None:
    """The CPUs a cgroup quota allows this process (cgroup v2 `cpu.max`, or v1
    `cpu.cfs_quota_us` / `cpu.cfs_period_us`), None without one.

    The quota may be set on the process's own cgroup or on any above it (Kubernetes sets one on
    the pod and one on each container; systemd on a slice), and what applies is the smallest.
    Inside a container with its own cgroup namespace the mount's root is the container's
    cgroup and /proc/self/cgroup says `/`; elsewhere (a systemd service, a container that shares
    the host's namespace) the process's cgroup is a folder further down, which is read first."""
    root = Path(cgroup or CGROUP_ROOT)
    v2_path, v1_path = _own_cgroups(Path(proc_cgroup or PROC_CGROUP))
    quotas: list[float] = []
    if (root / "cgroup.controllers").exists() or (root / "cpu.max").exists():  # v2, unified
        quotas = [q for d in _up_from(root, v2_path) if (q := _v2_quota(d)) is not None]
    else:  # v1: the cpu controller's own hierarchy (`cpu,cpuacct`, often linked as `cpu`)
        for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
            if (root / name).is_dir():
                quotas = [q for d in _up_from(root / name, v1_path)
                          if (q := _v1_quota(d)) is not None]
                break
    return min(quotas) if quotas else None


def _own_cgroups(proc_cgroup: Path) -> tuple[str | None, str | None]:
    """This process's cgroup path in the v2 hierarchy and in v1's cpu controller."""
    v2 = v1 = None
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None, None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif "cpu" in parts[1].split(","):
            v1 = parts[2]
    return v2, v1


def _up_from(mount: Path, own: str | None):
    """The process's cgroup folder and every one above it, up to the mount. A path that is not
    there (a v1 container lists the host's path, but its mount root is its own cgroup) leaves
    the mount alone."""
    parts = [p for p in (own or "").split("/") if p]
    if ".." in parts or not (mount.joinpath(*parts)).is_dir():
        parts = []
    for n in range(len(parts), -1, -1):
        yield mount.joinpath(*parts[:n])


def _v2_quota(folder: Path) -> float | None:
    try:
        text = (folder / "cpu.max").read_text().split()
        if text and text[0] != "max":
            quota, period = int(text[0]), int(text[1])
            return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


def _v1_quota(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None


def torch_threads(cpus: int, workers: int) -> int:
    """torch's threads in each of `workers` processes that share `cpus` CPUs: a share each, so
    the workers computing at once never ask for more cores than the container may use (a
    64-core node's 32 per worker, under a one-core quota, would make 64 threads take turns on
    one core: each computation slower, not faster)."""
    return max(1, int(cpus) // max(1, int(workers)))


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
