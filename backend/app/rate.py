"""The rate limit (Flask-Limiter): `BOOK_RATE_LIMIT` per client address on the API (not on the
book's pages and assets, not on /api/health). Counters live in Redis when `BOOK_CACHE_URL` names
one (shared by every worker and replica), else in each worker's memory. A Redis that goes away
falls back to memory counters, never a 500. The client address honours `BOOK_TRUSTED_PROXIES`
(werkzeug's ProxyFix, applied in `create_app`).
"""

from __future__ import annotations

import time

from flask import Flask, current_app, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address


def client_address() -> str:
    """The client as the rate limit counts it, and as the fair queue shares its slots."""
    return get_remote_address() or "unknown"


class RateLimit:
    def __init__(self, app: Flask):
        cfg = app.config
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

    def retry_after(self) -> int:
        """Seconds until the breached rate-limit window resets (for a 429)."""
        current = self.limiter.current_limit
        if current is None:
            return 1
        return max(1, int(current.reset_at - time.time() + 0.999))


def init_app(app: Flask) -> None:
    app.extensions["book_rate"] = RateLimit(app)


def get() -> RateLimit:
    return current_app.extensions["book_rate"]
