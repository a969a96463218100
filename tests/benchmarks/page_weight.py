"""Benchmark: bytes of each chapter's first load, as a real Chromium fetches them, and the time of
the full site build.

    .venv/bin/python tests/benchmarks/page_weight.py [--site DIR | --build] [--out FILE]

With --build (or when --site has no built book) it first runs `mkdocs build --strict` into a
temporary folder and records how long it took (notebooks executed, widgets baked; whether the
notebook cache `.cache/` was there before is recorded too, since it saves the notebooks' runs).
Then it serves the book with the real gunicorn and opens every page in a fresh headless-Chromium
context (empty cache), waits until the network is idle (Plotly, fonts and every lazy fetch
included), and adds up the bytes on the wire for every response (CDP `encodedDataLength`: body
compressed as served, plus headers). Writes tests/benchmarks/results/page_weight.json:
per page the total, the largest resources, and whether it shows a widget; the target (issue 33,
item 7) is at most 0.75 MB for a chapter's first load. Recorded, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "site"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from load_plan import pages_with_widgets  # noqa: E402

from tests.support.server import serve  # noqa: E402

TARGET_BYTES = 750_000


def build(site: Path) -> dict:
    had_cache = (ROOT / ".cache").exists()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if proc.returncode:
        sys.exit(f"mkdocs build failed:\n{proc.stderr[-4000:]}")
    return {"seconds": round(seconds, 1), "notebook_cache_before": had_cache,
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}


def weigh(browser, url: str) -> dict:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    urls, sizes = {}, {}
    cdp.on("Network.responseReceived", lambda e: urls.__setitem__(e["requestId"], e["response"]["url"]))
    cdp.on("Network.loadingFinished",
           lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    page.goto(url, wait_until="networkidle", timeout=60_000)
    page.wait_for_timeout(500)  # a fetch started by a timer after idle
    context.close()
    items = sorted(((sizes[r], urls.get(r, "?")) for r in sizes), reverse=True)
    return {"bytes": sum(s for s, _ in items), "requests": len(items),
            "largest": [{"url": u.split("://", 1)[-1].split("/", 1)[-1], "bytes": s}
                        for s, u in items[:5]]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", default=str(ROOT / "site"))
    ap.add_argument("--build", action="store_true", help="build the book first, timed")
    ap.add_argument("--out", default=str(ROOT / "tests/benchmarks/results/page_weight.json"))
    args = ap.parse_args()
    result = {"benchmark": "page_weight", "date": time.strftime("%Y-%m-%d %H:%M"),
              "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()],
              "target_widget_chapter_bytes": TARGET_BYTES}
    tmp = None
    site = Path(args.site)
    if args.build or not (site / "index.html").is_file():
        tmp = tempfile.TemporaryDirectory(prefix="book-site-")
        site = Path(tmp.name)
        result["build"] = build(site)
        print("build", result["build"], flush=True)
    from playwright.sync_api import sync_playwright

    pages = pages_with_widgets(site)
    result["pages"] = {}
    with serve(site) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for path, widgets in pages.items():
            if path.startswith(("/404", "/search")):
                continue
            entry = {"widgets": widgets, **weigh(browser, server.base + path)}
            if widgets:
                entry["within_target"] = entry["bytes"] <= TARGET_BYTES
            result["pages"][path] = entry
            print(path, entry["bytes"], entry["requests"], flush=True)
        browser.close()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
