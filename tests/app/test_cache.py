"""The result cache (Flask-Caching): in-process by default, one Redis shared by every worker
and replica when `BOOK_CACHE_URL` names one, and a Redis that goes away means computing, not
a 500. Redis tests start a real `redis-server` (`make test` installs Debian's under CI)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from backend.app import create_app
from backend.compute import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
URL = "/api/widgets/attention_scaling"


def _app(tmp_path, **config):
    return create_app({"TESTING": True, "SITE_DIR": str(tmp_path), **config})


def test_memory_cache_answers_repeats_and_keys_on_resolved_params(tmp_path):
    client = _app(tmp_path).test_client()
    assert client.post(URL, json={"seed": 11}).get_json()["cached"] is False
    again = client.post(URL, json={"seed": 11}).get_json()
    assert again["cached"] is True
    # {} and the defaults spelled out are one setting, so one entry
    assert client.post(URL, json={}).get_json()["cached"] is False
    explicit = REGISTRY["attention_scaling"].SPEC.defaults()
    assert client.post(URL, json=explicit).get_json()["cached"] is True
    # another widget with the same params is another entry
    assert client.post("/api/widgets/enc_dec_masks", json={}).get_json()["cached"] is False


def test_memory_cache_is_per_process(tmp_path):
    a, b = _app(tmp_path).test_client(), _app(tmp_path).test_client()
    assert a.post(URL, json={"seed": 12}).get_json()["cached"] is False
    assert b.post(URL, json={"seed": 12}).get_json()["cached"] is False


def test_redis_cache_is_shared_between_two_processes(tmp_path, redis_server):
    client = _app(tmp_path, CACHE_URL=redis_server.url).test_client()
    first = client.post(URL, json={"seed": 13}).get_json()
    assert first["cached"] is False
    # another process (another worker or replica) with the same BOOK_CACHE_URL
    script = ("import json; from backend.app import create_app; "
              "c = create_app({'TESTING': True}).test_client(); "
              "r = c.post('/api/widgets/attention_scaling', json={'seed': 13}).get_json(); "
              "print(json.dumps({'cached': r['cached'], 'values': r['values']}))")
    env = {**os.environ, "BOOK_CACHE_URL": redis_server.url, "BOOK_SITE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    other = json.loads(proc.stdout.strip().splitlines()[-1])
    assert other == {"cached": True, "values": first["values"]}


def test_redis_entries_expire_after_the_ttl(tmp_path, redis_server):
    client = _app(tmp_path, CACHE_URL=redis_server.url, CACHE_TTL_SECONDS=1).test_client()
    assert client.post(URL, json={"seed": 14}).get_json()["cached"] is False
    assert client.post(URL, json={"seed": 14}).get_json()["cached"] is True
    time.sleep(2.2)
    assert client.post(URL, json={"seed": 14}).get_json()["cached"] is False


def test_rate_counters_are_shared_through_redis(tmp_path, redis_server):
    config = {"CACHE_URL": redis_server.url, "RATE_LIMIT": "3/minute"}
    a, b = _app(tmp_path, **config).test_client(), _app(tmp_path, **config).test_client()
    codes = [c.post(URL, json={"seed": 15}).status_code for c in (a, b, a, b)]
    assert codes == [200, 200, 200, 429]


def test_a_redis_that_goes_away_means_computing_not_a_500(tmp_path, redis_server, caplog):
    client = _app(tmp_path, CACHE_URL=redis_server.url, RATE_LIMIT="100/second").test_client()
    assert client.post(URL, json={"seed": 16}).get_json()["cached"] is False
    assert client.post(URL, json={"seed": 16}).get_json()["cached"] is True
    redis_server.stop()
    with caplog.at_level(logging.WARNING):
        t0 = time.perf_counter()
        r = client.post(URL, json={"seed": 16})
        took = time.perf_counter() - t0
    assert r.status_code == 200 and r.get_json()["cached"] is False
    assert any("result cache (redis) get failed" in m for m in caplog.messages)
    assert took < 10
    # for the next few seconds the cache is skipped (no connection attempt per request)
    assert client.post(URL, json={"seed": 17}).status_code == 200


def test_no_redis_at_all_at_start_still_serves(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = f"redis://127.0.0.1:{port}/0"
    client = _app(tmp_path, CACHE_URL=dead, RATE_LIMIT="100/second").test_client()
    r = client.post(URL, json={"seed": 18})
    assert r.status_code == 200 and r.get_json()["cached"] is False


def _raw(server):
    import redis

    return redis.Redis(host="127.0.0.1", port=server.port, password=server.password)


def _result_keys(raw):
    return [k for k in raw.keys("book:result:*") if b":attention_scaling:" in k]


def test_redis_holds_results_as_json_not_pickles(tmp_path, redis_server):
    client = _app(tmp_path, CACHE_URL=redis_server.url).test_client()
    answer = client.post(URL, json={"seed": 15}).get_json()
    (key,) = _result_keys(_raw(redis_server))
    stored = _raw(redis_server).get(key)
    assert not stored.startswith(b"!")  # cachelib's mark for a pickle
    assert json.loads(stored)["values"] == answer["values"]


class _Planted:
    """What an attacker who can write to the Redis would plant: a pickle that acts when loaded
    (here it only creates a file, so the test can see whether it ran)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_pickle_planted_in_redis_is_never_loaded(tmp_path, redis_server):
    import pickle

    client = _app(tmp_path, CACHE_URL=redis_server.url).test_client()
    first = client.post(URL, json={"seed": 16}).get_json()
    raw = _raw(redis_server)
    (key,) = _result_keys(raw)
    marker = tmp_path / "pickle-ran"
    raw.set(key, b"!" + pickle.dumps(_Planted(marker)))  # cachelib's pickle framing
    again = client.post(URL, json={"seed": 16}).get_json()
    assert not marker.exists()
    assert again["cached"] is False and again["values"] == first["values"]  # a miss, recomputed
    raw.set(key, b"[1, 2, 3]")  # JSON, but not a result: also a miss
    assert client.post(URL, json={"seed": 16}).get_json()["cached"] is False


def test_a_redis_with_a_password_is_used_with_book_cache_password(tmp_path, redis_with_password):
    url = redis_with_password.url
    good = _app(tmp_path, CACHE_URL=url, CACHE_PASSWORD=redis_with_password.password)
    client = good.test_client()
    assert client.post(URL, json={"seed": 17}).get_json()["cached"] is False
    assert client.post(URL, json={"seed": 17}).get_json()["cached"] is True
    assert good.extensions["book_result_cache"].errors == 0
    assert _result_keys(_raw(redis_with_password))  # the entry is in that Redis
    # Without the password the Redis refuses: computed every time, never a 500.
    bare = _app(tmp_path, CACHE_URL=url)
    other = bare.test_client()
    response = other.post(URL, json={"seed": 17})
    assert response.status_code == 200 and response.get_json()["cached"] is False
    assert bare.extensions["book_result_cache"].errors >= 1


def test_a_widgets_own_shorter_ttl_bounds_how_long_its_results_are_kept(tmp_path, monkeypatch):
    """`WidgetSpec.result_ttl` (measured widgets: a timing is of one moment) caps the configured
    TTL; it never lengthens it."""
    import dataclasses

    from backend.app.result_cache import ResultCache
    module = REGISTRY["attention_scaling"]
    monkeypatch.setattr(module, "SPEC", dataclasses.replace(module.SPEC, result_ttl=1))
    client = _app(tmp_path).test_client()
    assert client.post(URL, json={"seed": 15}).get_json()["cached"] is False
    assert client.post(URL, json={"seed": 15}).get_json()["cached"] is True
    time.sleep(2.2)
    assert client.post(URL, json={"seed": 15}).get_json()["cached"] is False
    seen = []
    app = _app(tmp_path, CACHE_TTL_SECONDS=5)
    cache: ResultCache = app.extensions["book_result_cache"]
    monkeypatch.setattr(cache.cache, "set", lambda k, v, timeout=None: seen.append(timeout))
    cache.put("a", {}, 600)
    cache.put("b", {}, 2)
    cache.put("c", {})
    assert seen == [5, 2, None]
    assert REGISTRY["kv_decode"].SPEC.result_ttl <= 600  # timings: minutes, not a day


_ASK = ("import json; from backend.app import create_app; "
        "c = create_app({'TESTING': True}).test_client(); "
        "r = c.get('/api/widgets/attention_scaling/result?seed=14'); "
        "print(json.dumps({'cached': r.get_json()['cached'], 'etag': r.headers['ETag']}))")


def _ask_from(tree: Path, redis_url: str, site: Path) -> dict:
    """The answer, from a process running the code in `tree`, sharing one Redis."""
    env = {**os.environ, "BOOK_CACHE_URL": redis_url, "BOOK_SITE_DIR": str(site),
           "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", _ASK], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_release_never_reads_the_previous_codes_answers(tmp_path, redis_server):
    """Issue 35, item 1 (code review H1): two processes sharing one Redis, the code changed
    between them. The second release computes afresh, under another ETag; the same code in
    another process is answered from the shared cache (so the first half can fail)."""
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "backend", tree / "backend",
                    ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp_path / "site"
    site.mkdir()
    first = _ask_from(tree, redis_server.url, site)
    same = _ask_from(tree, redis_server.url, site)
    assert first["cached"] is False and same == {"cached": True, "etag": first["etag"]}
    widget = tree / "backend" / "compute" / "attention_scaling.py"
    widget.write_text(widget.read_text("utf-8") + "\n# the next release\n", "utf-8")
    after = _ask_from(tree, redis_server.url, site)
    assert after["cached"] is False and after["etag"] != first["etag"]
