"""Benchmark: slider move to redrawn plot, for every widget of the book, in headless Chromium
against `make serve`'s gunicorn.

    .venv/bin/python tests/benchmarks/slider_latency.py [--moves 12] [--widget NAME] [--out FILE]
                                                        [--site DIR]

Needs a built book in site/ (`make build`). For each widget it opens the chapter that shows it,
takes the first slider that is enabled (or, for a widget of choices only, its first select), and
moves it to `--moves` different stops spread over its
range, one at a time, waiting for Plotly's `afterplot` after each. Each stop is a new setting,
so the server computes it (answers from the server's cache are counted apart). Prints a JSON line
per widget and writes them all to --out (default tests/benchmarks/results/slider_latency.json):
median / p95 / max of input event → redrawn plot, and of the server's own compute time.
Figures are recorded, not asserted: timings on a shared machine are too noisy for a pass/fail line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
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


def pages_by_widget(site: Path) -> dict[str, str]:
    """widget name -> URL path of the first page that shows it."""
    found: dict[str, str] = {}
    for page in sorted(site.rglob("index.html")):
        for name in re.findall(r'data-widget="([\w-]+)"', page.read_text(encoding="utf-8")):
            rel = page.parent.relative_to(site).as_posix()
            found.setdefault(name, "/" + (rel + "/" if rel != "." else ""))
    return found


def summary(xs: list[float]) -> dict:
    if not xs:
        return {"n": 0}
    xs = sorted(xs)
    return {"n": len(xs), "median": round(statistics.median(xs), 1),
            "p95": round(xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))], 1),
            "max": round(xs[-1], 1)}


MOVE = """([w, stop]) => {
    const root = document.querySelector(w);
    const s = [...root.querySelectorAll('input[type=range]')].find(x => !x.disabled);
    if (!s) {  // a widget of choices only: step through the first select's options instead
        const sel = [...root.querySelectorAll('select')].find(x => !x.disabled);
        if (!sel) return null;
        const i = Math.round(stop * (sel.options.length - 1));
        if (sel.selectedIndex === i) return sel.name + ' (unchanged)';
        window.__plotted = 0; window.__moved = performance.now();
        sel.selectedIndex = i; sel.dispatchEvent(new Event('change', {bubbles: true}));
        return sel.name;
    }
    const lo = +s.min, hi = +s.max, step = s.step === 'any' ? 0 : +s.step;
    let v = lo + (hi - lo) * stop;
    if (step) v = lo + Math.round((v - lo) / step) * step;
    window.__plotted = 0; window.__moved = performance.now();
    s.value = v; s.dispatchEvent(new Event('input', {bubbles: true}));
    return s.name;
}"""


def bench_widget(page, base: str, name: str, path: str, moves: int) -> dict:
    w = f'[data-widget="{name}"]'
    page.goto(base + path)
    page.wait_for_selector(f"{w} .tw-plot .main-svg", timeout=30_000)
    page.evaluate(f"""() => document.querySelector('{w} .tw-plot')
        .on('plotly_afterplot', () => {{ window.__plotted = performance.now(); }})""")
    latencies, computes, cached, slider = [], [], 0, None
    # Stops spread over the range in an order that never repeats a setting.
    stops = [(i * 7 % moves) / max(1, moves - 1) for i in range(moves)]
    for stop in stops:
        slider = page.evaluate(MOVE, [w, stop])
        if slider is None:
            break
        if slider.endswith("(unchanged)"):
            continue
        try:
            page.wait_for_function("window.__plotted > window.__moved", timeout=30_000)
        except Exception:  # the setting was refused or redrew nothing: not a latency
            continue
        latencies.append(page.evaluate("window.__plotted - window.__moved"))
        status = page.locator(f"{w} .tw-status").first.inner_text()
        if "server's cache" in status:
            cached += 1
        elif " in " in status and " ms" in status:
            computes.append(float(status.split(" in ")[1].split(" ms")[0]))
    return {"widget": name, "page": path, "slider": slider, "moves": len(latencies),
            "cached": cached, "slider_to_plot_ms": summary(latencies),
            "server_compute_ms": summary(computes)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moves", type=int, default=12)
    ap.add_argument("--widget", action="append", help="only these widgets (repeatable)")
    ap.add_argument("--out", default=str(ROOT / "tests/benchmarks/results/slider_latency.json"))
    ap.add_argument("--site", default=str(ROOT / "site"), help="a built book (default site/)")
    args = ap.parse_args()
    site = Path(args.site)
    if not (site / "index.html").is_file():
        sys.exit(f"{args.site} is not built: run `make build` first")
    targets = pages_by_widget(site)
    if args.widget:
        targets = {k: v for k, v in targets.items() if k in args.widget}

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "backend/gunicorn_conf.py"],
                              cwd=ROOT, env={**os.environ, "PORT": str(port),
                                             "BOOK_SITE_DIR": str(site)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    results = []
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/api/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(5)  # let the workers' warm-up threads finish before timing anything
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            for name, path in targets.items():
                r = bench_widget(page, base, name, path, args.moves)
                results.append(r)
                print(json.dumps(r), flush=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)

    record = {"benchmark": "slider_latency", "cpus": os.cpu_count(),
              "machine": platform.machine(), "date": time.strftime("%Y-%m-%d %H:%M"),
              "load_average": os.getloadavg(), "widgets": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
