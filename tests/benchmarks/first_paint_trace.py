"""Benchmark: where a page's main thread spends the time before its first figure is drawn.

    .venv/bin/python tests/benchmarks/first_paint_trace.py [--site DIR] [--page /chapters/scaling/]
                                                           [--runs 2]

Serves a built book with the real gunicorn on loopback (a warm server, no network emulation),
opens one page first in the browser context so that Chromium itself is warm, then loads the page
under a Chromium performance trace until its first widget figure (`.tw-plot .main-svg`) is in
the page. Prints the main-thread tasks over 30 ms (start and length, ms from navigation) and the
totals by kind (style recalculation, layout, script), and appends them as a JSON line to
tests/benchmarks/results/first_paint_trace.jsonl. Recorded, not asserted: it says where the
seconds of `first_paint.py --link loopback` go (issue 33's 0.8 s target).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "site"))
from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from tests.support.server import serve  # noqa: E402

FIGURE = "[data-widget] .tw-plot .main-svg"
# The trace's main-thread events worth naming (Chromium's devtools.timeline category).
KINDS = {"ParseHTML", "EvaluateScript", "FunctionCall", "EventDispatch", "RunMicrotasks",
         "UpdateLayoutTree", "Layout", "Paint", "TimerFire", "FireAnimationFrame"}


def one_load(browser, base: str, page_path: str, trace: Path) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    try:
        pg = context.new_page()
        pg.goto(base + "/404.html")  # Chromium's own first-use costs, not the page's
        browser.start_tracing(page=pg, path=str(trace), categories=["devtools.timeline"])
        pg.goto(base + page_path, wait_until="commit")
        pg.wait_for_function(f"() => !!document.querySelector('{FIGURE}')", timeout=60_000,
                             polling=50)
        drawn = pg.evaluate("performance.now()")
        browser.stop_tracing()
    finally:
        context.close()
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    starts = [e["ts"] for e in events if e.get("name") == "navigationStart"]
    t0 = min(starts) if starts else min(e["ts"] for e in events if e.get("ts"))
    totals: collections.Counter = collections.Counter()
    tasks = []
    for e in events:
        if e.get("ph") != "X" or e.get("name") not in KINDS:
            continue
        ms = e.get("dur", 0) / 1000
        totals[e["name"]] += ms
        if ms > 30:
            data = e.get("args", {}).get("data", {})
            what = data.get("url") or data.get("type") or data.get("functionName") or ""
            tasks.append([round((e["ts"] - t0) / 1000), round(ms), e["name"],
                          what.rsplit("/", 1)[-1][:60]])
    return {"figure_ms": round(drawn), "totals_ms": {k: round(v) for k, v in totals.most_common()},
            "tasks": sorted(tasks)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", default=str(ROOT / "site"))
    ap.add_argument("--page", default="/chapters/scaling/")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "tests/benchmarks/results/first_paint_trace.jsonl"))
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    runs = []
    with serve(Path(args.site)) as server, sync_playwright() as pw, \
            tempfile.TemporaryDirectory() as tmp:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for i in range(args.runs):
            run = one_load(browser, server.base, args.page, Path(tmp) / f"trace{i}.json")
            runs.append(run)
            print(f"run {i}: figure in the page at {run['figure_ms']} ms; totals {run['totals_ms']}")
            for start, ms, name, what in run["tasks"]:
                print(f"  {start:6d} ms  {ms:5d} ms  {name:16s} {what}")
        browser.close()
    record = {"benchmark": "first_paint_trace", "page": args.page,
              "link": "loopback, no emulation", "date": time.strftime("%Y-%m-%d %H:%M"),
              "runs": runs}
    with open(args.out, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
