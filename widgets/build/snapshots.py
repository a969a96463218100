"""Each widget's opening figure as a picture in the page, drawn before any script runs.

A widget's figure is drawn by plotly.js, which the page has evaluated only after Material's own
script and its start-up (1.5-3 s after a first navigation on this machine, though the figure
needs no answer from the server: tests/benchmarks/first_paint_trace.py). So the build draws
each widget's opening figure once, with the book's own runtime and plotly.js bundle in a
headless Chromium, and writes what plotly drew as SVG files beside the page: four of them, the
figure in the light and the dark scheme at a desktop's width and in its phone layout at a
phone's. The page shows the one that fits (runtime.css: the scheme Material has set on the
body, the phone layout under the width at which the runtime takes it) as soon as the page
itself is painted, and the runtime puts plotly's live figure in its place when plotly.js is in
(render.js). Each picture is a background image: a browser fetches the one it shows as soon as
it has styled the page, and never the three it does not (an `<img>` is fetched even hidden, and
a lazy one only once the page's scripts have run: 2.6 s in, here); `elementtiming` lets a
benchmark read when one was painted (tests/benchmarks/first_paint.py).

Where no Chromium (or no Playwright) is installed the book is built without them and says so:
the figures are then drawn when plotly.js is in, as before. What was drawn is kept in
.cache/snapshots/, keyed by the widget's baked data and everything that draws it, so a
rebuild draws only the widgets whose figure changed.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import logging
import os
import re
import shutil
import threading
from functools import partial
from pathlib import Path

from mkdocs.exceptions import PluginError

log = logging.getLogger("mkdocs.plugins.snapshots")

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "snapshots"
CHROMIUM = os.environ.get("BOOK_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
OUT = "assets/book/snaps"  # under the site, each file named after its content
# The two widths drawn: a desktop's (the figure as most readers see it first) and a phone's
# (its phone layout: render.js takes it under theme.js's NARROW_PX).
VIEWPORTS = {"wide": {"width": 1280, "height": 900}, "narrow": {"width": 390, "height": 844}}
# The room around the figure (title and controls above, readouts below) changes with the width
# the widget is laid out at: it is also measured in these windows, after drawing in the one
# above, and runtime.css takes each in a band of window widths around it (Material's layout
# changes at 1220 px, its font size at 1600 px). Each width costs about 10 s of build: 768 px,
# within 50 px of 1024's room for every widget, is left to 1024's band.
ROOM_AT = {"wide": (1920, 1440, 1024), "narrow": (360,)}
SCHEMES = {"light": "default", "dark": "slate"}
# What draws a figure besides its baked data: the runtime, plotly.js, the page's styles and
# colours. A change to any of them draws every figure again.
DRAWN_BY = ("widgets/runtime", "widgets/build/plotly_bundle.mjs", "widgets/build/snapshots.py",
            "backend/compute/style.py", "mkdocs.yml", "requirements-docs.lock", "package-lock.json")
# A widget's div as widget_blocks.py writes it: its id, its data (spec and baked results), and
# the end its pictures go before.
WIDGET = re.compile(r'<div class="tw-widget[^"]*" data-widget="[^"]+" id="([^"]+)"[^>]*>'
                    r'(<template class="tw-data">.*?</template>)'
                    r'(<noscript>This interactive figure needs JavaScript\.</noscript></div>)', re.S)

# Of a widget (its root, its plot, the figure's height): what it puts above its figure (title,
# controls) and below it (readouts), inside its padding. The pictures keep that room until the
# widget starts, so nothing moves then.
ROOM = """(r, gd, height) => {
  const box = r.getBoundingClientRect(), plot = gd.getBoundingClientRect();
  const cs = getComputedStyle(r);
  const top = box.top + parseFloat(cs.paddingTop) + parseFloat(cs.borderTopWidth);
  const bottom = box.bottom - parseFloat(cs.paddingBottom) - parseFloat(cs.borderBottomWidth);
  return [plot.top - top, bottom - (plot.top + height)];
}"""
# In the page: every widget's figure once drawn (or none to draw), then each figure in each
# scheme as plotly.js exports it (its own SVG, at the size it was drawn), and its room.
DRAW = """async (schemes) => {
  await document.fonts.ready;  // the room is the text's in the book's fonts
  const room = """ + ROOM + """;
  const roots = [...document.querySelectorAll("[data-widget]")];
  const out = {};
  for (const [name, scheme] of Object.entries(schemes)) {
    if (document.body.getAttribute("data-md-color-scheme") !== scheme) {
      document.body.setAttribute("data-md-color-scheme", scheme);
    }
    await Promise.all(roots.map((r) => r.widget.draw()));
    for (const r of roots) {
      const gd = r.querySelector(".tw-plot.js-plotly-plot");
      if (!gd) continue;
      const { width, height } = gd._fullLayout;
      const url = await window.Plotly.toImage(gd, { format: "svg", width, height });
      const svg = decodeURIComponent(url.slice(url.indexOf(",") + 1));
      if (!out[r.id]) {
        const [above, below] = room(r, gd, height);
        const head = r.querySelector(".tw-head");
        out[r.id] = { height, above, below, rooms: {}, head: head ? head.outerHTML : "" };
      }
      out[r.id][name] = svg;
    }
  }
  return out;
}"""
# In the page, its window just resized: each widget's room, once the page has laid out again
# (the room is the page's HTML; the figure keeps its height).
ROOM_NOW = """async () => {
  const room = """ + ROOM + """;
  for (let i = 0; i < 2; i++) await new Promise((done) => requestAnimationFrame(done));
  const out = {};
  for (const r of document.querySelectorAll("[data-widget]")) {
    const gd = r.querySelector(".tw-plot.js-plotly-plot");
    if (gd) out[r.id] = room(r, gd, gd._fullLayout.height);
  }
  return out;
}"""
READY = """(ids) => document.readyState !== "loading" && ids.every((id) => {
  const r = document.getElementById(id);
  return r && r.widget &&
    (r.querySelector(".tw-plot.js-plotly-plot .main-svg") || !(r.widget.baked[0] || {}).figure); })"""


def _digest(paths) -> str:
    h = hashlib.sha256()
    for rel in paths:
        p = ROOT / rel
        for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
            if f.is_file():
                h.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _browser():
    """Playwright and a Chromium, or None (and why) where the build has none."""
    if not (shutil.which(CHROMIUM) or Path(CHROMIUM).is_file()):
        return None, f"no Chromium at {CHROMIUM} (`make chromium` installs Debian's)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None, "Playwright is not installed"
    return sync_playwright, ""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _serve(site: Path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _draw(site: Path, pages: dict[str, list[str]], sync_playwright) -> dict:
    """{page: {widget id: {"wide"|"narrow": {"height": px, "light": svg, "dark": svg}}}}."""
    server = _serve(site)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    drawn: dict = {page: {} for page in pages}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            # One tab per width, both loading the same page at once, so one draws while the
            # other loads (here, before the rooms at ROOM_AT: 95-99 s for the book's 18 pages,
            # 102 s one after the other; with them, 141 s).
            tabs = {}
            for width, viewport in VIEWPORTS.items():
                context = browser.new_context(viewport=viewport, color_scheme="light")
                # The opening figures are baked into the page: nothing is asked of an API.
                context.route("**/api/**", lambda route: route.abort())
                tabs[width] = context.new_page()
            for page in pages:
                for pg in tabs.values():
                    pg.goto(base + page, wait_until="commit")
                for width, pg in tabs.items():
                    try:
                        pg.wait_for_function(READY, arg=pages[page], timeout=60_000,
                                             polling=100)
                        figures = pg.evaluate(DRAW, SCHEMES)
                    except Exception as exc:  # a page whose figures cannot be drawn: a broken build
                        raise PluginError(f"snapshots: {page}: the opening figures were not "
                                          f"drawn in Chromium ({exc})") from None
                    for other in ROOM_AT[width]:
                        pg.set_viewport_size({**VIEWPORTS[width], "width": other})
                        for wid, room in pg.evaluate(ROOM_NOW).items():
                            figures[wid]["rooms"][str(other)] = room
                    pg.set_viewport_size(VIEWPORTS[width])
                    for wid, fig in figures.items():
                        drawn[page].setdefault(wid, {})[width] = fig
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return drawn


def steady(svg: str) -> str:
    """`svg` without plotly's random names (its element ids, as `url(#...)` and `href` name them,
    and its traces' and colour bars' classes), numbered in order instead: the same figure is the same file, so a
    rebuild keeps its name and a reader's cached copy."""
    for n, old in enumerate(dict.fromkeys(re.findall(r'\bid="([^"]+)"', svg))):
        svg = re.sub(r'(?<=[#"])' + re.escape(old) + r'(?=["\')])', f"tw{n}", svg)
    uids = dict.fromkeys(re.findall(r"\b(?:trace|cb)([0-9a-f]{6})\b", svg))
    for n, uid in enumerate(uids):  # also inside longer class names (`ycb<uid>tick`)
        svg = re.sub(r"(?<=[a-z])" + uid, f"u{n}", svg)
    return svg


def _picture(site: Path, svg: str) -> str:
    data = steady(svg).encode("utf-8")
    name = f"{OUT}/{hashlib.sha256(data).hexdigest()[:20]}.svg"
    path = site / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return name


def room(px: float) -> int:
    return max(0, round(px))


def _head(html: str) -> str:
    """The widget's head as the runtime wrote it in the build's Chromium (its title, buttons and
    status), for the room above the picture: the same markup, so the same place at any width
    (runtime.css shows its title only). Without ids, which the runtime's own head has, nor links
    and tips, which are the runtime's to give."""
    return re.sub(r'\s(?:id|aria-\w+|for|href|title|download)="[^"]*"', "", html)


def _box(site: Path, page: str, fig: dict) -> str:
    """The pictures of one widget's figure, for a page at `page` (its relative links), under the
    widget's head (`_head`)."""
    up = "../" * page.count("/")
    imgs = []
    for width in VIEWPORTS:
        for scheme in SCHEMES:
            src = up + _picture(site, fig[width][scheme])
            imgs.append(f'<div class="tw-snap tw-snap-{width} tw-snap-{scheme}" '
                        f'style="background-image:url({src})" elementtiming="tw-snap"></div>')
    wide, narrow = fig["wide"], fig["narrow"]
    style = (f"--tw-snap-h:{round(wide['height'])}px;--tw-snap-hn:{round(narrow['height'])}px;"
             f"--tw-snap-a:{room(wide['above'])}px;--tw-snap-an:{room(narrow['above'])}px;"
             f"--tw-snap-b:{room(wide['below'])}px;--tw-snap-bn:{room(narrow['below'])}px")
    for width in VIEWPORTS:
        for at, (above, below) in fig[width]["rooms"].items():
            style += f";--tw-snap-a{at}:{room(above)}px;--tw-snap-b{at}:{room(below)}px"
    # Hidden from screen readers and inert: the runtime's widget has the label, the title, the
    # working buttons and the text summary.
    return (f'<div class="tw-snapbox" aria-hidden="true" inert style="{style}">'
            f'<div class="tw-snaps">{_head(wide.get("head", ""))}{"".join(imgs)}</div></div>')


def on_post_build(config) -> None:
    """Draw the opening figure of every widget on the site's pages into SVG pictures and put
    them in the pages (before widget_blocks gzips the pages)."""
    site = Path(config["site_dir"])
    texts = {}
    for path in sorted(site.rglob("index.html")):
        rel = path.parent.relative_to(site).as_posix()
        page = "" if rel == "." else rel + "/"
        if page.startswith("print/"):
            continue  # the print edition draws its figures for the paper (print.js)
        text = path.read_text(encoding="utf-8")
        if 'data-widget="' in text:
            texts[page] = text
    if not texts:
        return
    drawn_by = _digest(DRAWN_BY)
    keys, cached, todo = {}, {}, {}
    for page, text in texts.items():
        for m in WIDGET.finditer(text):
            key = hashlib.sha256((drawn_by + page + m.group(1) + m.group(2)).encode()).hexdigest()
            keys[(page, m.group(1))] = key
            f = CACHE / f"{key}.json"
            if f.exists():
                cached[(page, m.group(1))] = json.loads(f.read_text(encoding="utf-8"))
            else:
                todo.setdefault(page, []).append(m.group(1))
    sync_playwright, why = _browser() if todo else (None, "")
    if why:
        log.info("snapshots: %d widgets not drawn (%s); their figures show when plotly.js is in",
                 sum(len(w) for w in todo.values()), why)
    elif todo:
        drawn = _draw(site, todo, sync_playwright)
        CACHE.mkdir(parents=True, exist_ok=True)
        for page, wids in todo.items():
            for wid in wids:
                # {} for a widget with no figure to draw: kept too, so it is not drawn again
                fig = cached[(page, wid)] = drawn[page].get(wid, {})
                (CACHE / f"{keys[(page, wid)]}.json").write_text(json.dumps(fig), encoding="utf-8")
    count = 0
    for page, text in texts.items():
        def put(m: re.Match, page=page) -> str:
            nonlocal count
            fig = cached.get((page, m.group(1)))
            if not fig or set(fig) != set(VIEWPORTS):
                return m.group(0)  # a widget with no figure to draw
            count += 1
            return m.group(0)[:-len(m.group(3))] + _box(site, page, fig) + m.group(3)

        new = WIDGET.sub(put, text)
        (site / page / "index.html").write_text(new, encoding="utf-8")
    if count:
        log.info("snapshots: %d opening figures as pictures (%d widgets drawn now, the others "
                 "from .cache/snapshots)", count, 0 if why else sum(len(w) for w in todo.values()))
