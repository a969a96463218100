"""Benchmark: the book's "Why divide by √dₖ" widget against the same widget served by Voilà, side
by side on one machine, measured the same way from outside both pages (issue 33, item 7: a
review had the book's slider p50 at 83 and 69 ms against Voilà's 82 and 59).

    .venv/bin/python tests/benchmarks/slider_vs_voila.py --voila /path/to/venv/bin/voila \\
        [--site site] [--sweeps 3] [--out FILE]

Voilà is not one of the book's dependencies: install it in a venv of its own (`pip install voila
ipywidgets anywidget plotly numpy`, with the book's torch reachable, e.g. by a `.pth` file naming
`.venv`'s site-packages). It serves `tests/benchmarks/voila/attention_scaling.ipynb`: the same
`compute` as the book's API, the same figure, drawn by plotly's FigureWidget, two
SelectionSliders over the book's stops (d_k 1…1024, positions 2…512, in doublings).

Each move is one ArrowRight or ArrowLeft key on a focused slider (a keyboard step, so both pages
take the same input), a second apart. A MutationObserver on the figure records each change to it;
`figure` is the time from the key to the last change the move made (no change for 400 ms after
it), `paint` to the frame after that change. Every answer is computed: the book's server keeps
results for 1 s (`BOOK_CACHE_TTL_SECONDS=1`, moves are a second apart) and the browser's HTTP cache
is off, as Voilà's kernel recomputes every move. Figures are recorded, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "site"))
from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from tests.support.server import free_port, serve  # noqa: E402

NOTEBOOK = ROOT / "tests/benchmarks/voila/attention_scaling.ipynb"
D_K = [2 ** i for i in range(11)]
POSITIONS = [2 ** i for i in range(1, 10)]
QUIET_MS = 400

# Installed on the figure: each change to it, and the frame after the last one.
OBSERVE = """(sel) => {
    const fig = document.querySelector(sel);
    const b = window.__b = {changes: [], paints: [], key: null};
    new MutationObserver(() => {
        const t = performance.now();
        b.changes.push(t);
        requestAnimationFrame(() => setTimeout(() => b.paints.push([t, performance.now()]), 0));
    }).observe(fig, {subtree: true, childList: true, attributes: true, characterData: true});
    document.addEventListener('keydown', () => { b.key = performance.now(); }, true);
}"""

# Once the figure has been still for QUIET_MS after a key: [figure ms, paint ms] or null.
SETTLED = """(quiet) => {
    const b = window.__b;
    const after = b.changes.filter(t => t > b.key);
    if (!after.length) return performance.now() - b.key > 15000 ? [null, null] : null;
    const last = after[after.length - 1];
    if (performance.now() - last < quiet) return null;
    const paint = b.paints.find(([t]) => t === last);
    return paint ? [last - b.key, paint[1] - b.key] : null;
}"""


def tour(stops: list[int], start: int) -> list[str]:
    """Keys that walk a slider from `start` to its top, down to its bottom and back to `start`."""
    i, top = stops.index(start), len(stops) - 1
    return ["ArrowRight"] * (top - i) + ["ArrowLeft"] * top + ["ArrowRight"] * i


def measure(page, figure: str, sliders: dict[str, str], sweeps: int) -> dict:
    page.evaluate(OBSERVE, figure)
    out = {}
    for name, handle in sliders.items():
        stops, start = (D_K, 64) if name == "d_k" else (POSITIONS, 8)
        times = []
        for _ in range(sweeps):
            for key in tour(stops, start):
                page.focus(handle)
                page.keyboard.press(key)
                page.wait_for_function(f"() => ({SETTLED})({QUIET_MS})", timeout=30_000)
                times.append(page.evaluate(f"() => ({SETTLED})(0)"))
                # the next move a second after this one's key (the book's cache keeps 1 s)
                page.wait_for_function("() => performance.now() - window.__b.key >= 1000")
        figs = sorted(t[0] for t in times if t[0] is not None)
        paints = sorted(t[1] for t in times if t[1] is not None)
        out[name] = {"moves": len(times), "missed": sum(t[0] is None for t in times),
                     "figure": stats(figs), "paint": stats(paints)}
    return out


def stats(xs: list[float]) -> dict:
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "p50": round(statistics.median(xs), 1),
            "p95": round(xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))], 1),
            "max": round(xs[-1], 1)}


def wait_port(port: int, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--voila", required=True, help="the voila executable of Voilà's venv")
    ap.add_argument("--site", type=Path, default=ROOT / "site")
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "tests/benchmarks/results/slider_vs_voila.json")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    result = {"benchmark": "slider_vs_voila", "date": time.strftime("%Y-%m-%d %H:%M"),
              "cpus": os.cpu_count(), "machine": platform.machine(),
              "load_average_before": [round(x, 2) for x in os.getloadavg()],
              "method": __doc__.split("\n\n", 3)[3].strip()}
    port = free_port()
    voila = subprocess.Popen(
        [args.voila, "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1", str(NOTEBOOK)],
        env={**os.environ, "BOOK_ROOT": str(ROOT), "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_port(port, 60)
        with serve(args.site, env={"BOOK_CACHE_TTL_SECONDS": "1"}) as book, \
                sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            pages = {
                "book": (f"{book.base}/chapters/scaling/",
                         '[data-widget="attention_scaling"] .js-plotly-plot',
                         {"d_k": '[data-widget="attention_scaling"] input[type=range][name="d_k"]',
                          "n_positions": '[data-widget="attention_scaling"] '
                                         'input[type=range][name="n_positions"]'}),
                "voila": (f"http://127.0.0.1:{port}/", ".js-plotly-plot",
                          {"d_k": ".widget-hslider:nth-of-type(1) .noUi-handle",
                           "n_positions": ".widget-hslider:nth-of-type(2) .noUi-handle"}),
            }
            for label, (url, figure, sliders) in pages.items():
                context = browser.new_context(viewport={"width": 1200, "height": 900})
                page = context.new_page()
                cdp = context.new_cdp_session(page)
                cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
                page.goto(url, timeout=120_000)
                page.wait_for_selector(figure + " .main-svg", timeout=120_000)
                if label == "book":
                    page.wait_for_function("() => document.querySelector("
                                           "'[data-widget=\"attention_scaling\"]').dataset.spec "
                                           "=== 'server'", timeout=60_000)
                result[label] = measure(page, figure, sliders, args.sweeps)
                print(label, json.dumps(result[label]), flush=True)
                context.close()
            browser.close()
    finally:
        voila.terminate()
        voila.wait(10)
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
