"""Benchmark: first paint of a page's text, and when its first figure is drawn, at 1.6 Mbit/s.

    .venv/bin/python tests/benchmarks/first_paint.py [--site DIR] [--label NAME] [--runs 3]
                                                     [--link slow|loopback]

Serves a built book with the real gunicorn, loads each page in a fresh headless-Chromium context
(empty cache) under CDP network emulation (1.6 Mbit/s down and up, 40 ms latency; `--link
loopback`: none, the server's own speed, the first navigation to a warm server) and records
`first-contentful-paint`, the time the build's picture of a widget's opening figure is painted
(widgets/build/snapshots.py; its Element Timing entry) and the time the first live Plotly figure
is in the page. Appends a JSON line per run to tests/benchmarks/results/first_paint.jsonl.
Recorded, not asserted (the assertion, FCP < 1.5 s, is tests/site/test_runtime_paint.py).
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
from test_runtime_paint import PICTURE_PAINTED, throttled_load  # noqa: E402

from tests.support.server import serve  # noqa: E402

# A chapter's widget by its own link (the chapter's "Jump to the interactive figure", a shared
# link): the figure is on screen from the first paint, as the reader following it sees it.
PAGES = {"/": None,
         "/chapters/scaling/#widget-attention_scaling":
             '[data-widget="attention_scaling"] .tw-plot .main-svg',
         "/chapters/attention-maps/#widget-attention_map":
             '[data-widget="attention_map"] .tw-plot .main-svg',
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
            fcp, fig, pic = [], [], []
            for _ in range(args.runs):
                # bypass_csp: Playwright's wait_for_function evaluates a string, which the
                # site's policy forbids (the tests' browser sets the same, conftest.py)
                context, page, f, g, _ = throttled_load(
                    browser, base + path, wait_for=figure, bypass_csp=True,
                    **({} if args.link == "slow" else {"link": None}))
                if figure and page.evaluate("""() => performance.getEntriesByType('resource')
                        .some(e => e.name.includes('/assets/book/snaps/'))"""):
                    painted = page.evaluate(PICTURE_PAINTED)
                    if painted is not None:
                        pic.append(painted)
                context.close()
                fcp.append(f)
                if g is not None:
                    fig.append(g)
            result["pages"][path] = {"fcp_ms_median": round(statistics.median(fcp)),
                                     "picture_ms_median": round(statistics.median(pic)) if pic else None,
                                     "figure_ms_median": round(statistics.median(fig)) if fig else None}
        browser.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a") as fh:
        fh.write(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
