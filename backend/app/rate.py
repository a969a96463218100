"""The rate limit (Flask-Limiter): `BOOK_RATE_LIMIT` per client address on the API (not on the
book's pages and assets, not on /api/health). Counters live in Redis when `BOOK_CACHE_URL` names
one (shared by every worker and replica), else in each worker's memory. A Redis that goes away
falls back to memory counters, never a 500. The client address honours `BOOK_TRUSTED_PROXIES`
(werkzeug's ProxyFix, applied in `create_app`).

A client is an IPv4 address, or an IPv6 /64: one home or campus network is given a /64, and a
single machine may take any address in it (privacy addresses change daily, and a script can
pick a fresh one per request), so counting full IPv6 addresses would give one client 2^64
allowances of the rate limit and as many shares of the fair queue.
"""

from __future__ import annotations

import ipaddress
import time

from flask import Flask, current_app, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

IPV6_CLIENT_PREFIX = 64  # the prefix one subscriber or LAN is given (RFC 6177)


def client_key(address: str | None) -> str:
    """The client an address belongs to: an IPv4 address as it is (an IPv4-mapped IPv6 address
    is its IPv4 address), any other IPv6 address as its /64 network (`2001:db8:1:2::/64`); text
    that is no address (a test client's, a Unix socket's) as it is."""
    if not address:
        return "unknown"
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # a link-local zone (`%eth0`) aside
    except ValueError:
        return address
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_CLIENT_PREFIX), strict=False))
    return str(ip)


def client_address() -> str:
    """The client as the rate limit counts it, and as the fair queue shares its slots."""
    return client_key(get_remote_address())


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
