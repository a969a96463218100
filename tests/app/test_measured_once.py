"""Heavy widgets at class scale (issue 35, item 4): a measured widget's setting is measured once
per release and device and shared through the result cache. Readers who ask for a setting
while it is being measured wait for that measurement, in every worker and every replica that
shares the cache, instead of queueing their own; the settings the pages offer are kept for the
release, not the widget's ten minutes; the pre-warm fills the keys the workers read."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from backend import prewarm
from backend.app import create_app, offered, release
from backend.compute import REGISTRY

SETTING = "steps=37&prompt_len=1&model=random"  # a kv_decode setting no page offers


def _get(port: int, query: str) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{port}/api/widgets/kv_decode/result?{query}"
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, {}


def _measurements(log) -> list[list]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_two_replicas_sharing_a_cache_measure_a_setting_once(slow_server, redis_server, tmp_path):
    """Two servers (replicas) of two workers each, one Redis and one timing-lock folder, as the
    lecture hall runs them: twelve readers ask for one new setting at once, six at each replica.
    One measurement is taken; the eleven others are answered from it (before, each worker
    measured it again, one after another under the host's lock)."""
    log, lock = tmp_path / "measured.log", tmp_path / "lock"
    lock.mkdir()
    env = {"BOOK_CACHE_URL": redis_server.url, "BOOK_TIMING_LOCK": str(lock),
           "BOOK_TEST_MEASURE_LOG": str(log), "BOOK_TEST_MEASURE_SECONDS": "1.0",
           "BOOK_RATE_LIMIT": "off"}
    with slow_server(workers=2, **env) as a, slow_server(workers=2, **env) as b:
        for query in (SETTING, "steps=38&prompt_len=1&model=random"):
            with ThreadPoolExecutor(12) as pool:
                answers = list(pool.map(_get, [a, b] * 6, [query] * 12))
            assert [status for status, _ in answers] == [200] * 12
            assert sorted(body["cached"] for _, body in answers) == [False] + [True] * 11
        assert len(_measurements(log)) == 2


def _counting_stand_in(monkeypatch, seconds: float = 0.3) -> list:
    calls: list = []

    def measured(params):
        calls.append(dict(params))
        time.sleep(seconds)
        return {"values": {"steps": params["steps"]}, "figure": {"data": [], "layout": {}}}

    monkeypatch.setattr(REGISTRY["kv_decode"], "compute", measured)
    return calls


def test_one_workers_threads_wait_for_the_measurement_in_progress(monkeypatch, tmp_path):
    """Without Redis (one worker's own cache): eight threads asking for one setting at once
    are answered by one measurement."""
    calls = _counting_stand_in(monkeypatch)
    app = create_app({"TESTING": True, "SITE_DIR": str(tmp_path), "RATE_LIMIT": ""})

    def ask(_):
        return app.test_client().get(f"/api/widgets/kv_decode/result?{SETTING}").get_json()

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, range(8)))
    assert len(calls) == 1
    assert sorted(a["cached"] for a in answers) == [False] + [True] * 7


def test_a_failed_measurement_lets_the_next_reader_measure(monkeypatch, tmp_path):
    """A leader whose measurement fails (here: the first call raises) does not leave the
    others waiting for an answer that will never come: the next one measures."""
    calls: list = []

    def flaky(params):
        calls.append(1)
        time.sleep(0.2)
        if len(calls) == 1:
            raise RuntimeError("the first measurement fails")
        return {"values": {}, "figure": {"data": [], "layout": {}}}

    monkeypatch.setattr(REGISTRY["kv_decode"], "compute", flaky)
    app = create_app({"TESTING": True, "SITE_DIR": str(tmp_path), "RATE_LIMIT": ""})
    statuses: list = []

    def ask():
        statuses.append(app.test_client().get(f"/api/widgets/kv_decode/result?{SETTING}").status_code)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(statuses) == [200, 200, 200, 500] and len(calls) == 2


def _ttl_of(redis_url: str, name: str, resolved: dict, app) -> int:
    import redis

    cache = app.extensions["book_result_cache"]
    prefix = cache.cache.cache.key_prefix
    return redis.Redis.from_url(redis_url).ttl(prefix + cache.key(name, resolved))


def test_the_settings_the_pages_offer_are_kept_for_the_release(monkeypatch, tmp_path,
                                                                 redis_server):
    """kv_decode keeps a timing ten minutes (`result_ttl`), except at the settings the pages
    offer (its baked points, the chapters' settings in the site's manifest), which are kept
    for the cache's whole TTL: measured once per release, not once every ten minutes."""
    _counting_stand_in(monkeypatch, 0.0)
    site = tmp_path / "site"
    (site / "assets/book").mkdir(parents=True)
    (site / offered.MANIFEST).write_text(json.dumps({"settings": [["kv_decode", {"steps": 123}]]}))
    app = create_app({"TESTING": True, "SITE_DIR": str(site), "RATE_LIMIT": "",
                      "CACHE_URL": redis_server.url, "CACHE_TTL_SECONDS": 86400})
    client = app.test_client()
    spec = REGISTRY["kv_decode"].SPEC
    kept = {}
    for body in ({}, {"steps": 123}, {"steps": 37}):
        assert client.post("/api/widgets/kv_decode", json=body).status_code == 200
        kept[json.dumps(body)] = _ttl_of(redis_server.url, "kv_decode", spec.resolve(body), app)
    assert kept['{}'] > 3600 and kept['{"steps": 123}'] > 3600   # the default; a chapter's
    assert 0 < kept['{"steps": 37}'] <= spec.result_ttl == 600     # a reader's own setting


@pytest.fixture()
def torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)
    release.release.cache_clear()


def test_the_prewarm_fills_the_keys_a_worker_reads(monkeypatch, capsys, redis_server,
                                                   torch_threads):
    """The cache's keys name the device as a worker describes it, its torch threads included
    (a worker computes with its share of the CPU: gunicorn_conf). A pre-warm straight into Redis
    from a process with another thread count filled keys no worker read; it now computes with
    a worker's threads, so its keys are the workers'."""
    import backend.host

    monkeypatch.setattr(backend.host, "available_cpus", lambda: 4)
    monkeypatch.setenv("BOOK_CPUS", "4")
    monkeypatch.setenv("WEB_CONCURRENCY", "2")   # so a worker computes on 4 // 2 = 2 threads
    monkeypatch.setenv("BOOK_CACHE_URL", redis_server.url)
    torch.set_num_threads(2)
    release.release.cache_clear()
    workers_release = release.release()
    torch.set_num_threads(3)                      # what a plain process here might have
    release.release.cache_clear()
    some = [("attention_scaling", {"d_k": 8, "n_positions": 16, "seed": 41})]
    monkeypatch.setattr(prewarm, "points", lambda *a, **k: some)
    assert prewarm.main([]) == 0
    assert "1 computed" in capsys.readouterr().out
    import redis

    keys = [k.decode() for k in redis.Redis.from_url(redis_server.url).keys("book:result:*")]
    assert keys and all(k.startswith(f"book:result:{workers_release}:") for k in keys)
