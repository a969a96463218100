"""Benchmark: a lecture hall on one machine. Simulated readers behind one address load chapters
and drag sliders against a real gunicorn on loopback; throughput, latency and errors per level.

    .venv/bin/python tests/benchmarks/load.py [--levels 50,200,500] [--duration 40] [--site DIR]
                                             [--url URL] [--workers N] [--env KEY=VALUE ...]

Each simulated reader opens a chapter (its HTML, then every same-origin stylesheet, script and
image the HTML names, up to 6 at a time as a browser does, gzip accepted), then every 1-3 s
(uniform) does one thing: mostly a slider move on one of the book's analytic widgets, a small
share (--heavy-share, 5 %) a move on a heavy widget (a trained model, a timing loop), and now
and then (3 %) a move to another chapter (HTML only: the assets are in the browser's cache for
ten minutes). A share of the moves (--repeat-share, 70 %) go to a few stops the whole class
shares (the lecturer says "set d_k to 64"): those are the repeated positions a cache serves;
the rest to any of up to 64 stops spread over the slider. Every move is checked against the
widget's own spec (and an analytic widget's compute, 0.3 s of CPU per widget) before it is sent, so a 400 in the results
is the server's fault, not the harness's. A request on a kept-alive connection that the server
closed just then is retried once at once, as browsers do, and counted apart.

All readers share 127.0.0.1: to the server they are one client address, like a class behind a
university's NAT. Without --url the script starts `gunicorn -c backend/gunicorn_conf.py` (the
command `make serve` runs, its default settings unless --workers/--env say otherwise) on a
free port and stops it afterwards; with --url it loads an address already serving the book
(compose's nginx, a pod), and the chapter list still comes from --site.

Each level runs --duration seconds (readers start spread over the first --ramp seconds) and is
then cut: requests still open at the end are waited for (up to 30 s) and counted. Results go to
tests/benchmarks/results/load.json and load.md (a table per level): per request class (page,
asset, api-light, api-heavy) the count, throughput, p50 / p95 / p99 / max in ms and errors by
status; the cached share of API answers; the load generator's and the server's CPU, and the
machine's load average, since the generator shares the machine with the server. Recorded, not
asserted: `make bench-load` runs it.

Why a small asyncio + aiohttp client and not locust: 500 readers that are idle 98 % of the time
are 500 coroutines in one process (a few % of a core), a reader's script is plain Python with
its own think time, and percentiles are computed from every recorded latency, not from
locust's bucketed histogram; locust would bring gevent's monkey-patching and a second runtime
into a process that also drives gunicorn and psutil, for no measurement we need.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import resource
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "benchmarks" / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# What the readers do (pages, their assets, the slider moves, all checked by the specs) is
# in load_plan.py, beside this file.
from load_plan import Plan, make_plan  # noqa: E402
from load_report import Record, markdown, summarize  # noqa: E402

from tests.support.server import Server, serve  # noqa: E402

# --- the server: tests/support/server.py's launcher (`make serve`'s command), or --url ------

def wait_healthy(base: str, proc: subprocess.Popen | None, timeout: float = 90.0) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(base + "/api/health", timeout=2)
            return
        except OSError:
            if (proc is not None and proc.poll() is not None) or time.time() > deadline:
                raise RuntimeError(f"{base} did not answer /api/health") from None
            time.sleep(0.2)


stale = [0]  # requests retried once after a kept-alive connection turned out closed


async def _timed(session, records: list, cls: str, method: str, url: str, retried: bool = False,
                 t0: float | None = None, keep: dict | None = None, **kw) -> None:
    import aiohttp

    t0 = time.monotonic() if t0 is None else t0
    try:
        async with session.request(method, url, **kw) as resp:
            body = await resp.read()
            cached = None
            if cls.startswith("api") and resp.status == 200:
                cached = bool(json.loads(body).get("cached"))
            elif cls.startswith("api") and resp.status == 304:
                cached = True  # revalidated: nothing computed, nothing looked up
            if keep is not None and resp.status in (200, 304):
                _keep(keep, url, resp.headers)
            records.append(Record(cls, t0, (time.monotonic() - t0) * 1000, resp.status, cached,
                                  None if resp.status < 400 else body[:200].decode(errors="replace")))
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
        if not retried and (method == "GET" or (time.monotonic() - t0) < 1.0):
            # A kept-alive connection the server closed as it was reused (gunicorn drops
            # connections idle past `keepalive`, and past its keep-alive budget under load): a
            # browser retries once on a fresh one, so do we, and count it. A GET is retried
            # whenever the connection ended without an answer (browsers resend an idempotent
            # request); a POST only when it failed at once, before the server could have
            # started on it. A second failure is an error.
            stale[0] += 1
            return await _timed(session, records, cls, method, url, retried=True, t0=t0,
                                keep=keep, **kw)
        records.append(Record(cls, t0, (time.monotonic() - t0) * 1000, 0, None,
                              f"{type(exc).__name__}: {exc}"[:120]))
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        records.append(Record(cls, t0, (time.monotonic() - t0) * 1000, 0, None,
                              f"{type(exc).__name__}: {exc}"[:120]))


def _keep(browser: dict, url: str, headers) -> None:
    """What a browser's HTTP cache keeps of an answer: until when it is fresh (max-age), and
    its validator for a conditional request after that."""
    m = re.search(r"max-age=(\d+)", headers.get("Cache-Control", ""))
    if m and "no-store" not in headers.get("Cache-Control", ""):
        browser[url] = (time.monotonic() + int(m.group(1)), headers.get("ETag"))


async def load_page(session, plan: Plan, records: list, path: str, with_assets: bool) -> None:
    await _timed(session, records, "page", "GET", plan.base + path)
    if with_assets:
        await asyncio.gather(*(_timed(session, records, "asset", "GET", url)
                               for url in plan.assets[path]))


async def reader(plan: Plan, records: list, rng: random.Random, start_at: float,
                 stop_at: float) -> None:
    import aiohttp

    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    headers = {"Accept-Encoding": "gzip, deflate, br", "User-Agent": "book-load-bench"}
    # A browser keeps up to 6 connections to one host; aiohttp keeps them alive between moves.
    conn = aiohttp.TCPConnector(limit=6, force_close=False)
    timeout = aiohttp.ClientTimeout(total=60)
    browser: dict[str, tuple[float, str | None]] = {}  # this reader's HTTP cache of answers
    async with aiohttp.ClientSession(connector=conn, headers=headers, timeout=timeout) as session:
        if plan.pages:  # an API-only plan (the fault tests) has none
            path = rng.choice(list(plan.pages))
            await load_page(session, plan, records, path, with_assets=True)
        while True:
            await asyncio.sleep(rng.uniform(*plan.think))
            if time.monotonic() >= stop_at:
                return
            r = rng.random()
            if plan.pages and r < plan.navigate_share:
                path = rng.choice(list(plan.pages))
                await load_page(session, plan, records, path, with_assets=False)
                continue
            heavy = plan.heavy and r < plan.navigate_share + plan.heavy_share
            # a widget, then one of its sliders: a widget with six sliders is not six widgets
            moves = plan.by_widget(plan.heavy if heavy else plan.light)
            move = rng.choice(moves[rng.choice(sorted(moves))])
            cls = "api-timing" if move.timing else "api-heavy" if heavy else "api-light"
            body = move.body(rng, plan.repeat_share)
            if plan.post:  # the pages' way before the GET route (kept for before/after)
                await _timed(session, records, cls, "POST", f"{plan.base}/api/widgets/"
                             f"{move.widget}", json=body)
                continue
            # As the pages ask since they use the GET route: this reader's browser answers a
            # setting it holds fresh without a request; a stale one is revalidated.
            url = f"{plan.base}/api/widgets/{move.widget}/result?{move.query(body)}"
            held = browser.get(url)
            if held and time.monotonic() < held[0]:
                records.append(Record(cls, time.monotonic(), 0.0, 200, True, None, browser=True))
                continue
            await _timed(session, records, cls, "GET", url, keep=browser,
                         headers={"If-None-Match": held[1]} if held and held[1] else {})


async def run_level(plan: Plan, readers: int, duration: float, ramp: float = 5.0,
                    seed: int = 0, started: list | None = None) -> tuple[list[Record], float]:
    """Run `readers` simulated readers for `duration` s; (records, wall seconds). The start
    time (time.monotonic()) is appended to `started` when given."""
    rng = random.Random(seed)
    records: list[Record] = []
    t0 = time.monotonic()
    if started is not None:
        started.append(t0)
    stop_at = t0 + duration
    tasks = [asyncio.create_task(reader(plan, records, random.Random(rng.random()),
                                        t0 + ramp * i / max(1, readers), stop_at))
             for i in range(readers)]
    done, pending = await asyncio.wait(tasks, timeout=duration + 30)
    for t in pending:
        t.cancel()
    for t in done:
        if t.exception():
            raise t.exception()
    return records, time.monotonic() - t0


class Sampler:
    """CPU seconds and peak RSS of the server's processes, sampled every 0.5 s in a thread."""

    def __init__(self, server: Server | None):
        import threading

        self.server, self.peak_rss, self._stop = server, 0, threading.Event()
        self.cpu0 = self._cpu()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _cpu(self) -> float:
        total = 0.0
        for p in (self.server.tree() if self.server else []):
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except Exception:
                pass
        return total

    def _run(self):
        while not self._stop.wait(0.5):
            rss = 0
            for p in (self.server.tree() if self.server else []):
                try:
                    rss += p.memory_info().rss
                except Exception:
                    pass
            self.peak_rss = max(self.peak_rss, rss)

    def finish(self) -> tuple[float, int]:
        self._stop.set()
        self.thread.join()
        return self._cpu() - self.cpu0, self.peak_rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="50,200,500")
    ap.add_argument("--duration", type=float, default=40.0, help="seconds per level")
    ap.add_argument("--ramp", type=float, default=5.0)
    ap.add_argument("--site", default=str(ROOT / "site"))
    ap.add_argument("--url", help="load this running server instead of starting gunicorn")
    ap.add_argument("--workers", type=int, help="WEB_CONCURRENCY (default: gunicorn_conf's)")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="server environment, e.g. BOOK_RATE_LIMIT=off (repeatable)")
    ap.add_argument("--heavy-share", type=float, default=0.05)
    ap.add_argument("--repeat-share", type=float, default=0.7)
    ap.add_argument("--note", default="", help="a sentence on the machine's load, recorded")
    ap.add_argument("--post", action="store_true", help="send slider moves as POSTs, as the "
                    "pages did before the GET route (no browser cache): the before of a "
                    "before/after")
    ap.add_argument("--pages", default="", help="comma-separated chapters the readers open "
                    "(e.g. kv-cache,cost,paged-kv): a class on those pages, moving their widgets")
    ap.add_argument("--prewarm", action="store_true", help="before the first level, ask the "
                    "server for every setting the plan's pages offer for their heavy widgets "
                    "(what `make prewarm` does before class), and record how long it took")
    ap.add_argument("--out", default=str(RESULTS / "load.json"))
    args = ap.parse_args()
    site = Path(args.site)
    if not (site / "index.html").is_file():
        sys.exit(f"{site} has no built book: run `make build` (or pass --site)")
    env = dict(kv.split("=", 1) for kv in args.env)

    result = {"benchmark": "load", "date": time.strftime("%Y-%m-%d %H:%M"),
              "cpus": os.cpu_count(), "machine": platform.machine(),
              "load_average_before": [round(x, 2) for x in os.getloadavg()],
              "note": args.note, "settings": {"duration_s": args.duration, "ramp_s": args.ramp,
                                              "heavy_share": args.heavy_share,
                                              "repeat_share": args.repeat_share,
                                              "moves_as": "POST" if args.post else "GET",
                                              "pages": args.pages, "prewarm": args.prewarm,
                                              "think_s": [1, 3], "server_env": env},
              "levels": []}

    def run_all(server: Server | None, base: str):
        plan = make_plan(site, base, args.heavy_share, args.repeat_share,
                         [p for p in args.pages.split(",") if p] or None)
        plan.post = args.post
        result["pages"] = sorted(plan.pages)
        result["moves"] = [f"{m.widget}.{m.param}" for m in plan.light + plan.heavy]
        if args.prewarm:
            from backend.prewarm import warm_server

            todo = [(m.widget, s) for m in plan.heavy for s in m.offered]
            t0 = time.monotonic()
            counts = warm_server(todo, base, timeout=600)
            result["prewarm"] = {"settings": len(todo), **counts,
                                 "seconds": round(time.monotonic() - t0, 1),
                                 "widgets": sorted({n for n, _ in todo})}
            print("prewarm:", json.dumps(result["prewarm"]), flush=True)
        for readers in (int(x) for x in args.levels.split(",")):
            wait_healthy(base, None)
            la = os.getloadavg()
            sampler = Sampler(server)
            c0 = resource.getrusage(resource.RUSAGE_SELF)
            stale[0] = 0
            started: list[float] = []
            records, wall = asyncio.run(run_level(plan, readers, args.duration, args.ramp,
                                                  seed=readers, started=started))
            settle = min(args.duration / 2, args.ramp + 10)
            c1 = resource.getrusage(resource.RUSAGE_SELF)
            server_cpu, peak = sampler.finish()
            level = {"readers": readers, "duration_s": args.duration,
                     **summarize(records, wall, started[0] + settle), "settled_after_s": settle,
                     "retried_on_closed_keepalive": stale[0],
                     "client_cpu_share": round((c1.ru_utime + c1.ru_stime - c0.ru_utime
                                                - c0.ru_stime) / wall, 3),
                     "load_average_during_start": [round(x, 2) for x in la],
                     "load_average_after": [round(x, 2) for x in os.getloadavg()]}
            if server:
                level["server_cpu_share"] = round(server_cpu / wall, 3)
                level["server_peak_rss_mib"] = round(peak / 2**20)
            result["levels"].append(level)
            print(json.dumps({k: level[k] for k in ("readers", "throughput_rps",
                                                     "errors_by_status")}),
                  {c: (e["p50_ms"], e["p95_ms"], e["p99_ms"]) for c, e in level["classes"].items()},
                  flush=True)

    if args.url:
        result["server"] = args.url
        wait_healthy(args.url.rstrip("/"), None)
        run_all(None, args.url.rstrip("/"))
    else:
        with serve(site, env=env, workers=args.workers) as server:
            result["server"] = (f"gunicorn -c backend/gunicorn_conf.py, "
                                f"{len(server.workers())} workers, on loopback")
            run_all(server, server.base)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(result) + "\n")
    print(f"wrote {out} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
