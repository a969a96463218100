"""The real server process: what only shows up with gunicorn's workers and their warm-up."""

from __future__ import annotations

import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from tests.support.api import http_post as post


def test_first_requests_race_the_warm_up_and_all_succeed(built_site, start_gunicorn):
    """Fresh workers warm their models in a background thread; requests arriving at the same
    moment must wait for the load, not see a half-imported library (a real bug, once)."""
    bodies = [("attention_map", {"model": "minilm", "text": f"It was tired {i}"}) for i in range(4)]
    bodies += [("attention_map", {"model": "book", "text": f"It was wide {i}"}) for i in range(2)]
    bodies += [("attention_scaling", {"d_k": 3 + i}) for i in range(2)]
    with start_gunicorn(built_site, workers=2) as srv:
        base = srv.base
        with ThreadPoolExecutor(len(bodies)) as pool:
            results = list(pool.map(lambda wb: post(base, *wb), bodies))
    assert [status for status, _ in results] == [200] * len(bodies), str([(s, b.get("error")) for s, b in results if s != 200])
    assert results[0][1]["values"]["model"] == "minilm"


def test_health_says_warming_until_each_worker_has_warmed(start_gunicorn, tmp_path):
    """/api/health's `warming` (what a readiness probe may wait on) is false once every worker
    has logged the end of its warm-up, and a reader who came meanwhile got a computed answer."""
    log = tmp_path / "gunicorn.log"
    with start_gunicorn("/nonexistent", workers=2, log=log) as srv:
        status, body = post(srv.base, "attention_scaling", {"d_k": 5})
        assert status == 200 and body["cached"] is False
        deadline = time.monotonic() + 120
        while log.read_text().count("warm-up done in") < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert log.read_text().count("warm-up done in") == 2, log.read_text()[-2000:]
        answers = []
        for _ in range(6):  # whichever worker answers
            with urllib.request.urlopen(srv.base + "/api/health", timeout=10) as r:
                answers.append(json.loads(r.read())["warming"])
    assert answers == [False] * 6
