"""Metrics, request ids and refusal logs (backend/app/metrics.py): a scrape of /metrics counts
requests by route, widget and status, times them, counts computations, the compute queue and
the result cache by layer, counts every 429 and 503 by reason and logs each once; /api/health
reports the queue; every answer carries a request id. A live gunicorn with two workers answers
one scrape for both.

The in-process metrics belong to the test process and add up across tests: each test compares
a scrape after its requests with one before them."""

from __future__ import annotations

import glob
import http.client
import logging
import os
import re
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from backend.app import create_app, metrics
from backend.compute import REGISTRY
from backend.errors import ModelUnavailable
from tests.support.server import serve

RESULT = "/api/widgets/attention_scaling/result"
ROUTE = "/api/widgets/<name>/result"


def _app(tmp_path, **config):
    return create_app({"TESTING": True, "SITE_DIR": str(tmp_path / "no-site"), **config})


def parse(text: str) -> dict[tuple, float]:
    """{(sample name, sorted label pairs): value} of a scrape."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scrape(client) -> dict[tuple, float]:
    resp = client.get("/metrics")
    assert resp.status_code == 200
    assert resp.headers["Cache-Control"] == "no-store"
    return parse(resp.get_data(as_text=True))


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before: dict, after: dict, name: str, **labels) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def requests_counted(before, after, route, widget, status, method="GET") -> float:
    return delta(before, after, "book_requests_total", route=route, widget=widget,
                 method=method, status=str(status))


def test_a_scrape_counts_requests_by_route_widget_and_status(tmp_path):
    client = _app(tmp_path).test_client()
    before = scrape(client)
    assert client.get(RESULT + "?d_k=16").status_code == 200
    assert client.get(RESULT + "?d_k=16").status_code == 200
    assert client.get(RESULT + "?d_k=0").status_code == 400
    assert client.post("/api/widgets/attention_scaling", json={"d_k": 16}).status_code == 200
    assert client.get("/api/widgets/no_such_widget/result?x=1").status_code == 404
    assert client.get("/api/health").status_code == 200
    after = scrape(client)
    assert requests_counted(before, after, ROUTE, "attention_scaling", 200) == 2
    assert requests_counted(before, after, ROUTE, "attention_scaling", 400) == 1
    assert requests_counted(before, after, "/api/widgets/<name>", "attention_scaling", 200,
                            method="POST") == 1
    # an unknown name is no label of its own: the label set stays the registry's
    assert requests_counted(before, after, ROUTE, "", 404) == 1
    assert requests_counted(before, after, "/api/health", "", 200) == 1
    widgets = {dict(labels).get("widget") for (name, labels) in after
               if name == "book_requests_total"}
    assert widgets <= set(REGISTRY) | {""}
    # the latency histogram, per route and widget: one observation per request
    assert delta(before, after, "book_request_duration_seconds_count", route=ROUTE,
                 widget="attention_scaling") == 3
    assert delta(before, after, "book_request_duration_seconds_bucket", route=ROUTE,
                 widget="attention_scaling", le="+Inf") == 3
    assert ("book_request_duration_seconds_bucket",
            (("le", "0.1"), ("route", ROUTE), ("widget", "attention_scaling"))) in after
    # computed once (the repeat and the POST came from the cache), its compute time recorded
    assert delta(before, after, "book_compute_seconds_count", widget="attention_scaling") == 1
    assert delta(before, after, "book_compute_seconds_sum", widget="attention_scaling") > 0


def test_a_scrape_does_not_count_itself_and_is_not_rate_limited(tmp_path):
    client = _app(tmp_path, RATE_LIMIT="1/minute").test_client()
    first = scrape(client)
    for _ in range(5):
        second = scrape(client)
    assert not [k for k in second if dict(k[1]).get("route") == "/metrics"]
    assert {k: v for k, v in first.items() if k[0].startswith("book_requests")} == \
           {k: v for k, v in second.items() if k[0].startswith("book_requests")}


def test_cache_lookups_are_counted_by_layer(tmp_path):
    client = _app(tmp_path).test_client()
    before = scrape(client)
    first = client.get(RESULT + "?d_k=24")
    assert first.status_code == 200 and first.get_json()["cached"] is False
    assert client.get(RESULT + "?d_k=24").get_json()["cached"] is True
    revalidated = client.get(RESULT + "?d_k=24", headers={"If-None-Match": first.headers["ETag"]})
    assert revalidated.status_code == 304
    after = scrape(client)
    assert delta(before, after, "book_cache_lookups_total", layer="etag", outcome="hit") == 1
    assert delta(before, after, "book_cache_lookups_total", layer="etag", outcome="miss") == 2
    # the 304 never reached the result cache
    assert delta(before, after, "book_cache_lookups_total", layer="memory", outcome="miss") == 1
    assert delta(before, after, "book_cache_lookups_total", layer="memory", outcome="hit") == 1
    assert requests_counted(before, after, ROUTE, "attention_scaling", 304) == 1


def test_the_redis_layer_and_its_failures_are_counted(tmp_path, redis_server):
    client = _app(tmp_path, CACHE_URL=redis_server.url).test_client()
    url = "/api/widgets/attention_scaling"
    before = scrape(client)
    assert client.post(url, json={"seed": 41}).get_json()["cached"] is False
    assert client.post(url, json={"seed": 41}).get_json()["cached"] is True
    redis_server.stop()
    assert client.post(url, json={"seed": 41}).status_code == 200  # computed without it
    after = scrape(client)
    assert delta(before, after, "book_cache_lookups_total", layer="redis", outcome="hit") == 1
    assert delta(before, after, "book_cache_lookups_total", layer="redis", outcome="miss") == 2
    assert delta(before, after, "book_cache_errors_total", layer="redis", operation="get") == 1


def _refusal_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("refused ")]


def test_a_429_is_counted_and_logged_once_with_its_reason(tmp_path, caplog):
    client = _app(tmp_path, RATE_LIMIT="2/minute").test_client()
    before = scrape(client)
    with caplog.at_level(logging.WARNING):
        codes = [client.get("/api/widgets", headers={"X-Request-Id": f"rate-test-{i:04d}"}
                            ).status_code for i in range(3)]
    assert codes == [200, 200, 429]
    after = scrape(client)
    assert delta(before, after, "book_refusals_total", status="429", reason="rate_limit") == 1
    assert requests_counted(before, after, "/api/widgets", "", 429) == 1
    (line,) = _refusal_lines(caplog)
    text = line.getMessage()
    assert "429 rate_limit" in text and "GET /api/widgets" in text and "rate-test-0002" in text
    assert "too many requests" in text and line.exc_info is None


def test_a_503_from_a_full_queue_is_counted_and_logged_once_with_its_reason(tmp_path, caplog):
    app = _app(tmp_path, MAX_CONCURRENT_COMPUTES=1, COMPUTE_WAIT_SECONDS=0,
               HEAVY_WAIT_SECONDS=0)
    client = app.test_client()
    slots = app.extensions["book_fair_queue"]
    before = scrape(client)
    slots.queue.acquire("another reader", 0)  # the worker's one slot is taken
    try:
        with caplog.at_level(logging.WARNING):
            resp = client.get(RESULT + "?d_k=40")
    finally:
        slots.queue.release("another reader")
    assert resp.status_code == 503 and resp.headers["Retry-After"]
    after = scrape(client)
    assert delta(before, after, "book_refusals_total", status="503", reason="queue_timeout") == 1
    assert requests_counted(before, after, ROUTE, "attention_scaling", 503) == 1
    assert delta(before, after, "book_queue_wait_seconds_count", queue="widgets") == 2
    (line,) = _refusal_lines(caplog)
    assert "503 queue_timeout" in line.getMessage() and line.exc_info is None
    assert resp.headers["X-Request-Id"] in line.getMessage()


def test_a_model_that_cannot_load_is_one_log_line_with_its_cause(tmp_path, caplog, monkeypatch):
    def broken(params):
        try:
            raise OSError("/srv/models/secret.bin: not found")
        except OSError as exc:
            raise ModelUnavailable("the model could not be loaded on this server") from exc

    monkeypatch.setattr(REGISTRY["attention_scaling"], "compute", broken)
    client = _app(tmp_path).test_client()
    before = scrape(client)
    with caplog.at_level(logging.WARNING):
        resp = client.get(RESULT + "?d_k=44")
    assert resp.status_code == 503 and "secret.bin" not in resp.get_data(as_text=True)
    after = scrape(client)
    assert delta(before, after, "book_refusals_total", status="503",
                 reason="model_unavailable") == 1
    (line,) = _refusal_lines(caplog)
    assert "secret.bin" in line.getMessage() and line.exc_info is None  # the cause, for the log
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1


def test_health_and_the_gauges_report_the_queue(tmp_path):
    app = _app(tmp_path, MAX_CONCURRENT_COMPUTES=1)
    client = app.test_client()
    slots = app.extensions["book_fair_queue"]
    idle = client.get("/api/health").get_json()
    assert {"status", "device", "torch", "warming", "accelerator", "limits"} <= set(idle)
    assert idle["queue"]["widgets"] == {"slots": 1, "computing": 0, "waiting": 0, "places": 16}
    assert idle["queue"]["models"]["waiting"] == 0
    slots.queue.acquire("a", 0)
    waiter = threading.Thread(target=slots.queue.acquire, args=("b", 60))
    waiter.start()
    try:
        deadline = time.monotonic() + 30
        while client.get("/api/health").get_json()["queue"]["widgets"]["waiting"] != 1:
            assert time.monotonic() < deadline, "the waiting request never showed"
            time.sleep(0.01)
        body = client.get("/api/health").get_json()
        assert body["queue"]["widgets"] == {"slots": 1, "computing": 1, "waiting": 1,
                                            "places": 16}
        now = scrape(client)
        assert value(now, "book_queue_waiting", queue="widgets") == 1
        assert value(now, "book_queue_running", queue="widgets") == 1
    finally:
        slots.queue.release("a")
        waiter.join(30)
        slots.queue.release("b")
    done = scrape(client)
    assert value(done, "book_queue_waiting", queue="widgets") == 0
    assert value(done, "book_queue_running", queue="widgets") == 0


def test_every_answer_carries_a_request_id(tmp_path):
    client = _app(tmp_path, RATE_LIMIT="1/minute").test_client()
    sent = client.get("/api/health", headers={"X-Request-Id": "0f3c2a9e-lecture-7"})
    assert sent.headers["X-Request-Id"] == "0f3c2a9e-lecture-7"
    made = [client.get("/api/widgets").headers["X-Request-Id"] for _ in range(2)]  # 200, 429
    assert all(re.fullmatch(r"[0-9a-f]{32}", m) for m in made) and made[0] != made[1]
    for odd in ("short", "has space in it", "x" * 200, "<script>alert(1)</script>"):
        echoed = client.get("/api/nothing", headers={"X-Request-Id": odd}).headers["X-Request-Id"]
        assert echoed != odd and re.fullmatch(r"[0-9a-f]{32}", echoed)


def test_metrics_can_be_turned_off(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>book</p>")
    client = create_app({"TESTING": True, "SITE_DIR": str(site), "METRICS": False}).test_client()
    assert client.get("/metrics").status_code == 404
    assert client.get("/api/health").headers["X-Request-Id"]


def test_refusal_reasons_are_the_ones_the_code_gives():
    """Every reason a Busy is raised with, or a handler passes, is one the metric knows."""
    root = Path(__file__).resolve().parents[2] / "backend"
    given = set()
    for path in root.rglob("*.py"):
        text = path.read_text()
        given |= set(re.findall(r'reason="([a-z_]+)"', text))
        given |= set(re.findall(r'_busy\([^)]*"([a-z_]+)"\)', text))
        given |= set(re.findall(r'refuse\("([a-z_]+)"', text))
    assert {"queue_full", "queue_timeout", "timing_lock", "rate_limit", "model_unavailable",
            "no_site", "unavailable"} <= given
    assert given <= metrics.REASONS


# ------------------------------------------------------------------------- a live gunicorn

def _get(port: int, path: str, request_id: str | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)  # a new connection each
    try:
        conn.request("GET", path, headers={"X-Request-Id": request_id} if request_id else {})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def _metrics_dir(workers: list[int]) -> Path:
    """The server's multiprocess folder: the one holding its workers' files."""
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), "book-metrics-*")):
        if any(Path(folder, f"gauge_livesum_{pid}.db").exists() or
               Path(folder, f"histogram_{pid}.db").exists() for pid in workers):
            return Path(folder)
    raise AssertionError("no metrics folder holds the workers' files")


def _health_count(files: list[str]) -> float:
    """book_requests_total for /api/health in these processes' files."""
    return sum(s.value for metric in MultiProcessCollector.merge(files, accumulate=True)
               for s in metric.samples if s.name == "book_requests_total"
               and s.labels.get("route") == "/api/health")


@pytest.mark.slow
def test_one_scrape_adds_up_every_gunicorn_worker(tmp_path):
    log = tmp_path / "gunicorn.log"
    with serve(tmp_path / "no-site", workers=2, log=log,
               env={"BOOK_RATE_LIMIT": "3/minute", "BOOK_ACCESS_LOG": None}) as server:
        workers = server.workers()
        assert len(workers) == 2
        folder = _metrics_dir(workers)
        # Requests on new connections until each worker has answered some: the kernel hands
        # each connection to one of them.
        for i in range(400):
            _get(server.port, "/api/health", f"live-health-{i:04d}")
            per_worker = [_health_count([str(folder / f"counter_{pid}.db")])
                          if (folder / f"counter_{pid}.db").exists() else 0 for pid in workers]
            if all(per_worker):
                break
        assert all(per_worker), f"one worker answered every request: {per_worker}"
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        body = resp.read().decode()
        assert resp.status == 200
        total = _health_count(glob.glob(str(folder / "counter_*.db")))
        samples = parse(body)
        scraped = sum(v for (name, labels), v in samples.items()
                      if name == "book_requests_total" and dict(labels)["route"] == "/api/health")
        assert scraped == total >= sum(per_worker)
        # 429s: each worker keeps its own counters without Redis, so 3 a minute each
        codes = [_get(server.port, "/api/widgets") for _ in range(12)]
        assert 429 in codes
        # a worker that dies leaves the live gauges (its queue, its warming) and stays in the
        # totals
        gone = workers[0]
        os.kill(gone, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while (folder / f"gauge_livesum_{gone}.db").exists():
            assert time.monotonic() < deadline, "the dead worker's gauges were never dropped"
            time.sleep(0.1)
        assert (folder / f"counter_{gone}.db").exists()
    assert not folder.exists()  # removed by the master when it stopped
    text = log.read_text()
    lines = text.splitlines()
    refused = [i for i, line in enumerate(lines) if "refused GET /api/widgets" in line]
    assert len(refused) == codes.count(429)
    for i in refused:  # one line each, no traceback after it
        assert "429 rate_limit" in lines[i] and "too many requests" in lines[i]
        assert i + 1 == len(lines) or not lines[i + 1].startswith("Traceback")
    # the access log, on by default: latency and the request id each request was sent with
    assert re.search(r'"GET /api/health HTTP/1.1" 200 \d+ \d+ms id=live-health-0000 ', text)
