"""Per-process guards: a rate limit per client, a ceiling on concurrent computations, and a
small cache of results. Each gunicorn worker keeps its own copy (state lives on the app, not
in module globals), so the limits are per worker: with W workers a client gets W times the
rate and the host runs at most W x MAX_CONCURRENT_COMPUTES computations at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager

from flask import Flask, current_app, request
from werkzeug.exceptions import ServiceUnavailable, TooManyRequests


class RateLimiter:
    """A token bucket per client address: `per_minute` requests, refilled continuously."""

    def __init__(self, per_minute: int, max_clients: int = 10_000):
        self.per_minute = per_minute
        self.max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, client: str) -> tuple[bool, float]:
        """(allowed, seconds until the next token)."""
        if self.per_minute <= 0:
            return True, 0.0
        rate = self.per_minute / 60.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.pop(client, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - last) * rate)
            allowed = tokens >= 1.0
            if allowed:
                tokens -= 1.0
            self._buckets[client] = (tokens, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        return allowed, 0.0 if allowed else (1.0 - tokens) / rate


class ResultCache:
    """Least-recently-used results keyed by widget and resolved parameters."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(widget: str, params: dict) -> str:
        return widget + json.dumps(params, sort_keys=True)

    def get(self, key: str) -> dict | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key: str, value: dict) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class Limits:
    def __init__(self, app: Flask):
        cfg = app.config
        self.rate = RateLimiter(cfg["RATE_LIMIT_PER_MINUTE"])
        self.slots = threading.BoundedSemaphore(max(1, cfg["MAX_CONCURRENT_COMPUTES"]))
        # Heavy widgets (whole models) run one at a time per worker, so light ones stay fast.
        self.heavy = threading.BoundedSemaphore(1)
        self.wait = cfg["COMPUTE_WAIT_SECONDS"]
        self.heavy_wait = cfg["HEAVY_WAIT_SECONDS"]
        self.cache = ResultCache(cfg["RESULT_CACHE_SIZE"])

    def check_rate(self) -> None:
        allowed, retry = self.rate.allow(request.remote_addr or "unknown")
        if not allowed:
            exc = TooManyRequests(
                f"too many requests from your address; at most {self.rate.per_minute} per "
                f"minute, try again in {retry:.1f} s")
            exc.retry_after = max(1, round(retry))
            raise exc

    @contextmanager
    def compute_slot(self, heavy: bool = False):
        deadline = time.monotonic() + (self.heavy_wait if heavy else self.wait)
        held = []
        try:
            for sem in ((self.heavy, self.slots) if heavy else (self.slots,)):
                if not sem.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    exc = ServiceUnavailable("the server is busy computing other readers' "
                                             "widgets; try again in a moment")
                    exc.retry_after = 2
                    raise exc
                held.append(sem)
            yield
        finally:
            for sem in reversed(held):
                sem.release()


def init_app(app: Flask) -> None:
    app.extensions["book_limits"] = Limits(app)


def get() -> Limits:
    return current_app.extensions["book_limits"]
