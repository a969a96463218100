"""What every measured widget shares: one timing at a time on the whole host, on a stated device.

Timings are real measurements, so two readers' timings must never share the machine. An
exclusive `flock` on one lock file (`BOOK_TIMING_LOCK`) serialises the *timings* (and only them)
across threads, across gunicorn worker processes, and across containers that mount the same host
folder (the lecture hall's replicas, the cluster's pods on one node: review L6); a request that
cannot get the lock within `LOCK_WAIT_SECONDS` gets the app's busy error (503, with
Retry-After). Where the lock file cannot be opened at all, timings fall back to a lock of this
process only (logged once). Other widgets' computations and other programs on the host are not
held back by it, so a timing can still be disturbed: report each version's fastest run (load
only adds time) and check with `settled` that the fastest run is a repeatable floor,
re-measuring when it is not. On a CPU a timing runs on one intra-op thread
(`torch.set_num_threads` is process-wide, so this also slows anything else the same worker runs
meanwhile), so a result depends on the shape of the work, not on how many cores happen to be
free.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import math
import os
import statistics
import threading
import time
from contextlib import contextmanager

import torch

from backend import device, settings
from backend.errors import Busy

log = logging.getLogger(__name__)

LOCK_WAIT_SECONDS = 10.0
LOCK_PATH: str | None = None  # a test's own lock file; None: the setting BOOK_TIMING_LOCK


def _busy() -> Busy:
    return Busy("the server is busy timing another reader's request; try again in a moment",
                retry_after=2, reason="timing_lock")


def _open_lock(path: str) -> int | None:
    """A descriptor to `flock`, or None where the path cannot be opened. A file is created if
    missing; where the folder is not writable (a host folder the container may only read, as
    the cluster mounts it) an existing file, or the folder itself, is opened read-only: `flock`
    needs no write access, and every process that opens the same inode shares its lock."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except IsADirectoryError:
        pass
    except OSError:
        if not os.path.exists(path):
            return None
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


# The fallback where the lock file cannot be opened: it keeps this worker's own timings apart
# (its threads), not other workers'. One warning per path, not one per timing.
_PROCESS_LOCK = threading.Lock()
_WARNED: set[str] = set()


@contextmanager
def timing_lock(wait: float | None = None, path: str | None = None):
    """Hold the host-wide timing lock, or raise the app's busy error after `wait` seconds.

    `flock` locks belong to an open file, so separate opens exclude each other whether they
    come from two threads of one worker, two workers, or two containers mounting the folder."""
    wait = LOCK_WAIT_SECONDS if wait is None else wait
    path = path or LOCK_PATH or settings.get("BOOK_TIMING_LOCK")
    fd = _open_lock(path)
    if fd is None:
        if path not in _WARNED:
            _WARNED.add(path)
            log.warning("timing lock %s cannot be opened: timings are kept apart within this "
                        "process only, so other workers' may overlap them", path)
        if not _PROCESS_LOCK.acquire(timeout=wait):
            raise _busy()
        try:
            yield
        finally:
            _PROCESS_LOCK.release()
        return
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _busy() from None
                time.sleep(0.005)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


SETTLED_TOLERANCE = 0.10     # runs within 10% of the fastest count as the same floor
SETTLED_AGREE = 3            # ... and this many of them make the floor a repeatable one


def settled(runs_ms, tolerance: float = SETTLED_TOLERANCE, agree: int = SETTLED_AGREE) -> bool:
    """Whether the fastest of `runs_ms` is confirmed: at least `agree` runs (the fastest among
    them) lie within `tolerance` of it. A lone fast run among slow ones, or a set where load
    pushed every run up unevenly, is not settled; measure again and pool the runs."""
    fastest = min(runs_ms)
    return sum(1 for r in runs_ms if r <= fastest * (1 + tolerance)) >= min(agree, len(runs_ms))


@contextmanager
def one_cpu_thread(dev: str):
    """On a CPU, time on one intra-op thread: the gap then comes from the shape of the work
    (one big product against T small dependent ones), not from how many cores are free."""
    if dev != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def measured_on(dtype: torch.dtype) -> str:
    """The label every measured number carries: device, dtype, torch version."""
    dev = device.device()
    where = device.describe() if dev != "cpu" else "cpu (1 thread)"
    return f"{where}, {str(dtype).replace('torch.', '')}, torch {torch.__version__}"


def remembered_for(seconds: float, maxsize: int = 64):
    """Like ``functools.lru_cache(maxsize)``, but a result is forgotten `seconds` after it was
    measured: a timing describes the machine at one moment, and one disturbed run should not
    stand for a whole class's day. ``fn.cache_clear()`` and ``fn.__wrapped__`` (a fresh call)
    work as for ``lru_cache``."""
    def wrap(fn):
        held: dict = {}  # args -> (monotonic time measured, result), oldest first
        guard = threading.Lock()

        @functools.wraps(fn)
        def call(*args):
            now = time.monotonic()
            with guard:
                hit = held.get(args)
                if hit is not None and now - hit[0] < seconds:
                    return hit[1]
            result = fn(*args)
            with guard:
                held.pop(args, None)
                held[args] = (time.monotonic(), result)
                while len(held) > maxsize:
                    held.pop(next(iter(held)))
            return result

        call.cache_clear = held.clear
        call.ttl_seconds = seconds
        return call
    return wrap


# Reading step-by-step timings (kv_decode): load only ever adds time to a step.

def per_step(runs) -> list[float]:
    """The fastest of the runs at each step: other work on the machine only ever adds time to
    a step, so the fastest run is the one least disturbed."""
    return [min(col) for col in zip(*runs)]


def buckets(xs: list[int], ms: list[float], n: int = 40) -> tuple[list[float], list[float]]:
    """The fastest step of each consecutive stretch of at most ceil(len / n) steps: (mid x, ms).
    Neighbouring steps do nearly the same work, so a stretch's fastest step is its time with
    the least disturbance: a burst of other work has to cover the whole stretch to move it."""
    width = max(1, math.ceil(len(ms) / n))
    mids, lows = [], []
    for i in range(0, len(ms), width):
        mids.append(statistics.mean(xs[i:i + width]))
        lows.append(min(ms[i:i + width]))
    return mids, lows


def quarters(ms: list[float]) -> tuple[float, float]:
    """The fastest step in the first and in the last quarter of the decode steps (every step
    after the first; the first is the prefill of a cached run): load only adds time, so these
    survive a busy machine as long as some steps of each quarter ran undisturbed. With fewer than
    four decode steps a quarter is one step; with none, both are the first step."""
    decode_ms = ms[1:] or ms
    q = max(1, len(decode_ms) // 4)
    return min(decode_ms[:q]), min(decode_ms[-q:])


def slope(xs: list[int], ms: list[float]) -> float:
    """Least-squares slope of step time against position over the decode steps, in ms per
    position (0 with fewer than two decode steps)."""
    x, y = xs[1:], ms[1:]
    if len(x) < 2:
        return 0.0
    mx, my = statistics.mean(x), statistics.mean(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
