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
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "benchmarks" / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CLASSES = ("page", "asset", "api-light", "api-heavy")
ASSET_RE = re.compile(r'(?:<link[^>]+href|<script[^>]+src|<img[^>]+src)="([^"#]+)"')


# --- the server --------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    base: str
    proc: subprocess.Popen | None  # None: an address we did not start
    log: Path | None = None

    def workers(self) -> list[int]:
        import psutil

        if self.proc is None:
            return []
        return [c.pid for c in psutil.Process(self.proc.pid).children()]

    def tree(self) -> list:
        """The master and its workers, as psutil processes."""
        import psutil

        if self.proc is None:
            return []
        master = psutil.Process(self.proc.pid)
        return [master] + master.children(recursive=True)


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


@contextmanager
def serve(site_dir: Path, env: dict | None = None, port: int | None = None,
          workers: int | None = None, log: Path | None = None):
    """`gunicorn -c backend/gunicorn_conf.py` on 127.0.0.1 (the command `make serve` runs),
    yielding a Server as soon as /api/health answers; terminated (then killed) afterwards.
    `workers` None keeps gunicorn_conf's default; `env` adds or overrides variables."""
    port = port or free_port()
    full = {**os.environ, "PORT": str(port), "HOST": "127.0.0.1", "BOOK_SITE_DIR": str(site_dir),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if workers is not None:
        full["WEB_CONCURRENCY"] = str(workers)
    full.update(env or {})
    out = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "backend/gunicorn_conf.py"],
                            cwd=ROOT, env=full, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", proc, log)
    try:
        try:
            wait_healthy(server.base, proc)
        except RuntimeError:
            tail = log.read_text(errors="replace")[-3000:] if log else ""
            raise RuntimeError(f"gunicorn did not start\n{tail}") from None
        # A worker answers as soon as it is imported (it warms in the background), possibly
        # before gunicorn has forked the others: wait for all of them.
        expected = int(full.get("WEB_CONCURRENCY") or 0)
        deadline = time.time() + 90
        while expected and len(server.tree()) < expected + 1 and time.time() < deadline:
            time.sleep(0.2)
        yield server
    finally:
        stop(proc)
        if log:
            out.close()


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=25)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# --- what the readers do -------------------------------------------------------------------------

def pages_with_widgets(site: Path) -> dict[str, list[str]]:
    """URL path of each built page -> the widgets it shows."""
    out: dict[str, list[str]] = {}
    for page in sorted(site.rglob("index.html")):
        names = re.findall(r'data-widget="([\w-]+)"', page.read_text(encoding="utf-8"))
        rel = page.parent.relative_to(site).as_posix()
        out["/" + (rel + "/" if rel != "." else "")] = sorted(set(names))
    return out


def _grid(p: dict, eff: dict) -> list:
    lo, hi = eff["min"], eff["max"]
    if p["type"] == "int":
        step = int(p.get("step") or 1)
        values = list(range(int(lo), int(hi) + 1, step))
        if len(values) > 4000:  # a wide integer slider: its stops, as a 400-px track allows
            values = sorted({int(lo + round((hi - lo) * i / 400 / step) * step) for i in range(401)})
        return values
    step = p.get("step")
    if p.get("scale") == "log" or not step:
        n = 200
        if p.get("scale") == "log":
            return [float(f"{lo * (hi / lo) ** (i / n):.4g}") for i in range(n + 1)]
        return [float(f"{lo + (hi - lo) * i / n:.4g}") for i in range(n + 1)]
    count = int(round((hi - lo) / step))
    if count > 4000:
        return [round(lo + round(count * i / 400) * step, 6) for i in range(401)]
    return [round(lo + i * step, 6) for i in range(count + 1)]


@dataclass
class Move:
    widget: str
    heavy: bool
    param: str
    everywhere: list  # every stop of the slider that the spec accepts from the defaults
    shared: list  # the few stops the whole class is told to try
    defaults: dict = field(default_factory=dict)

    def body(self, rng: random.Random, repeat_share: float) -> dict:
        pool = self.shared if rng.random() < repeat_share else self.everywhere
        return {**self.defaults, self.param: rng.choice(pool)}


# Heavy widgets a class drags: which slider, from which settings. Timing widgets, text boxes
# and model switches are left out: a reader does not drag them.
HEAVY_MOVES = {
    "attention_map": ("head", {"average": False}),
    "sampling": ("temperature", {}),
    "parity": ("seq_len", {}),
    "sequential_vs_parallel": ("factor", {}),
}


def plan_moves(widgets: set[str] | None = None, shared_stops: int = 8,
               spread: int = 64) -> list[Move]:
    """One Move per (widget, numeric slider) the book has; every value checked by the spec."""
    from backend.widgets import REGISTRY
    from backend.widgets.spec import ParamError

    moves = []
    for name, module in REGISTRY.items():
        if widgets is not None and name not in widgets:
            continue
        spec = module.SPEC
        heavy = spec.cost_hint == "heavy"
        chosen = HEAVY_MOVES.get(name) if heavy else None
        if heavy and chosen is None:
            continue
        base = {**spec.defaults(), **(chosen[1] if chosen else {})}
        if not heavy:
            module.compute(spec.resolve(base))  # the first call pays for imports and caches
        budget = [0.3]  # CPU seconds per widget for checking stops by compute
        labels = {q.name: q.label for q in spec.params}
        for p in spec.to_json()["params"]:
            if p["type"] not in ("int", "float") or (chosen and p["name"] != chosen[0]):
                continue
            param = next(q for q in spec.params if q.name == p["name"])
            others = {k: v for k, v in base.items() if k != p["name"]}
            eff = param.effective(others, labels)
            if eff.get("disabled"):
                continue
            grid = _grid(p, eff)
            # At most `spread` stops per slider, checked by the spec and, for an analytic widget,
            # by its compute too (cross-parameter rules, e.g. heads dividing the width, are
            # compute's 400s) within 0.3 s of CPU per widget: moves the server must accept.
            if len(grid) > spread:
                grid = sorted({grid[round(i * (len(grid) - 1) / (spread - 1))]
                               for i in range(spread)}, key=grid.index)
            ok = []
            for v in grid:
                try:
                    params = spec.resolve({**base, p["name"]: v})
                    if not heavy:
                        if budget[0] <= 0:
                            continue  # unchecked stops are left out, never sent unchecked
                        t0 = time.thread_time()
                        try:
                            module.compute(params)
                        finally:
                            budget[0] -= time.thread_time() - t0
                except ParamError:
                    continue
                ok.append(v)
            if len(ok) < 2:
                continue
            shared = [ok[round(i * (len(ok) - 1) / (shared_stops - 1))] for i in range(shared_stops)]
            moves.append(Move(name, heavy, p["name"], ok, sorted(set(shared), key=ok.index),
                              {k: v for k, v in (chosen[1] if chosen else {}).items()}))
    return moves


@dataclass
class Record:
    cls: str
    start: float  # time.monotonic()
    ms: float
    status: int  # 0: no HTTP answer (connection refused / reset / timeout)
    cached: bool | None = None
    error: str | None = None


@dataclass
class Plan:
    base: str
    pages: dict[str, list[str]]  # widget chapters -> their widgets
    assets: dict[str, list[str]]  # page -> asset URLs
    light: list[Move]
    heavy: list[Move]
    heavy_share: float = 0.05
    repeat_share: float = 0.7
    navigate_share: float = 0.03
    think: tuple[float, float] = (1.0, 3.0)

    @staticmethod
    def by_widget(moves: list[Move]) -> dict[str, list[Move]]:
        out: dict[str, list[Move]] = {}
        for m in moves:
            out.setdefault(m.widget, []).append(m)
        return out


stale = [0]  # requests retried once after a kept-alive connection turned out closed


async def _timed(session, records: list, cls: str, method: str, url: str, retried: bool = False,
                 t0: float | None = None, **kw) -> None:
    import aiohttp

    t0 = time.monotonic() if t0 is None else t0
    try:
        async with session.request(method, url, **kw) as resp:
            body = await resp.read()
            cached = None
            if cls.startswith("api") and resp.status == 200:
                cached = bool(json.loads(body).get("cached"))
            records.append(Record(cls, t0, (time.monotonic() - t0) * 1000, resp.status, cached,
                                  None if resp.status < 400 else body[:200].decode(errors="replace")))
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
        if not retried and (time.monotonic() - t0) < 1.0:
            # A kept-alive connection the server closed as it was reused (gunicorn drops
            # connections idle past `keepalive`): a browser retries once on a fresh one, so do
            # we, and count it. A connection that dies later, mid-answer, is an error.
            stale[0] += 1
            return await _timed(session, records, cls, method, url, retried=True, t0=t0, **kw)
        records.append(Record(cls, t0, (time.monotonic() - t0) * 1000, 0, None,
                              f"{type(exc).__name__}: {exc}"[:120]))
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        records.append(Record(cls, t0, (time.monotonic() - t0) * 1000, 0, None,
                              f"{type(exc).__name__}: {exc}"[:120]))


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
            await _timed(session, records, "api-heavy" if heavy else "api-light", "POST",
                         f"{plan.base}/api/widgets/{move.widget}",
                         json=move.body(rng, plan.repeat_share))


async def run_level(plan: Plan, readers: int, duration: float, ramp: float = 5.0,
                    seed: int = 0) -> tuple[list[Record], float]:
    """Run `readers` simulated readers for `duration` s; (records, wall seconds)."""
    rng = random.Random(seed)
    records: list[Record] = []
    t0 = time.monotonic()
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


def site_assets(site: Path, base: str, paths: list[str]) -> dict[str, list[str]]:
    """Same-origin stylesheets, scripts and images each page's HTML names (what a browser with
    an empty cache fetches before the page is complete; fonts and Plotly's own lazy loads are
    left to the page-weight benchmark, which asks a real Chromium)."""
    out = {}
    for path in paths:
        html = (site / path.strip("/") / "index.html").read_text(encoding="utf-8")
        urls = []
        for ref in ASSET_RE.findall(html):
            if ref.startswith(("http:", "https:", "//", "data:", "mailto:")) or ref.endswith("/"):
                continue
            target = (site / path.strip("/") / ref.split("?")[0]).resolve()
            if not target.is_file():
                continue
            urls.append(base + "/" + target.relative_to(site.resolve()).as_posix())
        out[path] = sorted(set(urls))
    return out


def make_plan(site: Path, base: str, heavy_share: float = 0.05,
              repeat_share: float = 0.7) -> Plan:
    pages = {p: w for p, w in pages_with_widgets(site).items() if w}
    moves = plan_moves({w for ws in pages.values() for w in ws})
    return Plan(base, pages, site_assets(site, base, list(pages)),
                [m for m in moves if not m.heavy], [m for m in moves if m.heavy],
                heavy_share=heavy_share, repeat_share=repeat_share)


# --- figures -------------------------------------------------------------------------------------

def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, max(0, int(round(q * len(xs) + 0.5)) - 1))], 1)


def summarize(records: list[Record], wall: float) -> dict:
    out = {"requests": len(records), "wall_s": round(wall, 1),
           "throughput_rps": round(len(records) / wall, 1), "classes": {},
           "errors_by_status": {}}
    for cls in CLASSES:
        rs = [r for r in records if r.cls == cls]
        if not rs:
            continue
        ok = [r.ms for r in rs if 200 <= r.status < 400]
        errors: dict[str, int] = {}
        for r in rs:
            if not 200 <= r.status < 400:
                key = str(r.status) if r.status else (r.error or "no answer").split(":")[0]
                errors[key] = errors.get(key, 0) + 1
                out["errors_by_status"][key] = out["errors_by_status"].get(key, 0) + 1
        entry = {"n": len(rs), "rps": round(len(rs) / wall, 1), "p50_ms": pct(ok, 0.5),
                 "p95_ms": pct(ok, 0.95), "p99_ms": pct(ok, 0.99),
                 "max_ms": round(max(ok), 1) if ok else None, "errors": errors}
        if cls.startswith("api"):
            answered = [r for r in rs if r.cached is not None]
            entry["cached_share"] = (round(sum(r.cached for r in answered) / len(answered), 3)
                                     if answered else None)
            computed = [r.ms for r in answered if not r.cached]
            entry["computed_p95_ms"] = pct(computed, 0.95)
        samples = sorted({r.error for r in rs if r.error})[:4]
        if samples:
            entry["error_samples"] = samples
        out["classes"][cls] = entry
    return out


def markdown(result: dict) -> str:
    lines = [f"# Load benchmark ({result['date']})", "",
             f"Server: {result['server']}. Machine: {result['cpus']} CPUs, load average before "
             f"the run {result['load_average_before']}. {result['note']}", ""]
    for level in result["levels"]:
        lines += [f"## {level['readers']} readers, {level['duration_s']} s: "
                  f"{level['throughput_rps']} requests/s, errors {level['errors_by_status'] or 'none'}",
                  "",
                  f"Generator CPU {level['client_cpu_share']:.0%} of one core; server CPU "
                  f"{level.get('server_cpu_share', 0):.0%} of one core, peak RSS "
                  f"{level.get('server_peak_rss_mib', '?')} MiB; load average after "
                  f"{level['load_average_after']}. Retried once on a kept-alive connection the server "
                  f"had closed: {level['retried_on_closed_keepalive']}.", "",
                  "| class | requests | per s | p50 ms | p95 ms | p99 ms | max ms | cached | errors |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for cls, e in level["classes"].items():
            cached = "" if e.get("cached_share") is None else f"{e['cached_share']:.0%}"
            lines.append(f"| {cls} | {e['n']} | {e['rps']} | {e['p50_ms']} | {e['p95_ms']} | "
                         f"{e['p99_ms']} | {e['max_ms']} | {cached} | "
                         f"{', '.join(f'{k}: {v}' for k, v in e['errors'].items()) or '0'} |")
        lines.append("")
    return "\n".join(lines)


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
                                              "think_s": [1, 3], "server_env": env},
              "levels": []}

    def run_all(server: Server | None, base: str):
        plan = make_plan(site, base, args.heavy_share, args.repeat_share)
        result["pages"] = sorted(plan.pages)
        result["moves"] = [f"{m.widget}.{m.param}" for m in plan.light + plan.heavy]
        for readers in (int(x) for x in args.levels.split(",")):
            wait_healthy(base, None)
            la = os.getloadavg()
            sampler = Sampler(server)
            c0 = resource.getrusage(resource.RUSAGE_SELF)
            stale[0] = 0
            records, wall = asyncio.run(run_level(plan, readers, args.duration, args.ramp,
                                                  seed=readers))
            c1 = resource.getrusage(resource.RUSAGE_SELF)
            server_cpu, peak = sampler.finish()
            level = {"readers": readers, "duration_s": args.duration, **summarize(records, wall),
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
