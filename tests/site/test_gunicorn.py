"""The real server process: what only shows up with gunicorn's workers and their warm-up."""

from __future__ import annotations

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
