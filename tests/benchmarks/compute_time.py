"""What an uncached slider move costs the server: each widget's compute at its defaults, timed
as a worker runs it, recorded (not asserted).

    python tests/benchmarks/compute_time.py [--runs 15] [--widgets attention_scaling,...]

A worker of `make serve` runs a computation with torch's thread pool divided among the workers
(`backend/gunicorn_conf.py`: cpus // workers threads), after its background warm-up has filled
the widget's own per-process caches; the result cache is what this bypasses. So: one warm-up
call, then --runs timed calls of `backend.app.api.run` (what the API calls on a cache miss) at
the defaults, p50/p95/max in ms. Widgets that time something themselves (the measured ones)
are left out: their cost is the measurement they make. Results:
tests/benchmarks/results/compute_time.json and .md, with the machine's load average, since
everything here shares 2 cores with whatever else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "tests" / "benchmarks" / "results"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--widgets", default="", help="comma-separated names (default: all light)")
    ap.add_argument("--note", default="")
    args = ap.parse_args(argv)
    os.environ.setdefault("BOOK_DEVICE", "cpu")
    import torch

    from backend import settings
    from backend.app.api import run
    from backend.compute import REGISTRY
    from backend.host import available_cpus

    workers = settings.load(dict(os.environ))["WEB_CONCURRENCY"]
    threads = max(1, available_cpus() // workers)
    torch.set_num_threads(threads)
    names = [n for n in args.widgets.split(",") if n] or [
        n for n, m in REGISTRY.items()
        if m.SPEC.cost_hint == "light" and not m.SPEC.measured]
    load_before = os.getloadavg()
    rows = []
    for name in names:
        module = REGISTRY[name]
        params = module.SPEC.defaults()
        run(module, params)  # the worker's warm-up: per-process caches, first kernels
        ms = []
        for _ in range(args.runs):
            t = time.perf_counter()
            run(module, dict(params))
            ms.append((time.perf_counter() - t) * 1000)
        ms.sort()
        rows.append({"widget": name, "p50_ms": round(ms[len(ms) // 2], 1),
                     "p95_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.95))], 1),
                     "max_ms": round(ms[-1], 1)})
        print(f"{name:24s} p50 {rows[-1]['p50_ms']:8.1f} ms  p95 {rows[-1]['p95_ms']:8.1f} ms")
    record = {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine(),
              "cpus": available_cpus(), "workers": workers, "torch_threads": threads,
              "torch": torch.__version__, "runs": args.runs, "note": args.note,
              "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in os.getloadavg()], "widgets": rows}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "compute_time.json").write_text(json.dumps(record, indent=1) + "\n")
    lines = [f"# Uncached compute per widget at its defaults ({record['when']})", "",
             f"{record['cpus']} CPUs, {workers} workers, torch {record['torch']} with "
             f"{threads} thread(s) per computation, {args.runs} runs after one warm-up; load "
             f"average before {record['load_before']}, after {record['load_after']}. "
             f"{args.note}", "", "| widget | p50 ms | p95 ms | max ms |", "|---|---:|---:|---:|"]
    lines += [f"| {r['widget']} | {r['p50_ms']} | {r['p95_ms']} | {r['max_ms']} |" for r in rows]
    (OUT / "compute_time.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
