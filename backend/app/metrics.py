"""Prometheus metrics at `GET /metrics`, a request id on every answer, and one log line for
every refusal (429, 503).

Under gunicorn every worker writes its counts to files in `PROMETHEUS_MULTIPROC_DIR`
(prometheus_client's multiprocess mode; `backend/gunicorn_conf.py` makes a fresh folder for each
server start and forgets a dead worker's gauges), so one scrape, whichever worker answers it,
adds up the whole server. Without that folder (the tests' in-process app) the counts are this
process's. A replica is one server: Prometheus scrapes each replica, not the proxy in front.

Labels are bounded: a route is the URL rule that matched (`/api/widgets/<name>/result`, never
the path asked for), a widget is a name in the registry or empty, a status an HTTP code, a
reason one of `REASONS`. No metric holds an address, a query or a parameter.

`/metrics` is public, on the app's port (`BOOK_METRICS=off` takes it away): it shows how busy
the server is, per widget, which any reader can tell from the book's own speed, and nothing
about any reader; a scrape reads a few small files. It lies outside `/api/`, so the rate limit
never counts it and the lecture hall's nginx neither forwards nor caches it (Prometheus scrapes
each replica directly), and it does not count itself.
"""

from __future__ import annotations

import re
import time
import uuid

from flask import Blueprint, Flask, Response, g, request
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    multiprocess,
    values,
)
from prometheus_client.exposition import choose_encoder

from backend.compute import REGISTRY as WIDGETS

# `_created` series say when a label set was first seen in this process: nothing to watch, and
# the multiprocess scrape has none, so neither has this process's.
disable_created_metrics()

# Seconds, from a cached answer (about a millisecond) to a model widget that waited its 30 s.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0, 60.0)
WAIT_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS = Counter(
    "book_requests_total", "HTTP requests answered, by URL rule, widget, method and status",
    ["route", "widget", "method", "status"])
REQUEST_SECONDS = Histogram(
    "book_request_duration_seconds", "Time from a request reaching Flask to its answer "
    "(queueing for a compute slot included), by URL rule and widget", ["route", "widget"],
    buckets=LATENCY_BUCKETS)
COMPUTE_SECONDS = Histogram(
    "book_compute_seconds", "Seconds a widget's computation ran (cache misses only)",
    ["widget"], buckets=LATENCY_BUCKETS)
QUEUE_WAITING = Gauge(
    "book_queue_waiting", "Computations waiting for a compute slot, all workers of the server "
    "(queue: widgets = every computation; models = the one-at-a-time queue of the model "
    "widgets, in front of it)", ["queue"], multiprocess_mode="livesum")
QUEUE_RUNNING = Gauge(
    "book_queue_running", "Compute slots in use, all workers of the server", ["queue"],
    multiprocess_mode="livesum")
QUEUE_WAIT_SECONDS = Histogram(
    "book_queue_wait_seconds", "Time a computation waited for its slot, granted or refused",
    ["queue"], buckets=WAIT_BUCKETS)
CACHE_LOOKUPS = Counter(
    "book_cache_lookups_total", "Result lookups by cache layer: etag = a GET revalidation "
    "answered 304 (hit) or not (miss, passed to the result cache); memory or redis = the "
    "result cache (a miss is computed)", ["layer", "outcome"])
CACHE_ERRORS = Counter(
    "book_cache_errors_total", "Result cache operations that failed (the request is computed "
    "without it)", ["layer", "operation"])
REFUSALS = Counter(
    "book_refusals_total", "Requests refused with 429 or 503, by reason", ["status", "reason"])
WARMING = Gauge(
    "book_workers_warming", "Workers still warming their widgets after start",
    multiprocess_mode="livesum")

# Why a request was refused, as errors.py and site.py say it (anything else is "other").
REASONS = {"rate_limit", "queue_full", "queue_timeout", "timing_lock", "model_unavailable",
           "no_site", "unavailable", "other"}
METHODS = {"GET", "HEAD", "POST", "OPTIONS"}
# A request id a client or proxy sent is kept when it looks like one (nginx's $request_id is
# 32 hex digits; a UUID has dashes); anything else is replaced, so a log line never carries
# what a reader typed.
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{8,128}")

bp = Blueprint("metrics", __name__)


def multiprocess_mode() -> bool:
    """Whether prometheus_client keeps its values in the multiprocess folder (decided when it
    was first imported)."""
    return bool(getattr(values.ValueClass, "_multiprocess", False))


@bp.get("/metrics")
def scrape():
    if multiprocess_mode():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    # the text format Prometheus asks for (OpenMetrics when its Accept says so)
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    resp = Response(encode(registry), content_type=content_type)
    resp.headers["Cache-Control"] = "no-store"
    return resp


def refuse(reason: str, detail: str) -> None:
    """Mark this request's answer as a refusal for `reason` (counted and logged once, when it
    leaves); `detail` goes to the log only."""
    g.refusal = (reason if reason in REASONS else "other", detail)


def request_id() -> str:
    return g.get("request_id") or "-"


def cache_lookup(layer: str, hit: bool) -> None:
    CACHE_LOOKUPS.labels(layer, "hit" if hit else "miss").inc()


def _widget_label() -> str:
    name = (request.view_args or {}).get("name")
    return name if name in WIDGETS else ""


def init_app(app: Flask) -> None:
    """Before the rate limit's own hook (create_app calls this first), so a request it refuses
    is timed, counted and given its id as well."""
    if app.config["METRICS"]:
        app.register_blueprint(bp)

    @app.before_request
    def start():
        g.metrics_start = time.perf_counter()
        sent = request.headers.get("X-Request-Id", "")
        g.request_id = sent if REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex

    @app.after_request
    def finish(resp):
        resp.headers["X-Request-Id"] = request_id()
        if request.endpoint == "metrics.scrape":
            return resp
        route = request.url_rule.rule if request.url_rule else "unmatched"
        widget = _widget_label()
        method = request.method if request.method in METHODS else "other"
        REQUESTS.labels(route, widget, method, str(resp.status_code)).inc()
        start = g.get("metrics_start")
        if start is not None:
            REQUEST_SECONDS.labels(route, widget).observe(time.perf_counter() - start)
        if resp.status_code in (429, 503):
            reason, detail = g.get("refusal") or ("other", "")
            REFUSALS.labels(str(resp.status_code), reason).inc()
            # One line, no traceback: a refusal is the server working as designed.
            app.logger.warning("refused %s %s: %d %s (client %s, request %s)%s",
                               request.method, request.path, resp.status_code, reason,
                               request.remote_addr, request_id(),
                               f": {detail}" if detail else "")
        return resp
