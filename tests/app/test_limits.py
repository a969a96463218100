"""The guards: Flask-Limiter's rate limit per address, the fair bounded compute queue, and a
live gunicorn where one flooding client does not starve a polite one, a full queue answers
503 + Retry-After at once, and a whole class behind one address is never throttled."""

from __future__ import annotations

import http.client
import statistics
import threading
import time
from pathlib import Path

import pytest
from limits import parse_many

from backend import settings
from backend.app import create_app
from backend.app.limits import Busy, FairQueue

URL = "/api/widgets/attention_scaling"


# ------------------------------------------------------------------------ fair queue, unit

def _waiter(queue, client, timeout, log, hold=0.0):
    def run():
        try:
            queue.acquire(client, timeout)
        except Busy:
            log.append((client, "busy"))
            return
        log.append((client, "granted"))
        time.sleep(hold)
        queue.release(client)
    t = threading.Thread(target=run)
    t.start()
    return t


def _settle(queue, n_waiting):
    deadline = time.monotonic() + 5
    while queue.n_waiting != n_waiting and time.monotonic() < deadline:
        time.sleep(0.005)
    assert queue.n_waiting == n_waiting


def test_a_freed_slot_goes_to_the_client_running_the_fewest():
    q = FairQueue(slots=1, places=10)
    q.acquire("flood", 1)                     # the flooder computes...
    log: list = []
    threads = [_waiter(q, "flood", 5, log) for _ in range(4)]   # ...and queues four more
    _settle(q, 4)
    threads.append(_waiter(q, "polite", 5, log))                 # the polite one arrives last
    _settle(q, 5)
    q.release("flood")
    for t in threads:
        t.join()
    assert log[0] == ("polite", "granted")   # served next, ahead of the four that came first
    assert [c for c, _ in log[1:]] == ["flood"] * 4


def test_a_client_alone_may_use_every_slot():
    q = FairQueue(slots=3, places=4)
    for _ in range(3):
        q.acquire("class", 0)                 # no wait: the whole class behind one address
    assert q.free == 0 and q.running["class"] == 3


def test_a_full_queue_refuses_the_hog_and_makes_room_for_others():
    q = FairQueue(slots=1, places=3)
    q.acquire("flood", 1)
    log: list = []
    threads = [_waiter(q, "flood", 5, log) for _ in range(3)]
    _settle(q, 3)
    with pytest.raises(Busy) as info:          # the queue is full and this client fills it
        q.acquire("flood", 5)
    assert info.value.retry_after >= 1  # the app answers it 503 with Retry-After
    threads.append(_waiter(q, "polite", 5, log))  # another client takes the hog's newest place
    deadline = time.monotonic() + 5
    while ("flood", "busy") not in log and time.monotonic() < deadline:
        time.sleep(0.005)
    assert ("flood", "busy") in log and q.n_waiting == 3
    q.release("flood")
    for t in threads:
        t.join()
    assert log[1] == ("polite", "granted")
    assert q.free == 1 and not q.running and not q.waiting


def test_waiting_longer_than_the_limit_is_503_and_leaves_no_trace():
    q = FairQueue(slots=1, places=4)
    q.acquire("a", 0)
    t0 = time.monotonic()
    with pytest.raises(Busy):
        q.acquire("b", 0.05)
    assert time.monotonic() - t0 < 1
    assert q.n_waiting == 0 and not q.waiting
    q.release("a")
    q.acquire("b", 0)


# ----------------------------------------------------------------------- through the app

def test_rate_limit_is_429_json_with_retry_after(tmp_path):
    app = create_app({"TESTING": True, "RATE_LIMIT": "3/minute", "SITE_DIR": str(tmp_path)})
    client = app.test_client()
    codes = [client.post(URL, json={"d_k": 2}).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    r = client.post(URL, json={"d_k": 2})
    assert "too many requests from your address" in r.get_json()["error"]
    assert r.is_json and 1 <= int(r.headers["Retry-After"]) <= 61
    # another address has its own allowance; pages and the liveness probe are not limited
    other = client.post(URL, json={"d_k": 2}, environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert other.status_code == 200
    assert client.get("/api/health").status_code == 200
    assert client.get("/").status_code == 503  # the unbuilt book, not a 429


def test_the_client_address_honours_trusted_proxies(tmp_path):
    def codes(proxies):
        app = create_app({"TESTING": True, "RATE_LIMIT": "2/minute", "SITE_DIR": str(tmp_path),
                          "TRUSTED_PROXIES": proxies})
        c = app.test_client()
        return [c.post(URL, json={"d_k": 2},
                       headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
                for i in range(4)]
    assert codes(0) == [200, 200, 429, 429]   # X-Forwarded-For is not trusted by default
    assert codes(1) == [200] * 4              # behind one proxy: four readers, four addresses


def test_cached_answers_never_wait_for_a_slot(tmp_path):
    app = create_app({"TESTING": True, "MAX_CONCURRENT_COMPUTES": 1,
                      "COMPUTE_WAIT_SECONDS": 0.05, "SITE_DIR": str(tmp_path)})
    client = app.test_client()
    assert client.post(URL, json={"d_k": 3}).status_code == 200
    queue = app.extensions["book_limits"].queue
    queue.acquire("someone else", 0)           # every slot is busy
    try:
        assert client.post(URL, json={"d_k": 3}).get_json()["cached"] is True
        r = client.post(URL, json={"d_k": 4})  # a new computation must wait, then 503
        assert r.status_code == 503 and r.headers["Retry-After"] == "1"
        assert "busy" in r.get_json()["error"]
    finally:
        queue.release("someone else")
    assert client.post(URL, json={"d_k": 4}).status_code == 200


def test_heavy_widgets_run_one_at_a_time_and_light_ones_still_pass(tmp_path):
    app = create_app({"TESTING": True, "COMPUTE_WAIT_SECONDS": 0.05, "HEAVY_WAIT_SECONDS": 0.05,
                      "SITE_DIR": str(tmp_path)})
    guard = app.extensions["book_limits"]
    with app.test_request_context():
        with guard.compute_slot(heavy=True):
            with pytest.raises(Busy):
                with guard.compute_slot(heavy=True):
                    pass
            with guard.compute_slot():         # a light widget is not blocked by the heavy one
                pass
    assert guard.queue.free == 2 and guard.heavy.free == 1  # every slot was given back


def test_the_default_limit_leaves_a_lecture_hall_room():
    """500 readers behind one address, a move every 1-3 s each, is about 250 requests/s
    (500 / 2 s); the default allows at least twice that, per second and per minute."""
    class_rate = 500 / 2
    for item in parse_many(settings.load({})["BOOK_RATE_LIMIT"]):
        per_second = item.amount / item.get_expiry()
        assert per_second >= 2 * class_rate, item


def test_the_lecture_hall_configs_leave_a_class_room_too():
    """compose.yaml and the cluster's ConfigMap ship their own limit: the same rule holds."""
    import re

    import yaml

    root = Path(__file__).resolve().parents[2]
    compose = (root / "compose.yaml").read_text()
    shipped = {"compose": re.search(r"BOOK_RATE_LIMIT: \$\{BOOK_RATE_LIMIT:-([^}]+)\}",
                                    compose).group(1),
               "kubernetes": yaml.safe_load((root / "deploy/kubernetes/base/configmap.yaml")
                                            .read_text())["data"]["BOOK_RATE_LIMIT"]}
    for where, limit in shipped.items():
        for item in parse_many(limit):
            assert item.amount / item.get_expiry() >= 2 * 500 / 2, (where, item)


# ----------------------------------------------------------------------- a live gunicorn

def test_a_flooding_client_does_not_starve_a_polite_one(slow_server, post):
    """One slot, 50 ms per computation. A flooder (127.0.0.2) keeps 40 uncached requests in
    flight; a polite reader (127.0.0.3) asks once every 0.3 s. With first-come order the polite
    reader would wait behind the whole queue (16 places x 50 ms ≈ 0.8 s); here it is served next."""
    with slow_server(BOOK_MAX_CONCURRENT="1", BOOK_COMPUTE_WAIT_SECONDS="3",
                     BOOK_RATE_LIMIT="off") as port:
        stop = threading.Event()
        flood: list = []
        seeds = iter(range(1000, 9999))
        lock = threading.Lock()

        def flooder():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                              source_address=("127.0.0.2", 0))
            while not stop.is_set():
                with lock:
                    seed = next(seeds)
                try:
                    status, headers, _, took = post(port, "127.0.0.2", {"seed": seed}, conn=conn)
                except (OSError, http.client.HTTPException):
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30,
                                                      source_address=("127.0.0.2", 0))
                    continue
                flood.append((status, headers.get("Retry-After"), took))
            conn.close()

        threads = [threading.Thread(target=flooder) for _ in range(40)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # the queue is full of the flooder's requests
        polite = []
        for i in range(10):
            status, _, _, took = post(port, "127.0.0.3", {"seed": 10 + i})
            polite.append((status, took))
            time.sleep(0.3)
        stop.set()
        for t in threads:
            t.join()
    assert [s for s, _ in polite] == [200] * 10
    took = sorted(t for _, t in polite)
    print(f"polite reader: median {statistics.median(took) * 1000:.0f} ms, max "
          f"{took[-1] * 1000:.0f} ms; flooder: {len(flood)} answers, "
          f"{sum(s == 503 for s, _, _ in flood)} of them 503")
    assert statistics.median(took) < 0.4
    busy = [f for f in flood if f[0] == 503]
    assert busy and all(r == "1" for _, r, _ in busy)          # refused with Retry-After
    assert {s for s, _, _ in flood} <= {200, 503}
    assert max(t for _, _, t in flood) < 3 + 2                # no pile-up past the wait limit


def test_a_class_behind_one_address_is_never_throttled(slow_server, post):
    """The default limits, 500 readers behind one address moving a slider every 1-3 s: about
    250 requests/s for 4 s, to the ~40 settings a slider has (so most answers are cached)."""
    with slow_server(BOOK_TEST_COMPUTE_SECONDS="0.005") as port:
        statuses: list = []
        rate, seconds, n_threads = 250, 4.0, 25
        start = time.perf_counter() + 0.2

        def reader(k):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            per_thread = rate / n_threads
            for i in range(int(seconds * per_thread)):
                wait = start + (i + k / n_threads) / per_thread - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                status, _, _, _ = post(port, "127.0.0.1", {"d_k": 1 + (i * 7 + k) % 40},
                                        conn=conn)
                statuses.append(status)
            conn.close()

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
    print(f"{len(statuses)} requests in {elapsed:.1f} s ({len(statuses) / elapsed:.0f}/s), "
          f"statuses {sorted(set(statuses))}")
    assert len(statuses) == 1000
    assert set(statuses) == {200}


def test_health_answers_while_every_compute_place_is_taken(slow_server, post):
    """The shipped thread count, computations of 2 s each: 40 readers keep both slots and the
    fair queue full. A health check (what a load balancer or the kubelet asks) still answers at
    once: the computations wait in the fair queue, holding threads the worker has to spare,
    not in gunicorn's queue ahead of it (with the old 4 threads it waited seconds)."""
    with slow_server(BOOK_TEST_COMPUTE_SECONDS="2.0", BOOK_RATE_LIMIT="off") as port:
        stop = threading.Event()
        seeds = iter(range(1000, 9999))
        lock = threading.Lock()
        statuses: list = []

        def flooder():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            while not stop.is_set():
                with lock:
                    seed = next(seeds)
                try:
                    statuses.append(post(port, "127.0.0.1", {"seed": seed}, conn=conn)[0])
                except (OSError, http.client.HTTPException):
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.close()

        threads = [threading.Thread(target=flooder) for _ in range(40)]
        for t in threads:
            t.start()
        time.sleep(2.5)  # both slots busy, the queue full
        health = []
        for _ in range(5):
            status, _, _, took = post(port, "127.0.0.1", {}, path="/api/health", method="GET")
            health.append((status, took))
            time.sleep(0.2)
        stop.set()
        for t in threads:
            t.join()
    print("health during the flood:", [f"{t * 1000:.0f} ms" for _, t in health])
    assert [s for s, _ in health] == [200] * 5
    assert max(t for _, t in health) < 1.0   # a computation alone takes 2 s
    assert 503 in statuses and set(statuses) <= {200, 503}  # the surplus was refused, not held
