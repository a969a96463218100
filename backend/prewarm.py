"""Pre-warm the result cache: every baked point of every widget (`SPEC.bake_points()`) and every
setting the chapters use (a widget block's `params:`, a `{{ value(...) }}` call's keyword
arguments, as the build lists them in the site's `assets/book/settings.json`), so the first
reader of a lecture never waits for a computation.

    python -m backend.prewarm                 # into BOOK_CACHE_URL's Redis, computed here
    python -m backend.prewarm --url http://127.0.0.1:8000   # through a running server's API

(`make prewarm` is the second form for `make serve`'s server, or the first when BOOK_CACHE_URL
is set; `make prewarm URL=...` names another server.)

Only a cache every server worker reads can be warmed for all of them. With BOOK_CACHE_URL
(Redis) every worker and replica shares one, so one pass warms them all. Without it, each worker
keeps its own cache in memory, which no other process can reach: over HTTP a setting lands in
the cache of whichever worker answered. So after warming a server, a few light settings are
asked again on fresh connections; any that is computed again shows that the server's workers do
not share a cache, and the report says so instead of implying the whole server is warm.

Prints how many settings were warmed, how many were already cached, and the time taken; exits
1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from backend import settings
from backend.app import offered

# The settings the pages use, listed by the build (widgets/build/widget_blocks.py writes it into
# the site); the server reads the same list (backend/app/offered.py).
MANIFEST = offered.MANIFEST
NoManifest = offered.NoManifest


def chapter_settings(site: Path | str | None = None, url: str | None = None
                     ) -> list[tuple[str, dict]]:
    """Every (widget, params) the built pages use: read from the built site's manifest, or,
    with `url`, from the server's (so warming a server needs no local copy of the book)."""
    if url:
        where = _api(url)[: -len("/api")] + "/" + MANIFEST
        try:
            with urllib.request.urlopen(where, timeout=30) as resp:
                data = json.load(resp)
            return [(name, params) for name, params in data["settings"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise NoManifest(f"{where}: {exc}") from None
    return offered.manifest_settings(site or settings.get("BOOK_SITE_DIR"))


def points(site: Path | str | None = None, url: str | None = None) -> list[tuple[str, dict]]:
    """Every (widget, resolved params) to warm, without duplicates, baked points first, then
    the settings the built pages use (`chapter_settings`). The measured widgets' settings are
    the server's too: it keeps their answers for the release (offered.py)."""
    return offered.resolve_all(chapter_settings(site, url))


def worker_threads() -> int:
    """The torch threads a server worker computes with (gunicorn_conf's post_fork): its share
    of the CPUs (BOOK_CPUS, never above the quota) among WEB_CONCURRENCY workers. The result
    cache's keys name the device as the worker describes it, threads included (release.py), so
    a pre-warm computed with another thread count would fill keys no worker reads."""
    from backend.host import available_cpus, torch_threads

    cpus = min(settings.get("BOOK_CPUS"), available_cpus())
    return torch_threads(cpus, settings.get("WEB_CONCURRENCY"))


def warm_cache(todo) -> dict:
    """Compute each point here and store it in the configured (Redis) cache."""
    import torch

    from backend.app import api, create_app
    from backend.compute import REGISTRY

    torch.set_num_threads(worker_threads())  # before the release is first named (the keys)
    app = create_app()
    cache = app.extensions["book_result_cache"]
    counts = {"warmed": 0, "already": 0, "failed": 0}
    for name, params in todo:
        key = cache.key(name, params)
        if cache.get(key) is not None:
            counts["already"] += 1
            continue
        try:
            module = REGISTRY[name]
            cache.put(key, api.run(module, params),
                      offered.result_ttl(app.config["SITE_DIR"], module, name, params))
            counts["warmed"] += 1
        except Exception as exc:  # noqa: BLE001 - report and go on
            counts["failed"] += 1
            print(f"  {name} {params}: {exc}", file=sys.stderr)
    if cache.errors:
        counts["failed"] += cache.errors
        print(f"  the cache at {settings.get('BOOK_CACHE_URL')} failed {cache.errors} time(s)",
              file=sys.stderr)
    return counts


def warm_server(todo, url: str, timeout: float = 120.0) -> dict:
    """POST each point to a running server, which computes and caches it."""
    base = _api(url)
    counts = {"warmed": 0, "already": 0, "failed": 0}
    for name, params in todo:
        body = json.dumps(params).encode()
        for attempt in range(10):
            req = urllib.request.Request(f"{base}/widgets/{name}", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=timeout) as resp:
                    cached = json.load(resp).get("cached")
                counts["already" if cached else "warmed"] += 1
                break
            except urllib.error.HTTPError as exc:
                if exc.code in (429, 503) and attempt < 9:
                    time.sleep(float(exc.headers.get("Retry-After", "1")))
                    continue
                counts["failed"] += 1
                print(f"  {name} {params}: HTTP {exc.code}", file=sys.stderr)
                break
            except OSError as exc:
                counts["failed"] += 1
                print(f"  {name} {params}: {exc}", file=sys.stderr)
                break
    return counts


RECHECK_SETTINGS = 12  # light settings asked again after warming a server over HTTP
RECHECK_ASKS = 3       # each on a fresh connection, which any worker may accept


def recheck(todo, url: str, timeout: float = 30.0) -> dict:
    """Ask a few light, just-warmed settings again on fresh connections: how many were computed
    again? With one shared cache (Redis) none is; with one cache per worker, a request that a
    different worker accepts computes the setting again. The light settings are spread over the
    list, so a cache too small for the book's settings shows up too."""
    from backend.compute import REGISTRY

    light = [(n, p) for n, p in todo if REGISTRY[n].SPEC.cost_hint == "light"]
    step = max(1, len(light) // RECHECK_SETTINGS)
    sample = light[::step][:RECHECK_SETTINGS]
    out = {"settings": len(sample), "asks": 0, "computed_again": 0, "failed": 0}
    for name, params in sample:
        for _ in range(RECHECK_ASKS):
            req = urllib.request.Request(_api(url) + f"/widgets/{name}", method="POST",
                                         data=json.dumps(params).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=timeout) as resp:  # a new connection
                    cached = json.load(resp).get("cached")
            except (OSError, ValueError):  # HTTPError (429, 503) is an OSError: not a verdict
                out["failed"] += 1
                continue
            out["asks"] += 1
            out["computed_again"] += not cached
    return out


def recheck_report(check: dict) -> str:
    if not check["asks"]:
        return "could not ask any setting again, so whether every worker is warm is unknown"
    if not check["computed_again"]:
        return (f"asked {check['settings']} light settings again, {check['asks']} times on new "
                "connections: every answer came from the cache")
    return (f"asked {check['settings']} light settings again, {check['asks']} times on new "
            f"connections: {check['computed_again']} were computed again. This server's workers "
            "do not share one cache (without BOOK_CACHE_URL each worker keeps its own, in "
            "memory), so a setting is warm only in the workers "
            "that answered it. To warm every worker, run the server and this pre-warm with "
            "BOOK_CACHE_URL=redis://... (the instructors' page shows how), or serve with one "
            "worker (WEB_CONCURRENCY=1)")


def _api(url: str) -> str:
    base = url.rstrip("/")
    return base if base.endswith("/api") else base + "/api"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m backend.prewarm", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--url", help="a running server (http://host:port), warmed over HTTP")
    args = parser.parse_args(argv)
    try:
        cache_url = settings.get("BOOK_CACHE_URL")
    except settings.SettingError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not args.url and not cache_url:
        print("nothing to warm: with no BOOK_CACHE_URL each server worker keeps its own "
              "in-process cache, which another process cannot fill. Set BOOK_CACHE_URL=redis://"
              "... (the server's), or warm a running server: --url http://127.0.0.1:8000 "
              "(what `make prewarm` does for `make serve`'s server)", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        todo = points(url=args.url)
    except NoManifest as exc:
        print(f"no list of the pages' settings ({exc}): build the book first (`make build`), "
              "or warm the server that serves it (--url)", file=sys.stderr)
        return 2
    counts = warm_server(todo, args.url) if args.url else warm_cache(todo)
    where = args.url or cache_url
    print(f"prewarm: {len(todo)} settings into {where}: {counts['warmed']} computed, "
          f"{counts['already']} already cached, {counts['failed']} failed, "
          f"{time.perf_counter() - start:.1f} s")
    if args.url:
        print(f"prewarm: {recheck_report(recheck(todo, args.url))}")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
