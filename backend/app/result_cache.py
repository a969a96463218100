"""The result cache (Flask-Caching): one entry per release (`release.py`), widget and resolved
parameters, kept `BOOK_CACHE_TTL_SECONDS` (or a widget's shorter `SPEC.result_ttl`, for measured
timings); in Redis when `BOOK_CACHE_URL` names one (every worker and replica shares it), as
JSON, else in-process. A cache that fails is logged and skipped for a few seconds: the request
is computed, never a 500.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time

from cachelib.serializers import BaseRedisSerializer
from flask import Flask, current_app
from flask_caching import Cache
from flask_caching.backends.rediscache import RedisCache

from backend.app import metrics
from backend.app.release import release

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


def init_app(app: Flask) -> None:
    app.extensions["book_result_cache"] = ResultCache(app)


def get() -> ResultCache:
    return current_app.extensions["book_result_cache"]
