"""Cold start: from the command that starts `make serve`'s gunicorn to its first answers,
recorded (not asserted).

    python tests/benchmarks/cold_start.py [--runs 3] [--widgets attention_scaling,...]
                                          [--order sequence|fresh] [--note "..."]

Each run starts `python -m gunicorn -c backend/gunicorn_conf.py` as `make serve` does (the
launcher in tests/support/server.py, without its wait) and times, from the moment the command
is started:

- `health`: the first 200 from /api/health (polled every 50 ms);
- for each light widget, the first computed answer (`cached: false`) of a POST at a setting
  that is not the defaults (the only setting a worker warms for a light widget), so the request
  computes rather than finding the warm-up's work. The setting is the widget's first bake point
  that differs from its defaults (a value the page offers).

`--order sequence` (the default): one fresh server per run; the widgets are asked one after the
other right after health answers, so the first widget's time is the cold start proper and the
rest show how the answers follow while the workers are still warming. `--order fresh`: one
fresh server per widget per run (the cold start of each widget alone; slower to measure).

The warm-up's own end is read from the workers' log ("warm-up done"). Results:
tests/benchmarks/results/cold_start.json and .md, with the load average (everything here shares
the machine's cores with whatever else runs: take it on a quiet machine, at normal priority).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "tests" / "benchmarks" / "results"
FIRST = "attention_scaling"  # the example: asked first in each sequence


def setting(spec) -> dict:
    defaults = spec.defaults()
    for point in spec.bake_points():
        if point != defaults:
            return {k: v for k, v in point.items() if v != defaults[k]}
    raise SystemExit(f"{spec.name}: no setting other than the defaults to ask for")


def _get(url: str, timeout: float = 2) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def _post(url: str, body: dict, timeout: float = 120) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"{url} {body}: HTTP {exc.code} {exc.read()[:300]!r}") from None


def one_server(widgets: list[tuple[str, dict]], env: dict, workers: int) -> dict:
    """Start a server, time health and each widget's first computed answer, stop it."""
    from tests.support.server import free_port, stop

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    full = {**os.environ, **env, "PORT": str(port), "HOST": "127.0.0.1",
            "BOOK_SITE_DIR": "/nonexistent", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    log = tempfile.NamedTemporaryFile(prefix="cold_start-", suffix=".log", delete=False)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "backend/gunicorn_conf.py"],
                            cwd=ROOT, env=full, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    row: dict = {}
    try:
        while (health := _get(base + "/api/health")) is None:
            if proc.poll() is not None or time.perf_counter() - t0 > 120:
                raise SystemExit(f"the server did not answer; its log: {log.name}")
            time.sleep(0.05)
        row["health_s"] = round(time.perf_counter() - t0, 2)
        row["warming_at_health"] = health.get("warming")
        for name, body in widgets:
            answer = _post(f"{base}/api/widgets/{name}", body)
            if answer["cached"]:
                raise SystemExit(f"{name} {body}: answered from the cache; ask another setting")
            row[name] = round(time.perf_counter() - t0, 2)
        # how long the slowest worker's warm-up ran (each logs it when done), waited for up to 90 s
        deadline = time.perf_counter() + 90
        while time.perf_counter() < deadline:
            done = re.findall(r"warm-up done in ([\d.]+) s", Path(log.name).read_text())
            if len(done) >= workers:
                row["warm_up_s"] = max(float(d) for d in done)
                break
            time.sleep(0.2)
    finally:
        stop(proc)
        log.close()
    os.unlink(log.name)
    return row


def _stats(values: list[float]) -> dict:
    s = sorted(values)
    return {"p50": s[(len(s) - 1) // 2] if len(s) % 2 else round((s[len(s) // 2 - 1]
                                                                   + s[len(s) // 2]) / 2, 2),
            "max": s[-1], "runs": s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--widgets", default="", help="comma-separated (default: every light one)")
    ap.add_argument("--order", choices=("sequence", "fresh"), default="sequence")
    ap.add_argument("--note", default="")
    ap.add_argument("--out", default="cold_start", help="file name under results/ (no suffix)")
    args = ap.parse_args(argv)
    from backend import settings
    from backend.compute import REGISTRY
    from backend.host import available_cpus

    names = [n for n in args.widgets.split(",") if n] or [
        n for n, m in REGISTRY.items()
        if m.SPEC.cost_hint == "light" and not m.SPEC.measured]
    names.sort(key=lambda n: n != FIRST)
    asks = [(n, setting(REGISTRY[n].SPEC)) for n in names]
    env = {"BOOK_DEVICE": os.environ.get("BOOK_DEVICE", "cpu")}
    workers = settings.load(dict(os.environ))["WEB_CONCURRENCY"]
    rows, loads = [], []
    for i in range(args.runs):
        loads.append([round(x, 2) for x in os.getloadavg()])
        if args.order == "sequence":
            rows.append(one_server(asks, env, workers))
        else:
            row: dict = {}
            for ask in asks:
                got = one_server([ask], env, workers)
                row.setdefault("health_s", got["health_s"])
                row[ask[0]] = got[ask[0]]
            rows.append(row)
        print(f"run {i + 1}: load {loads[-1]}: " + ", ".join(f"{k} {v}" for k, v in rows[-1].items()))
    keys = ["health_s"] + names + (["warm_up_s"] if all("warm_up_s" in r for r in rows) else [])
    summary = {k: _stats([r[k] for r in rows]) for k in keys}
    record = {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine(),
              "cpus": available_cpus(), "workers": workers, "order": args.order,
              "runs": args.runs, "note": args.note, "load_before_each_run": loads,
              "load_after": [round(x, 2) for x in os.getloadavg()],
              "settings": dict(asks), "seconds_from_command": summary}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{args.out}.json").write_text(json.dumps(record, indent=1) + "\n")
    how = ("one fresh server per run, widgets asked in sequence after health (the first is the "
           "cold start; the rest follow while the workers warm)" if args.order == "sequence"
           else "one fresh server per widget per run")
    lines = [f"# Cold start: seconds from the gunicorn command to the first answers "
             f"({record['when']})", "",
             f"{record['cpus']} CPUs, {workers} workers, {args.runs} runs, {how}. Load average "
             f"(1/5/15 min) before each run {loads}, after {record['load_after']}. {args.note}",
             "", "| from the command to | p50 s | max s | runs |", "|---|---:|---:|---|"]
    for k in keys:
        what = {"health_s": "/api/health 200", "warm_up_s": "warm-up done (slowest worker)"}.get(
            k, f"`{k}` computed at {json.dumps(dict(asks)[k]) if k in dict(asks) else ''}")
        s = summary[k]
        lines.append(f"| {what} | {s['p50']} | {s['max']} | {', '.join(map(str, s['runs']))} |")
    (OUT / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
