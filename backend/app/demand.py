"""Readers' demand on this worker, and the background warm-up that gives way to it.

A freshly started worker warms its widgets in the background (`gunicorn_conf.warm`): while it
does, `WARMING` is set (a computation then waits as long for a slot as a model widget does, and
/api/health says `warming`), and before each widget it warms it waits until no reader's
computation is running or waiting (`DEMAND.wait_idle`). Every reader's computation counts itself
in `DEMAND` for as long as it runs or waits for a slot (`fair_queue.ComputeSlots`).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

WARMING = threading.Event()


class Demand:
    """Readers' computations in this worker, running or waiting for a slot. The background
    warm-up waits until there are none before each computation it starts (`wait_idle`), so a
    reader who arrives while a worker warms is served ahead of the rest of the warm-up, not
    after it, and does not share the cores with it."""

    def __init__(self):
        self._n = 0
        self._last_end = float("-inf")  # time.monotonic() when the last one ended
        self._cond = threading.Condition()
        self.yields = 0  # times the warm-up waited for readers (for tests and the log)

    @contextmanager
    def held(self):
        with self._cond:
            self._n += 1
        try:
            yield
        finally:
            with self._cond:
                self._n -= 1
                self._last_end = time.monotonic()
                if self._n == 0:
                    self._cond.notify_all()

    def wait_idle(self, timeout: float, quiet: float = 0.0) -> bool:
        """Block until no reader's computation is running or waiting and none has ended for
        `quiet` seconds (a reader's requests come in bursts: a page's widgets, a slider's
        drag), or until `timeout` seconds have passed (a warm-up under constant traffic still
        ends); True when idle."""
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._n or time.monotonic() - self._last_end < quiet:
                self.yields += 1
            while True:
                left = deadline - time.monotonic()
                if not self._cond.wait_for(lambda: self._n == 0, max(0.0, left)):
                    return False
                calm = quiet - (time.monotonic() - self._last_end)
                if calm <= 0:
                    return True
                if left <= 0:
                    return False
                self._cond.wait(min(calm, left))  # woken early by a reader's end: look again


DEMAND = Demand()
