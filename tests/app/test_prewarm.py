"""`python -m backend.prewarm` and `make prewarm`: every baked point and every chapter setting,
into Redis or through a running server's API; with neither it says why it cannot warm anything.
Through a server whose workers keep their own caches it says that it warmed only some of them
(review part3 W1: the instructors' page promised a warm server that `make prewarm` never made)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from backend import prewarm
from backend.app import create_app
from backend.compute import REGISTRY


def _docs_settings() -> list[tuple[str, dict]]:
    """Every widget block's params and every value() call's keywords in docs/, read with the
    build's own reader (widgets/build/macros.py): what the manifest must list."""
    import yaml

    from widgets.build import macros

    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for fence in macros.fences(text):
            block = yaml.safe_load(fence.body) if fence.lang == "widget" else None
            if isinstance(block, dict) and "name" in block:
                found.append((block["name"], block.get("params") or {}))
        for _, _, call in macros.calls(text, page.name):
            if call.name == "value":
                kwargs = {k: v for k, v in call.kwargs.items() if k != "fmt"}
                found.append((call.args[0], kwargs))
    return found


def _key(name, params):
    return (name, tuple(sorted(REGISTRY[name].SPEC.resolve(params).items())))


def test_points_cover_every_baked_point_and_the_chapters_settings(built_site):
    todo = prewarm.points(site=built_site)
    keys = {(n, tuple(sorted(p.items()))) for n, p in todo}
    assert len(keys) == len(todo)  # no duplicates
    for name, module in REGISTRY.items():
        for params in module.SPEC.bake_points():
            assert _key(name, params) in keys
    listed = {_key(n, p) for n, p in prewarm.chapter_settings(site=built_site)}
    in_docs = {_key(n, p) for n, p in _docs_settings() if n in REGISTRY}
    assert in_docs <= listed <= keys  # the build listed every setting the pages use
    # A worker's own (memory) cache drops its oldest results beyond its threshold: warming
    # must not push out what it warmed a moment before.
    memory = create_app({"TESTING": True, "SITE_DIR": "/nonexistent"}).extensions["book_result_cache"]
    assert memory.kind == "memory" and len(todo) <= memory.cache.cache._threshold


def test_the_list_comes_from_the_server_when_warming_one(built_site, tmp_path):
    """Warming a server over HTTP reads the list from that server: no docs/ (the image has
    none) and no local build needed."""
    client = create_app({"TESTING": True, "SITE_DIR": str(built_site)}).test_client()
    served = client.get("/" + prewarm.MANIFEST)
    assert served.status_code == 200
    assert prewarm.chapter_settings(site=built_site) == [
        (n, p) for n, p in served.get_json()["settings"]]
    with pytest.raises(prewarm.NoManifest):
        prewarm.chapter_settings(site=tmp_path)  # an unbuilt book
    with pytest.raises(prewarm.NoManifest):
        prewarm.chapter_settings(url="http://127.0.0.1:9")  # nothing listens there


def test_without_redis_or_url_it_explains(monkeypatch, capsys):
    monkeypatch.delenv("BOOK_CACHE_URL", raising=False)
    assert prewarm.main([]) == 2
    assert "--url" in capsys.readouterr().err


SOME = [("attention_scaling", {"d_k": 5, "n_positions": 16, "seed": 0}),
        ("enc_dec_masks", REGISTRY["enc_dec_masks"].SPEC.defaults())]


def test_warms_redis_and_the_server_then_answers_from_it(monkeypatch, capsys, tmp_path,
                                                         redis_server):
    monkeypatch.setenv("BOOK_CACHE_URL", redis_server.url)
    monkeypatch.setattr(prewarm, "points", lambda *a, **k: SOME)
    assert prewarm.main([]) == 0
    assert "2 settings" in capsys.readouterr().out
    client = create_app({"TESTING": True, "SITE_DIR": str(tmp_path)}).test_client()
    for name, params in SOME:
        assert client.post(f"/api/widgets/{name}", json=params).get_json()["cached"] is True
    assert prewarm.main([]) == 0
    assert "0 computed, 2 already cached, 0 failed" in capsys.readouterr().out


def test_warms_a_running_server_over_http(monkeypatch, capsys, slow_server):
    monkeypatch.setattr(prewarm, "points", lambda *a, **k: SOME)
    with slow_server() as port:
        assert prewarm.main(["--url", f"http://127.0.0.1:{port}"]) == 0
        assert "2 computed, 0 already cached" in capsys.readouterr().out
        assert prewarm.main(["--url", f"http://127.0.0.1:{port}/api"]) == 0
        out = capsys.readouterr().out
        assert "0 computed, 2 already cached" in out
        # one worker, one cache: every setting asked again is answered from it
        assert "asked 2 light settings again, 6 times on new connections: every answer came " \
               "from the cache" in out


# Distinct light settings: the slow test server answers each with a fixed sleep.
MANY = [("attention_scaling", {"d_k": 8, "n_positions": 16, "seed": s}) for s in range(12)]


def test_a_server_whose_workers_keep_their_own_caches_is_reported_as_partly_warm(
        monkeypatch, capsys, slow_server):
    """`make serve` without Redis: two workers, two memory caches. Warming over HTTP fills the
    cache of whichever worker answered, and the report must say so rather than claim a warm
    server. (Each ask again lands on the other worker with a fair chance: 36 asks all missing
    it would take a scheduler that never hands the other worker a connection.)"""
    monkeypatch.setattr(prewarm, "points", lambda *a, **k: MANY)
    with slow_server(workers=2) as port:
        assert prewarm.main(["--url", f"http://127.0.0.1:{port}"]) == 0
    out = capsys.readouterr().out
    assert "12 settings" in out and "0 failed" in out
    assert "were computed again. This server's workers do not share one cache" in out
    assert "BOOK_CACHE_URL=redis://" in out and "WEB_CONCURRENCY=1" in out


def test_with_redis_one_pass_warms_every_worker(monkeypatch, capsys, slow_server, redis_server):
    """The page's recipe for a warm class on one machine: the server and the pre-warm share
    BOOK_CACHE_URL. Computed here into Redis, then asked of a two-worker server on fresh
    connections: every answer is a cache hit, whichever worker takes it."""
    monkeypatch.setattr(prewarm, "points", lambda *a, **k: MANY)
    monkeypatch.setenv("BOOK_CACHE_URL", redis_server.url)
    assert prewarm.main([]) == 0
    assert "12 computed, 0 already cached, 0 failed" in capsys.readouterr().out
    with slow_server(workers=2, BOOK_CACHE_URL=redis_server.url) as port:
        assert prewarm.main(["--url", f"http://127.0.0.1:{port}"]) == 0
    out = capsys.readouterr().out
    assert "0 computed, 12 already cached, 0 failed" in out
    assert "asked 12 light settings again, 36 times on new connections: every answer came " \
           "from the cache" in out


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("env, expected", [
    ({}, "-m backend.prewarm --url http://127.0.0.1:8000"),          # make serve's server
    ({"PORT": "9000"}, "-m backend.prewarm --url http://127.0.0.1:9000"),
    ({"URL": "http://127.0.0.1:8080"}, "-m backend.prewarm --url http://127.0.0.1:8080"),
    ({"BOOK_CACHE_URL": "redis://127.0.0.1:6379/0"}, "-m backend.prewarm"),  # straight to Redis
])
def test_make_prewarm_runs_the_command_the_instructors_page_names(env, expected):
    """`make prewarm` with nothing set warms `make serve`'s server (it used to exit 2, 'nothing
    to warm'); with BOOK_CACHE_URL it fills Redis directly; URL= names any other server."""
    base = {k: v for k, v in os.environ.items() if k not in ("URL", "PORT", "BOOK_CACHE_URL")}
    run = subprocess.run(["make", "-n", "prewarm"], cwd=ROOT, env={**base, **env},
                         capture_output=True, text=True, check=True)
    line = [ln for ln in run.stdout.splitlines() if "-m backend.prewarm" in ln][-1]
    assert line.rstrip().endswith(expected)


def test_the_instructors_page_gives_the_commands_tested_here():
    """The page's pre-warm section names the forms the tests above run, says that without Redis
    only some workers get warm, and carries no leftover integration note."""
    from backend import settings

    page = (ROOT / "docs/instructors.md").read_text()
    section = page[page.index("## Before class: warm the cache"):page.index("## How many students")]
    section = " ".join(section.split())  # sentences, whatever the line breaks
    assert "INTEGRATOR" not in page
    assert "make prewarm URL=http://127.0.0.1:8080" in section   # the lecture hall (compose)
    assert "http://127.0.0.1:8000" in section                    # make serve's server, the default
    assert "cached only in the worker that happened to answer" in section
    assert "WEB_CONCURRENCY=1 make serve" in section and "BOOK_CACHE_URL=redis://" in section
    assert "python -m backend.prewarm" not in section  # make prewarm: the venv's python
    default_ttl = next(v.default for v in settings.TABLE if v.name == "BOOK_CACHE_TTL_SECONDS")
    assert default_ttl == 24 * 3600 and "a day by default" in section
