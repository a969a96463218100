"""Benchmark: control change to redrawn plot, for every widget of the book, in headless Chromium
against `make serve`'s gunicorn, with a breakdown of where the time goes.

    .venv/bin/python tests/benchmarks/slider_latency.py [--moves 8] [--widget NAME] [--out FILE]
                                                        [--site DIR] [--label TEXT]
    .venv/bin/python tests/benchmarks/slider_latency.py --table BEFORE.json AFTER.json

Needs a built book in site/ (`make build`). For each widget it opens the chapter that shows it and
takes the first enabled slider (for a widget of choices only, its first select). Three ways of
moving it, each timed from the event to Plotly's `plotly_afterplot` and to the next frame after it
(`paint`, a requestAnimationFrame then a task: the figure is on screen):

- `step`: one slider `input` event to a new stop, waiting for the plot before the next (a click on
  the track, or a key press);
- `typed`: a value typed into the number box beside the slider (`change`), or a select changed;
- `drag`: `input` events every 16 ms (a 60 Hz drag) across the slider's whole range, in ~1.5 s.
  For each figure drawn during the drag, `age` is how old the value it shows is (afterplot minus
  the input event of the newest value the request that drew it carried); `fresh` is, for each input
  event that moved the slider to a new stop (`stops`; an event within the same stop changes
  nothing), the time until a figure showing that value or a newer one is drawn. Also recorded: POSTs
  sent, the most in flight at once, and whether the last POST carried the last value.

The breakdown per step/typed move is measured from outside the runtime (so it reads the same for
any runtime version): `wait` (event to the request leaving: debounce), `ttfb` (request to the first
byte of the answer: network + server), `download`, `client` (answer in to `Plotly.react` called:
JSON parse, values, table, theme), `react` (Plotly.react's synchronous work, wrapped in the page),
`paint` (afterplot to the next frame), plus the answer's `bytes`. Where the runtime leaves its own
`tw:update` Performance measures (widgets/runtime/render.js), their `parse` time is recorded too.
Answers from the server's cache are counted (`cached`): a cached answer has no compute time.
Figures are recorded, not asserted: timings on a shared machine are too noisy for a pass/fail
line; the machine's load average before and after is written with them.
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "site"))
from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from tests.support.browser import computes, setting  # noqa: E402


def pages_by_widget(site: Path) -> dict[str, str]:
    """widget name -> URL path of the first page that shows it."""
    found: dict[str, str] = {}
    for page in sorted(site.rglob("index.html")):
        for name in re.findall(r'data-widget="([\w-]+)"', page.read_text(encoding="utf-8")):
            rel = page.parent.relative_to(site).as_posix()
            found.setdefault(name, "/" + (rel + "/" if rel != "." else ""))
    return found


def summary(xs: list[float]) -> dict:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "median": round(statistics.median(xs), 1),
            "p95": round(xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))], 1),
            "max": round(xs[-1], 1)}


# Installed once per page: wraps Plotly.react for this widget's plot, records afterplot and the
# next frame after it, and the runtime's own measures if it leaves any.
INSTRUMENT = """(w) => {
    const gd = document.querySelector(w + ' .tw-plot');
    const b = window.__b = {reacts: [], plots: [], paints: [], inputs: []};
    const P = window.Plotly, react = P.react;
    P.react = function (div) {
        const t0 = performance.now();
        const out = react.apply(this, arguments);
        if (div === gd) b.reacts.push([t0, performance.now()]);
        return out;
    };
    gd.on('plotly_afterplot', () => {
        const t = performance.now();
        b.plots.push(t);
        requestAnimationFrame(() => setTimeout(() => b.paints.push([t, performance.now()]), 0));
    });
}"""

# The control to move, and its value at a position 0..1 of its range.
CONTROL = """(w) => {
    const root = document.querySelector(w);
    const s = [...root.querySelectorAll('input[type=range]')].find(x => !x.disabled);
    if (s) return {kind: 'range', name: s.name, min: +s.min, max: +s.max,
                   step: s.step === 'any' ? 0 : +s.step,
                   log: !!root.querySelector(`input[name="${s.name}-value"]`) &&
                        +root.querySelector(`input[name="${s.name}-value"]`).max > +s.max};
    const sel = [...root.querySelectorAll('select')].find(x => !x.disabled);
    if (sel) return {kind: 'select', name: sel.name, n: sel.options.length};
    return null;
}"""

MOVE = """([w, c, stop, how]) => {
    const root = document.querySelector(w);
    const mark = () => { window.__moved = performance.now(); };
    if (c.kind === 'select') {
        const sel = root.querySelector(`select[name="${c.name}"]`);
        const i = Math.round(stop * (c.n - 1));
        if (sel.selectedIndex === i) return null;
        mark(); sel.selectedIndex = i; sel.dispatchEvent(new Event('change', {bubbles: true}));
        return sel.value;
    }
    const s = root.querySelector(`input[type=range][name="${c.name}"]`);
    let v = c.min + (c.max - c.min) * stop;
    if (c.step) v = c.min + Math.round((v - c.min) / c.step) * c.step;
    if (how === 'typed') {
        const box = root.querySelector(`input[name="${c.name}-value"]`);
        const value = c.log ? Math.round(Math.pow(2, v)) : v;
        if (String(value) === box.value) return null;
        mark(); box.value = value; box.dispatchEvent(new Event('change', {bubbles: true}));
        return box.value;
    }
    if (String(v) === s.value) return null;
    mark(); s.value = v; s.dispatchEvent(new Event('input', {bubbles: true}));
    return s.value;
}"""

# A 60 Hz drag across the slider's range, low to high; resolves with the input times.
DRAG = """async ([w, c, n]) => {
    const s = document.querySelector(w).querySelector(`input[type=range][name="${c.name}"]`);
    const times = [];  // only the events that moved the slider to a new stop
    let prev = s.value;
    for (let i = 0; i < n; i++) {
        let v = c.min + (c.max - c.min) * i / (n - 1);
        if (c.step) v = c.min + Math.round((v - c.min) / c.step) * c.step;
        s.value = v;
        if (s.value !== prev) times.push(performance.now());
        prev = s.value;
        s.dispatchEvent(new Event('input', {bubbles: true}));
        await new Promise(r => setTimeout(r, 16));
    }
    return {times: times, last: s.value, events: n};
}"""

ENTRIES = """(name) => ({
    res: performance.getEntriesByType('resource')
        .filter(e => e.name.includes('/api/widgets/' + name))
        .map(e => ({start: e.startTime, reqStart: e.requestStart, ttfb: e.responseStart,
                    end: e.responseEnd, bytes: e.encodedBodySize})),
    runtime: performance.getEntriesByName('tw:update').map(e => e.detail || {}),
    b: window.__b})"""


def after(xs, t):
    """First element of the sorted list xs at or after t (None if none)."""
    return next((x for x in xs if x >= t), None)


def moves(page, w, name, control, how, n, status_sel) -> dict:
    lat, lat_paint, computes, cached = [], [], [], 0
    parts = {k: [] for k in ("wait", "ttfb", "download", "client", "react", "paint", "bytes",
                             "parse")}
    stops = [(i * 7 % n) / max(1, n - 1) for i in range(n)]
    if how == "typed":  # other stops than the slider steps took, where the range allows
        stops = [min(1.0, s + 0.5 / max(1, n - 1)) for s in stops]
    for stop in stops:
        before = page.evaluate(f"""() => ({{plots: __b.plots.length,
            res: performance.getEntriesByType('resource')
                 .filter(e => e.name.includes('/api/widgets/{name}')).length,
            rt: performance.getEntriesByName('tw:update').length}})""")
        if page.evaluate(MOVE, [w, control, stop, how]) is None:
            continue
        try:
            page.wait_for_function(
                f"""() => __b.paints.length > {before['plots']} &&
                    performance.getEntriesByType('resource')
                      .filter(e => e.name.includes('/api/widgets/{name}')).length > {before['res']}""",
                timeout=30_000)
        except Exception:  # refused, or redrew nothing: not a latency
            continue
        moved = page.evaluate("window.__moved")
        e = page.evaluate(ENTRIES, name)
        res = e["res"][before["res"]]
        plot_t, paint_t = e["b"]["paints"][before["plots"]]
        react = next((r for r in e["b"]["reacts"] if r[0] >= res["end"]), None)
        lat.append(plot_t - moved)
        lat_paint.append(paint_t - moved)
        parts["wait"].append(res["start"] - moved)
        parts["ttfb"].append(res["ttfb"] - res["start"])
        parts["download"].append(res["end"] - res["ttfb"])
        parts["bytes"].append(res["bytes"])
        if react:
            parts["client"].append(react[0] - res["end"])
            parts["react"].append(react[1] - react[0])
        parts["paint"].append(paint_t - plot_t)
        if len(e["runtime"]) > before["rt"]:
            parts["parse"].append(e["runtime"][before["rt"]].get("parse"))
        status = page.locator(status_sel).first.inner_text()
        if "server's cache" in status:
            cached += 1
        elif " in " in status and " ms" in status:
            computes.append(float(status.split(" in ")[1].split(" ms")[0]))
    return {"n": len(lat), "cached": cached, "to_plot_ms": summary(lat),
            "to_paint_ms": summary(lat_paint), "server_compute_ms": summary(computes),
            "breakdown_median_ms": {k: summary(v).get("median") for k, v in parts.items()}}


def drag(page, w, name, control, n=90) -> dict:
    posts = []
    def listener(r):
        return computes(r, name) and posts.append(setting(r))
    page.on("request", listener)
    n_res = page.evaluate(f"""() => performance.getEntriesByType('resource')
        .filter(e => e.name.includes('/api/widgets/{name}')).length""")
    n_plots = page.evaluate("__b.plots.length")
    out = page.evaluate(DRAG, [w, control, n])
    # wait until every request sent is answered and drawn, and nothing moves for 400 ms
    deadline = time.time() + 60
    last = None
    while time.time() < deadline:
        state = page.evaluate(f"""() => [performance.getEntriesByType('resource')
            .filter(e => e.name.includes('/api/widgets/{name}')).length, __b.paints.length]""")
        if state == last and state[0] - n_res >= len(posts) - 0:
            break
        last = state
        page.wait_for_timeout(400)
    page.remove_listener("request", listener)
    e = page.evaluate(ENTRIES, name)
    res = sorted(e["res"][n_res:], key=lambda r: r["start"])
    plots = e["b"]["plots"][n_plots:]
    times = out["times"]
    # what each request carried: the newest input dispatched before it left
    carried = []
    for r in res:
        ins = [t for t in times if t <= r["start"]]
        carried.append(ins[-1] if ins else None)
    ages, shown_at = [], []  # per drawn figure: age of the value it shows
    for p in plots:
        done = [i for i, r in enumerate(res) if r["end"] <= p]
        if not done or carried[done[-1]] is None:
            continue
        ages.append(p - carried[done[-1]])
        shown_at.append((p, carried[done[-1]]))
    fresh = []  # per input: until a figure of that value or newer is drawn
    for t in times:
        hit = next((p for p, c in shown_at if c >= t), None)
        if hit is not None:
            fresh.append(hit - t)
    inflight = 0
    for r in res:
        inflight = max(inflight, sum(1 for q in res if q["start"] <= r["start"] < q["end"]))
    final = posts[-1].get(control["name"]) if posts else None
    return {"inputs": out["events"], "stops": len(times), "posts": len(posts), "max_in_flight": inflight,
            "figures": len(plots), "age_ms": summary(ages), "fresh_ms": summary(fresh),
            "last_post_is_last_value": final is not None and str(final) == str(
                _value(control, out["last"])),
            "ttfb_ms": summary([r["ttfb"] - r["start"] for r in res])}


def _value(control, slider_value):
    v = float(slider_value)
    if control.get("log"):
        v = 2 ** v
    return int(v) if v == int(v) else v


def bench_widget(page, base: str, name: str, path: str, n: int) -> dict:
    w = f'[data-widget="{name}"]'
    page.goto(base + path)
    page.wait_for_selector(f"{w} .tw-plot .main-svg", timeout=30_000)
    page.evaluate(INSTRUMENT, w)
    control = page.evaluate(CONTROL, w)
    out = {"widget": name, "page": path, "control": control and control["name"]}
    if not control:
        return out
    status = f"{w} .tw-status"
    out["step"] = moves(page, w, name, control, "step", n, status)
    if control["kind"] == "range":
        out["typed"] = moves(page, w, name, control, "typed", n, status)
        out["drag"] = drag(page, w, name, control)
    return out


def table(before_file: str, after_file: str) -> str:
    """A Markdown table of two recorded runs, before -> after, per widget."""
    before = {w["widget"]: w for w in json.loads(Path(before_file).read_text())["widgets"]}
    after = json.loads(Path(after_file).read_text())

    def cell(w, mode, key="to_paint_ms"):
        x = (w or {}).get(mode, {}).get(key) if mode != "drag" else (w or {}).get("drag", {}).get(key)
        return f"{x['median']:.0f} / {x['p95']:.0f}" if x and x.get("n") else "–"

    lines = ["| widget | server compute (after) | step: to paint | typed: to paint | "
             "drag: age of drawn value | drag: input to fresh figure | drag POSTs (max in flight) | "
             "after, median ms: ttfb · react · paint · KB |",
             "|---|---|---|---|---|---|---|---|"]
    for w in after["widgets"]:
        b = before.get(w["widget"])
        bd = (w.get("typed") or w.get("step") or {}).get("breakdown_median_ms", {})
        d, bdrag = w.get("drag", {}), (b or {}).get("drag", {})
        posts = (f"{bdrag.get('posts', '–')} ({bdrag.get('max_in_flight', '–')}) → "
                 f"{d.get('posts', '–')} ({d.get('max_in_flight', '–')})") if d else "–"
        parts = " · ".join("–" if bd.get(k) is None else f"{bd[k]:.0f}"
                           for k in ("ttfb", "react", "paint"))
        kb = f"{bd['bytes'] / 1000:.1f}" if bd.get("bytes") else "–"
        lines.append(f"| {w['widget']} | {cell(w, 'typed' if 'typed' in w else 'step', 'server_compute_ms')}"
                     f" | {cell(b, 'step')} → {cell(w, 'step')}"
                     f" | {cell(b, 'typed')} → {cell(w, 'typed')}"
                     f" | {cell(b, 'drag', 'age_ms')} → {cell(w, 'drag', 'age_ms')}"
                     f" | {cell(b, 'drag', 'fresh_ms')} → {cell(w, 'drag', 'fresh_ms')}"
                     f" | {posts} | {parts} · {kb} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="print a Markdown table of two recorded runs and exit")
    ap.add_argument("--moves", type=int, default=8)
    ap.add_argument("--widget", action="append", help="only these widgets (repeatable)")
    ap.add_argument("--out", default=str(ROOT / "tests/benchmarks/results/slider_latency.json"))
    ap.add_argument("--site", default=str(ROOT / "site"), help="a built book (default site/)")
    ap.add_argument("--label", default="", help="what this run measures (written with it)")
    args = ap.parse_args()
    if args.table:
        print(table(*args.table), end="")
        return
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
    load_before = os.getloadavg()
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

    record = {"benchmark": "slider_latency", "label": args.label, "cpus": os.cpu_count(),
              "machine": platform.machine(), "date": time.strftime("%Y-%m-%d %H:%M"),
              "load_average_before": load_before, "load_average_after": os.getloadavg(),
              "widgets": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
