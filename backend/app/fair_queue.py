"""A fair, bounded queue for the compute slots.

A worker runs at most `BOOK_MAX_CONCURRENT` computations; the rest wait in a queue of 16 places
per slot. A freed slot goes to the waiting client (address) that is running the fewest
computations, so a client that floods cannot starve a polite one, and a client alone (a whole
class behind one address) may use every slot. When the queue is full, a newcomer takes the
newest place of the client holding the most places (that request gets 503), unless the
newcomer's own client already holds as many; a request that waits longer than
`BOOK_COMPUTE_WAIT_SECONDS` gets 503. Every 503 carries `Retry-After`. Cached answers never
enter the queue (`api._answer` looks in the result cache first).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter, deque
from contextlib import contextmanager

from flask import Flask, current_app

from backend.app import metrics
from backend.app.demand import DEMAND, WARMING
from backend.app.rate import client_address
from backend.errors import Busy

QUEUE_PLACES_PER_SLOT = 16
SPARE_THREADS = 8  # for health checks, pages and cached answers while every place is taken


def threads_needed(slots: int) -> int:
    """Threads a worker needs for its queues to work as documented: every computing slot and
    every waiting place holds a thread (the model widgets' queue of one slot too), plus spares.
    With fewer, gunicorn's own queue holds the surplus, first come first served."""
    light = slots * (1 + QUEUE_PLACES_PER_SLOT)
    heavy = 1 + QUEUE_PLACES_PER_SLOT
    return light + heavy + SPARE_THREADS


class _Ticket:
    __slots__ = ("client", "seq", "granted", "rejected")

    def __init__(self, client: str, seq: int):
        self.client, self.seq = client, seq
        self.granted = self.rejected = False


class FairQueue:
    """`slots` computations at once; waiting requests are served fewest-running-client first.
    A queue given a `metric` name reports its depth, slots in use and waits to Prometheus."""

    def __init__(self, slots: int, places: int, what: str = "widgets", metric: str | None = None):
        self.slots, self.places, self.what = slots, places, what
        self._metrics = None if metric is None else (
            metrics.QUEUE_WAITING.labels(metric), metrics.QUEUE_RUNNING.labels(metric),
            metrics.QUEUE_WAIT_SECONDS.labels(metric))
        self.free = slots
        self.running: Counter[str] = Counter()
        self.waiting: dict[str, deque[_Ticket]] = {}
        self.n_waiting = 0
        self.last_grant: dict[str, int] = {}  # for clients running or waiting: round robin
        self._seq = itertools.count()
        self._cond = threading.Condition()

    def _busy(self, why: str, reason: str) -> Busy:
        return Busy(f"the server is busy computing other readers' {self.what} ({why}); "
                    "try again in a moment", retry_after=1, reason=reason)

    def _report(self) -> None:
        """The gauges, set while the lock is held so they never go back to an older state."""
        if self._metrics is not None:
            self._metrics[0].set(self.n_waiting)
            self._metrics[1].set(self.slots - self.free)

    def depth(self) -> dict:
        with self._cond:
            return {"slots": self.slots, "computing": self.slots - self.free,
                    "waiting": self.n_waiting, "places": self.places}

    def acquire(self, client: str, timeout: float) -> None:
        start = time.monotonic()
        try:
            self._acquire(client, timeout)
        finally:
            if self._metrics is not None:
                self._metrics[2].observe(time.monotonic() - start)

    def _acquire(self, client: str, timeout: float) -> None:
        with self._cond:
            if self.free > 0 and self.n_waiting == 0:
                self.free -= 1
                self.running[client] += 1
                self.last_grant[client] = next(self._seq)
                self._report()
                return
            if self.n_waiting >= self.places:
                hog = max(self.waiting, key=lambda c: (len(self.waiting[c]), -self.waiting[c][-1].seq))
                if len(self.waiting[hog]) <= len(self.waiting.get(client, ())) + 1:
                    raise self._busy("the queue is full", "queue_full")
                victim = self.waiting[hog].pop()
                if not self.waiting[hog]:
                    del self.waiting[hog]
                    self._forget(hog)
                victim.rejected = True
                self.n_waiting -= 1
                self._cond.notify_all()
            ticket = _Ticket(client, next(self._seq))
            self.waiting.setdefault(client, deque()).append(ticket)
            self.n_waiting += 1
            self._report()
            deadline = time.monotonic() + timeout
            while not (ticket.granted or ticket.rejected):
                left = deadline - time.monotonic()
                if left <= 0:
                    self.waiting[client].remove(ticket)
                    if not self.waiting[client]:
                        del self.waiting[client]
                        self._forget(client)
                    self.n_waiting -= 1
                    self._report()
                    raise self._busy("waited too long for a slot", "queue_timeout")
                self._cond.wait(left)
            if ticket.rejected:
                raise self._busy("the queue is full", "queue_full")

    def release(self, client: str) -> None:
        with self._cond:
            self.running[client] -= 1
            if self.running[client] <= 0:
                del self.running[client]
                self._forget(client)
            self.free += 1
            while self.free > 0 and self.n_waiting > 0:
                # fewest computations running first; among equals, the one served longest ago
                nxt = min(self.waiting, key=lambda c: (self.running[c],
                                                       self.last_grant.get(c, -1),
                                                       self.waiting[c][0].seq))
                ticket = self.waiting[nxt].popleft()
                if not self.waiting[nxt]:
                    del self.waiting[nxt]
                self.n_waiting -= 1
                self.free -= 1
                self.running[nxt] += 1
                self.last_grant[nxt] = next(self._seq)
                ticket.granted = True
            self._report()
            self._cond.notify_all()

    def _forget(self, client: str) -> None:
        if client not in self.running and client not in self.waiting:
            self.last_grant.pop(client, None)

    @contextmanager
    def slot(self, client: str, timeout: float):
        self.acquire(client, timeout)
        try:
            yield
        finally:
            self.release(client)


class ComputeSlots:
    """A worker's two fair queues: every computation's (`queue`) and, in front of it, the
    model widgets' (`heavy`)."""

    def __init__(self, app: Flask):
        cfg = app.config
        slots = max(1, int(cfg["MAX_CONCURRENT_COMPUTES"]))
        self.queue = FairQueue(slots, QUEUE_PLACES_PER_SLOT * slots, metric="widgets")
        # Heavy widgets (whole models) run one at a time per worker, so light ones stay fast.
        self.heavy = FairQueue(1, QUEUE_PLACES_PER_SLOT, what="model widgets", metric="models")
        self.wait = float(cfg["COMPUTE_WAIT_SECONDS"])
        self.heavy_wait = float(cfg["HEAVY_WAIT_SECONDS"])

    @contextmanager
    def compute_slot(self, heavy: bool = False):
        client = client_address()
        # While this worker warms its widgets (just started), a computation may wait as long as
        # a model widget does: the slots are slow for a few seconds, and a reader who arrives
        # then is served late rather than refused.
        wait = self.heavy_wait if heavy or WARMING.is_set() else self.wait
        deadline = time.monotonic() + wait
        with DEMAND.held():  # the warm-up starts nothing new until this is done
            if heavy:
                with self.heavy.slot(client, self.heavy_wait):
                    with self.queue.slot(client, max(0.0, deadline - time.monotonic())):
                        yield
            else:
                with self.queue.slot(client, wait):
                    yield

    def depth(self) -> dict:
        """This worker's two queues, for /api/health (/metrics adds up every worker's)."""
        return {"widgets": self.queue.depth(), "models": self.heavy.depth()}


def init_app(app: Flask) -> None:
    app.extensions["book_fair_queue"] = ComputeSlots(app)


def get() -> ComputeSlots:
    return current_app.extensions["book_fair_queue"]
