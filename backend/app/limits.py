"""The guards in front of the widgets: a rate limit per client address (Flask-Limiter), a result
cache (Flask-Caching), and a fair, bounded queue for the compute slots.

- Rate limit: `BOOK_RATE_LIMIT` per client address on the API (not on the book's pages and
  assets, not on /api/health). Counters live in Redis when `BOOK_CACHE_URL` names one (shared
  by every worker and replica), else in each worker's memory. A Redis that goes away falls back
  to memory counters, never a 500. The client address honours `BOOK_TRUSTED_PROXIES`
  (werkzeug's ProxyFix, applied in `create_app`).
- Result cache: one entry per release (`release.py`), widget and resolved parameters, kept
  `BOOK_CACHE_TTL_SECONDS` (or a widget's shorter `SPEC.result_ttl`, for measured timings); in
  Redis when configured (every worker and replica shares it), else in-process. A cache that
  fails is logged and skipped for a few seconds: the request is computed, never a 500.
- Fair queue: a worker runs at most `BOOK_MAX_CONCURRENT` computations; the rest wait in a
  queue of 16 places per slot. A freed slot goes to the waiting client (address) that is
  running the fewest computations, so a client that floods cannot starve a polite one, and a
  client alone (a whole class behind one address) may use every slot. When the queue is full,
  a newcomer takes the newest place of the client holding the most places (that request gets
  503), unless the newcomer's own client already holds as many; a request that waits longer
  than `BOOK_COMPUTE_WAIT_SECONDS` gets 503. Every 503 carries `Retry-After`. Cached answers
  never enter the queue.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import threading
import time
from collections import Counter, deque
from contextlib import contextmanager

from cachelib.serializers import BaseRedisSerializer
from flask import Flask, current_app, request
from flask_caching import Cache
from flask_caching.backends.rediscache import RedisCache
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

from backend.app.release import release
from backend.errors import Busy  # noqa: F401  (raised here; tests import it from here too)

log = logging.getLogger("backend.app.limits")

QUEUE_PLACES_PER_SLOT = 16
# Set while a freshly started worker warms its widgets in the background (gunicorn_conf.warm).
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
SPARE_THREADS = 8  # for health checks, pages and cached answers while every place is taken


def threads_needed(slots: int) -> int:
    """Threads a worker needs for its queues to work as documented: every computing slot and
    every waiting place holds a thread (the model widgets' queue of one slot too), plus spares.
    With fewer, gunicorn's own queue holds the surplus, first come first served."""
    light = slots * (1 + QUEUE_PLACES_PER_SLOT)
    heavy = 1 + QUEUE_PLACES_PER_SLOT
    return light + heavy + SPARE_THREADS
# (v2: attention_scaling and multi_head answers lost their prose-only values to facts())


class _Ticket:
    __slots__ = ("client", "seq", "granted", "rejected")

    def __init__(self, client: str, seq: int):
        self.client, self.seq = client, seq
        self.granted = self.rejected = False


class FairQueue:
    """`slots` computations at once; waiting requests are served fewest-running-client first."""

    def __init__(self, slots: int, places: int, what: str = "widgets"):
        self.slots, self.places, self.what = slots, places, what
        self.free = slots
        self.running: Counter[str] = Counter()
        self.waiting: dict[str, deque[_Ticket]] = {}
        self.n_waiting = 0
        self.last_grant: dict[str, int] = {}  # for clients running or waiting: round robin
        self._seq = itertools.count()
        self._cond = threading.Condition()

    def _busy(self, why: str) -> Busy:
        return Busy(f"the server is busy computing other readers' {self.what} ({why}); "
                    "try again in a moment", retry_after=1)

    def acquire(self, client: str, timeout: float) -> None:
        with self._cond:
            if self.free > 0 and self.n_waiting == 0:
                self.free -= 1
                self.running[client] += 1
                self.last_grant[client] = next(self._seq)
                return
            if self.n_waiting >= self.places:
                hog = max(self.waiting, key=lambda c: (len(self.waiting[c]), -self.waiting[c][-1].seq))
                if len(self.waiting[hog]) <= len(self.waiting.get(client, ())) + 1:
                    raise self._busy("the queue is full")
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
            deadline = time.monotonic() + timeout
            while not (ticket.granted or ticket.rejected):
                left = deadline - time.monotonic()
                if left <= 0:
                    self.waiting[client].remove(ticket)
                    if not self.waiting[client]:
                        del self.waiting[client]
                        self._forget(client)
                    self.n_waiting -= 1
                    raise self._busy("waited too long for a slot")
                self._cond.wait(left)
            if ticket.rejected:
                raise self._busy("the queue is full")

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


class JsonSerializer(BaseRedisSerializer):
    """Results go to Redis as JSON text, never as pickles.

    cachelib's default Redis serializer pickles every value and unpickles whatever it reads
    back: anything that can write to the Redis could then run code in every worker. A result is
    a JSON document already (it is what the API sends), so JSON loses nothing; an entry that is
    not a JSON object (a planted pickle, another program's key) reads as a miss."""

    def dumps(self, value, protocol=None) -> bytes:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()

    def loads(self, value: bytes | None):
        if value is None:
            return None
        try:
            data = json.loads(value)
        except (ValueError, UnicodeDecodeError):
            log.warning("result cache: an entry that is not JSON was ignored")
            return None
        return data if isinstance(data, dict) else None


class JsonRedisCache(RedisCache):
    """Flask-Caching's Redis backend with `JsonSerializer` (named by `CACHE_TYPE`)."""

    serializer = JsonSerializer()


class ResultCache:
    """Flask-Caching, with failures of its backend turned into misses (logged, then skipped
    for `PAUSE` seconds so a Redis that is gone costs one failed attempt, not one per request)."""

    PAUSE = 5.0

    def __init__(self, app: Flask):
        cfg = app.config
        url = cfg["CACHE_URL"]
        config = {"CACHE_DEFAULT_TIMEOUT": cfg["CACHE_TTL_SECONDS"],
                  # the release: a deploy never reads the previous code's answers
                  "CACHE_KEY_PREFIX": f"book:result:{release()}:"}
        if url:
            options = {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}
            if cfg.get("CACHE_PASSWORD"):
                options["password"] = cfg["CACHE_PASSWORD"]
            config.update(CACHE_TYPE=f"{__name__}.JsonRedisCache", CACHE_REDIS_URL=url,
                          CACHE_OPTIONS=options)
        else:
            config.update(CACHE_TYPE="SimpleCache", CACHE_THRESHOLD=1024)
        self.kind = "redis" if url else "memory"
        self.ttl = int(cfg["CACHE_TTL_SECONDS"])
        self.cache = Cache(app, config=config)
        self._skip_until = 0.0
        self.errors = 0

    @staticmethod
    def key(widget: str, params: dict) -> str:
        text = json.dumps(params, sort_keys=True, separators=(",", ":"))
        return f"{widget}:{hashlib.sha256(text.encode()).hexdigest()[:32]}"

    def _call(self, what: str, fn, *args):
        if time.monotonic() < self._skip_until:
            return None
        try:
            return fn(*args)
        except Exception as exc:  # a cache is an optimisation: never fail the request for it
            self.errors += 1
            self._skip_until = time.monotonic() + self.PAUSE
            log.warning("result cache (%s) %s failed, computing without it for %.0f s: %s",
                        self.kind, what, self.PAUSE, exc)
            return None

    def get(self, key: str) -> dict | None:
        return self._call("get", self.cache.get, key)

    def put(self, key: str, value: dict, ttl: int | None = None) -> None:
        """Keep value for the configured TTL, or for `ttl` seconds where that is shorter (a
        widget's own limit, `WidgetSpec.result_ttl`)."""
        if ttl is None:
            self._call("set", self.cache.set, key, value)
        else:
            self._call("set", self.cache.set, key, value, min(ttl, self.ttl))


def client_address() -> str:
    return get_remote_address() or "unknown"


class Limits:
    def __init__(self, app: Flask):
        cfg = app.config
        slots = max(1, int(cfg["MAX_CONCURRENT_COMPUTES"]))
        self.queue = FairQueue(slots, QUEUE_PLACES_PER_SLOT * slots)
        # Heavy widgets (whole models) run one at a time per worker, so light ones stay fast.
        self.heavy = FairQueue(1, QUEUE_PLACES_PER_SLOT, what="model widgets")
        self.wait = float(cfg["COMPUTE_WAIT_SECONDS"])
        self.heavy_wait = float(cfg["HEAVY_WAIT_SECONDS"])
        self.cache = ResultCache(app)
        self.rate = str(cfg["RATE_LIMIT"] or "")
        self.limiter = Limiter(
            key_func=client_address,
            app=app,
            default_limits=[self.rate] if self.rate else [],
            default_limits_per_method=False,
            storage_uri=cfg["CACHE_URL"] or "memory://",
            storage_options={"socket_connect_timeout": 0.5, "socket_timeout": 0.5,
                             **({"password": cfg["CACHE_PASSWORD"]}
                                if cfg.get("CACHE_PASSWORD") else {})}
            if cfg["CACHE_URL"] else {},
            strategy="fixed-window",
            in_memory_fallback_enabled=True,
            swallow_errors=True,
            key_prefix="book:rate",
            enabled=bool(self.rate),
        )

        @self.limiter.request_filter
        def not_limited() -> bool:
            # Pages and assets are not rate limited (a page load is dozens of files), nor is
            # the liveness probe.
            return not request.path.startswith("/api/") or request.path == "/api/health"

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

    def retry_after(self) -> int:
        """Seconds until the breached rate-limit window resets (for a 429)."""
        current = self.limiter.current_limit
        if current is None:
            return 1
        return max(1, int(current.reset_at - time.time() + 0.999))


def init_app(app: Flask) -> None:
    app.extensions["book_limits"] = Limits(app)


def get() -> Limits:
    return current_app.extensions["book_limits"]
