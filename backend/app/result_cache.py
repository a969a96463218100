"""The result cache (Flask-Caching): one entry per release (`release.py`), widget and resolved
parameters, kept `BOOK_CACHE_TTL_SECONDS` (or a widget's shorter `SPEC.result_ttl`, for measured
timings); in Redis when `BOOK_CACHE_URL` names one (every worker and replica shares it), as
JSON, else in-process. A cache that fails is logged and skipped for a few seconds: the request
is computed, never a 500.

`flight` lets one request compute a setting while the others that ask for it meanwhile wait for
its answer, across this worker's threads and, through the cache's own add-if-absent (Redis'
`SET NX`), across workers and replicas: a measured widget's setting is then measured once, not
once per replica (issue 35, item 4).
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import time
from contextlib import contextmanager

from cachelib.serializers import BaseRedisSerializer
from flask import Flask, current_app
from flask_caching import Cache
from flask_caching.backends.rediscache import RedisCache

from backend.app import metrics
from backend.app.release import release
from backend.errors import Busy

log = logging.getLogger(__name__)


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
        self._flights: dict[str, threading.Event] = {}  # key -> set when its leader is done
        self._flights_guard = threading.Lock()

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
            metrics.CACHE_ERRORS.labels(self.kind, what).inc()
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


    # ---- one computation per setting at a time ------------------------------------------

    FLIGHT_SECONDS = 120  # a leader's claim lapses after this (a worker that died mid-timing)
    POLL = 0.2            # how often a waiter in another process looks for the answer

    @contextmanager
    def flight(self, key: str, wait: float):
        """Yield the cached answer for `key` once another request has computed it, or None when
        this request must compute it (then `put` it before leaving). Waiters give up after
        `wait` seconds with the app's busy error; a leader that fails lets the next one lead."""
        deadline = time.monotonic() + wait
        while True:
            with self._flights_guard:
                local = self._flights.get(key)
                if local is None:
                    local = self._flights[key] = threading.Event()
                    leads_here = True
                else:
                    leads_here = False
            if not leads_here:  # another thread of this worker computes it: wait for it
                local.wait(max(0.0, deadline - time.monotonic()))
                found = self.get(key)
                if found is not None:
                    yield found
                    return
                if time.monotonic() >= deadline:
                    raise self._still_busy()
                continue  # that leader failed: try to lead
            try:
                yield from self._lead_or_wait(key, deadline)
            finally:
                with self._flights_guard:
                    self._flights.pop(key, None)
                local.set()
            return

    def _lead_or_wait(self, key: str, deadline: float):
        """This worker's leader for `key`: claim it in the shared cache, or wait for the process
        that holds the claim (its answer, or its claim's end)."""
        claim, token = f"flight:{key}", secrets.token_hex(8)
        while True:
            found = self.get(key)  # computed meanwhile (by whoever held the claim before)
            if found is not None:
                yield found
                return
            added = self._call("add", self.cache.add, claim, {"by": token}, self.FLIGHT_SECONDS)
            if added or added is None:  # ours, or the cache is failing: compute without it
                try:
                    yield None
                finally:
                    if added:
                        # a claim that lapsed and was taken by another would be dropped here
                        # too; that one's waiters then compute it again, as without a claim
                        self._call("delete", self.cache.delete, claim)
                return
            while time.monotonic() < deadline:  # another process measures it: wait for it
                time.sleep(self.POLL)
                found = self.get(key)
                if found is not None:
                    yield found
                    return
                if self._call("get", self.cache.get, claim) is None:
                    break  # its claim ended without an answer: try to lead
            else:
                raise self._still_busy()

    @staticmethod
    def _still_busy() -> Busy:
        return Busy("the server is still measuring this setting for another reader; try again "
                    "in a moment", retry_after=5, reason="timing_lock")


def init_app(app: Flask) -> None:
    app.extensions["book_result_cache"] = ResultCache(app)


def get() -> ResultCache:
    return current_app.extensions["book_result_cache"]
