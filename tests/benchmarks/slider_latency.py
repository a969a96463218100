"""Benchmark: slider move to redrawn plot, in headless Chromium against `make serve`'s gunicorn.

    .venv/bin/python tests/benchmarks/slider_latency.py [--moves 40] [--out FILE] [--site DIR]

Needs a built book in site/ (`make build`). Prints a JSON line and writes it to --out
(default tests/benchmarks/results/slider_latency.json): median / p90 / max of the time from
the `input` event to Plotly's `afterplot` (a single move on a quiet line is sent at once; the
90 ms debounce only coalesces a drag's rapid steps), and of the server-side compute time the
API reports. Figures are recorded, not asserted: timings on
a shared CI machine are too noisy for a pass/fail line.
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
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "site"))
from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

WIDGET = '[data-widget="attention_scaling"]'


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moves", type=int, default=40)
    ap.add_argument("--out", default=str(ROOT / "tests/benchmarks/results/slider_latency.json"))
    ap.add_argument("--site", default=str(ROOT / "site"), help="a built book (default site/)")
    args = ap.parse_args()
    if not (Path(args.site) / "index.html").is_file():
        sys.exit(f"{args.site} is not built: run `make build` first")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "backend/gunicorn_conf.py"],
                              cwd=ROOT, env={**os.environ, "PORT": str(port),
                                                      "BOOK_SITE_DIR": str(Path(args.site))},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/api/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(base + "/chapters/scaling/")
            page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg")
            page.evaluate(f"""() => document.querySelector('{WIDGET} .tw-plot')
                .on('plotly_afterplot', () => {{ window.__plotted = performance.now(); }})""")
            latencies, computes = [], []
            for i in range(args.moves):
                position = [3, 5, 7, 9, 10, 8, 6, 4][i % 8]  # d_k = 2**position
                n_positions = 8 + i  # a new setting each move: no answer from the result cache
                page.evaluate("""([w, pos, n]) => {
                    const root = document.querySelector(w);
                    root.widget.params.n_positions = n;
                    const s = root.querySelector('input[type=range][name=d_k]');
                    window.__plotted = 0; window.__moved = performance.now();
                    s.value = pos; s.dispatchEvent(new Event('input', {bubbles: true}));
                }""", [WIDGET, position, n_positions])
                page.wait_for_function("window.__plotted > window.__moved", timeout=15_000)
                latencies.append(page.evaluate("window.__plotted - window.__moved"))
                status = page.locator(f"{WIDGET} .tw-status").inner_text()
                if "server's cache" in status:  # a cached answer reports no compute time
                    continue
                computes.append(float(status.split(" in ")[1].split(" ms")[0]))
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)

    def summary(xs):
        xs = sorted(xs)
        return {"median": round(statistics.median(xs), 1),
                "p90": round(xs[int(0.9 * (len(xs) - 1))], 1), "max": round(xs[-1], 1)}

    result = {"benchmark": "slider_latency", "widget": "attention_scaling", "moves": args.moves,
              "slider_to_plot_ms": summary(latencies), "server_compute_ms": summary(computes),
              "cpus": os.cpu_count(), "machine": platform.machine(),
              "date": time.strftime("%Y-%m-%d %H:%M")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
