"""The real server process: what only shows up with gunicorn's workers and their warm-up."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def post(base: str, widget: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(f"{base}/api/widgets/{widget}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_first_requests_race_the_warm_up_and_all_succeed(built_site, start_gunicorn):
    """Fresh workers warm their models in a background thread; requests arriving at the same
    moment must wait for the load, not see a half-imported library (a real bug, once)."""
    bodies = [("attention_map", {"model": "minilm", "text": f"It was tired {i}"}) for i in range(4)]
    bodies += [("attention_map", {"model": "book", "text": f"It was wide {i}"}) for i in range(2)]
    bodies += [("attention_scaling", {"d_k": 3 + i}) for i in range(2)]
    with start_gunicorn(built_site) as base:
        with ThreadPoolExecutor(len(bodies)) as pool:
            results = list(pool.map(lambda wb: post(base, *wb), bodies))
    assert [status for status, _ in results] == [200] * len(bodies), str([(s, b.get("error")) for s, b in results if s != 200])
    assert results[0][1]["values"]["model"] == "minilm"
