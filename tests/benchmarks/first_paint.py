"""Benchmark: first paint of a page's text, and when its first figure is drawn, at 1.6 Mbit/s.

    .venv/bin/python tests/benchmarks/first_paint.py [--site DIR] [--label NAME] [--runs 3]
                                                     [--link slow|loopback]

Serves a built book with the real gunicorn, loads each page in a fresh headless-Chromium context
(empty cache) under CDP network emulation (1.6 Mbit/s down and up, 40 ms latency; `--link
loopback`: none, the server's own speed, the first navigation to a warm server) and records
`first-contentful-paint` and the time the first Plotly figure is on screen. Appends a JSON line
per run to tests/benchmarks/results/first_paint.jsonl. Recorded, not asserted (the assertion,
FCP < 1.5 s, is tests/site/test_runtime_paint.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "site"))
from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from test_runtime_paint import throttled_load  # noqa: E402

from tests.support.server import serve  # noqa: E402

PAGES = {"/": None,
         "/chapters/scaling/": '[data-widget="attention_scaling"] .tw-plot .main-svg',
         "/chapters/attention-maps/": '[data-widget="attention_map"] .tw-plot .main-svg',
         "/exercises/01-variance/": ".js-plotly-plot .main-svg"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", default=str(ROOT / "site"))
    ap.add_argument("--label", default="current")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--link", choices=["slow", "loopback"], default="slow")
    ap.add_argument("--out", default=str(ROOT / "tests/benchmarks/results/first_paint.jsonl"))
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    result = {"benchmark": "first_paint", "label": args.label,
              "link": "1.6 Mbit/s, 40 ms" if args.link == "slow" else "loopback, no emulation",
              "date": time.strftime("%Y-%m-%d %H:%M"), "pages": {}}
    with serve(Path(args.site)) as server, sync_playwright() as pw:
        base = server.base
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for path, figure in PAGES.items():
            fcp, fig = [], []
            for _ in range(args.runs):
                # bypass_csp: Playwright's wait_for_function evaluates a string, which the
                # site's policy forbids (the tests' browser sets the same, conftest.py)
                context, _page, f, g, _ = throttled_load(
                    browser, base + path, wait_for=figure, bypass_csp=True,
                    **({} if args.link == "slow" else {"link": None}))
                context.close()
                fcp.append(f)
                if g is not None:
                    fig.append(g)
            result["pages"][path] = {"fcp_ms_median": round(statistics.median(fcp)),
                                     "figure_ms_median": round(statistics.median(fig)) if fig else None}
        browser.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a") as fh:
        fh.write(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
