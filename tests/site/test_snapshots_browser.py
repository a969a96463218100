"""Each widget's opening figure as the build's picture, from the page's first paint until
plotly.js draws it (widgets/build/snapshots.py; issue 33: the baked figure drawn within 0.8 s of
a first navigation, when plotly.js is evaluated only after Material's script, 1.5-3 s in).

Before this, a widget showed nothing where its figure goes until plotly.js was in, and "Drawing
the figure..." once the runtime had started: these tests fail on such a build (no pictures)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_runtime_paint import PICTURE_PAINTED

from tests.support.browser import DESKTOP, PHONE, new_page, started_without_plotly

pytestmark = pytest.mark.browser

# The widget's own link (the chapter's "Jump to the interactive figure"): the figure on screen
# at the first paint, as a reader following it sees it (it is far down the chapter).
SCALING = "/chapters/scaling/#widget-attention_scaling"
W = '[data-widget="attention_scaling"]'

# Of one widget: the pictures shown (their variant classes), whether each has been fetched, the
# height of the (first) one shown, and the plot's box once the runtime has put them in it.
LOADED = """const loaded = (i) => { const url = (getComputedStyle(i).backgroundImage.match(/url\\("(.*)"\\)/) || [])[1];
  return !!url && performance.getEntriesByName(url).some(e => e.responseEnd > 0); };"""
SNAPS = """(sel) => { """ + LOADED + """ const w = document.querySelector(sel);
  const shown = [...w.querySelectorAll('.tw-snap')].filter(i => getComputedStyle(i).display !== 'none');
  const box = shown[0], plot = w.querySelector('.tw-plot');
  return {shown: shown.map(i => [...i.classList].filter(c => c !== 'tw-snap').sort().join(' ')),
          loaded: shown.map(loaded),
          box: box ? box.getBoundingClientRect().height : null,
          inPlot: !!(plot && plot.querySelector('.tw-snapbox')),
          plot: plot ? {top: plot.getBoundingClientRect().top + scrollY,
                        height: plot.getBoundingClientRect().height} : null,
          live: !!w.querySelector('.tw-plot .main-svg'),
          placeholder: (w.querySelector('.tw-placeholder') || {}).textContent || null}; }"""


def _widget_pages(site: Path) -> dict[str, list[dict]]:
    """{page path: [{id, height}]}: each widget of the built book that draws an opening figure,
    and the height its figure is drawn at on a desktop (render.js: the layout's, else 450)."""
    pages = {}
    for html in sorted(site.rglob("index.html")):
        rel = "/" + html.parent.relative_to(site).as_posix() + "/"
        if rel.startswith("/print/") or rel == "/./":
            continue
        text = html.read_text(encoding="utf-8")
        found = []
        for m in re.finditer(r'data-widget="[^"]+" id="(widget-[^"]+)"[^>]*><template class='
                             r'"tw-data"><script type="application/json" class="tw-config"[^>]*>'
                             r'(.*?)</script>', text, re.S):
            first = json.loads(m.group(2).replace("<\\/", "</"))["baked"][0]
            if first.get("figure"):
                found.append({"id": m.group(1),
                              "height": first["figure"]["layout"].get("height") or 450})
        if found:
            pages[rel] = found
    return pages


def test_every_widgets_opening_figure_is_in_the_page_without_any_script(browser, server,
                                                                        built_site):
    """With JavaScript off, every widget of every page shows its opening figure's picture (the
    desktop's, light), loaded, in a box as tall as the live figure will be."""
    pages = _widget_pages(built_site)
    assert len(pages) >= 15 and sum(map(len, pages.values())) >= 25, pages
    with new_page(browser, java_script_enabled=False, **DESKTOP) as page:
        for path, widgets in pages.items():
            page.goto(server + path)
            for w in widgets:
                sel = f"#{w['id']}"
                page.locator(sel).scroll_into_view_if_needed()
                page.wait_for_function(
                    "(s) => { " + LOADED + " return [...document.querySelectorAll(s + ' .tw-snap')]"
                    ".some(i => getComputedStyle(i).display !== 'none' && loaded(i)); }",
                    arg=sel, timeout=20_000)
                got = page.evaluate(SNAPS, sel)
                assert got["shown"] == ["tw-snap-light tw-snap-wide"], (path, w, got)
                assert abs(got["box"] - w["height"]) < 1, (path, w, got)


def test_the_picture_is_there_before_plotly_and_the_live_figure_takes_its_place(browser, server):
    """The reader sees the figure while plotly.js is on its way (held here), in the box plotly's
    figure then fills: the same height, at the same place, and the picture is gone."""
    with new_page(browser, **DESKTOP) as page:
        held = started_without_plotly(page, server + SCALING, W)
        painted = page.evaluate(PICTURE_PAINTED)  # the picture's Element Timing entry
        assert painted, "the picture was never painted"
        assert held, "plotly.js was not asked for"
        before = page.evaluate(SNAPS, W)
        assert before["shown"] == ["tw-snap-light tw-snap-wide"] and before["loaded"] == [True]
        assert before["inPlot"] and not before["live"] and before["placeholder"] is None, before
        for route in held:
            route.continue_()
        page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
        after = page.evaluate(SNAPS, W)
        assert not page.locator(f"{W} .tw-snapbox").count()
        assert abs(after["plot"]["height"] - before["box"]) < 1, (before, after)
        assert abs(after["plot"]["top"] - before["plot"]["top"]) < 1, (before, after)
        assert not page.console_errors, page.console_errors


def test_a_link_to_a_widget_opens_on_it_before_the_page_has_finished_parsing(browser, server):
    """The widget's own link lands on the widget as soon as the parser has it (widget_blocks.LAND),
    not when the browser scrolls to the fragment: after the whole page is parsed and Material's
    script has run."""
    with new_page(browser, **DESKTOP) as page:
        page.add_init_script(f"""document.addEventListener('DOMContentLoaded', () => {{
            window.atDcl = {{y: scrollY,
                             top: document.querySelector('{W}').getBoundingClientRect().top}};
        }}, {{capture: true, once: true}});""")
        page.goto(server + SCALING, wait_until="domcontentloaded")
        at = page.evaluate("window.atDcl")
        assert at["y"] > 0 and 0 <= at["top"] < 100, at


@pytest.mark.parametrize("device", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_room_above_the_picture_shows_the_widgets_title_where_the_runtime_puts_it(browser,
                                                                                     server,
                                                                                     device):
    """Before the runtime starts, the room above the picture is not blank: it shows the widget's
    title, as the runtime writes it and where the runtime then puts its own (on a phone, beside
    buttons 44 px tall)."""
    title = f"""() => document.fonts.ready.then(() => [...document.querySelectorAll(
        '{W} .tw-title')].filter(t => t.checkVisibility()).map(t => {{
          const r = t.getBoundingClientRect();
          return {{text: t.textContent, top: r.top + scrollY, left: r.left,
                   snap: !!t.closest('.tw-snapbox')}}; }}))"""
    with new_page(browser, **device) as page:
        page.route("**/runtime-*/main.js", lambda route: route.abort())
        page.goto(server + SCALING, wait_until="load")
        (before,) = page.evaluate(title)
        picture = page.evaluate(f"""() => [...document.querySelectorAll('{W} .tw-snap')]
            .find(i => i.checkVisibility()).getBoundingClientRect().top + scrollY""")
    with new_page(browser, **device) as page:
        page.goto(server + SCALING, wait_until="load")
        page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=30_000)
        (after,) = page.evaluate(title)
    assert before["snap"] and not after["snap"]
    assert before["text"] == after["text"] and after["text"].strip()  # the runtime's own title
    assert before["top"] < picture
    assert abs(before["top"] - after["top"]) < 1 and abs(before["left"] - after["left"]) < 1, (
        before, after)


def test_a_phone_in_the_dark_scheme_gets_the_phone_layouts_dark_picture(browser, server):
    """The picture follows the scheme Material sets (here from the system's) and the phone
    layout the runtime takes under its width; the live figure is as tall as that picture."""
    with new_page(browser, color_scheme="dark", **PHONE) as page:
        held = []
        page.route("**/plotly.min.js", lambda route: held.append(route))
        page.goto(server + SCALING, wait_until="domcontentloaded")
        page.wait_for_function("() => { " + LOADED + f"""const w = document.querySelector('{W}');
            return document.body.getAttribute('data-md-color-scheme') === 'slate' && w.widget
                && [...w.querySelectorAll('.tw-snap')].some(i => loaded(i)
                && getComputedStyle(i).display !== 'none'); }}""", timeout=20_000)
        before = page.evaluate(SNAPS, W)
        assert before["shown"] == ["tw-snap-dark tw-snap-narrow"], before
        for route in held:
            route.continue_()
        page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
        after = page.evaluate(SNAPS, W)
        assert abs(after["plot"]["height"] - before["box"]) < 1, (before, after)


def test_a_link_to_another_setting_never_shows_the_opening_figure(browser, server):
    """A shared link's setting is not the opening figure's: its picture is hidden from the first
    paint (the page's head script), its room kept, and the runtime drops it for the link's
    placeholder; the page's other widget shows its own picture once the runtime is up."""
    url = server + "/chapters/block/?rmsnorm.offset=7#widget-rmsnorm"
    shown = """() => Object.fromEntries([...document.querySelectorAll('[data-widget]')].map(w =>
        [w.dataset.widget, [...w.querySelectorAll('.tw-snap')].filter(i =>
            i.checkVisibility({visibilityProperty: true})).length]))"""
    tall = """() => [...document.querySelectorAll('[data-widget]')].map(w =>
        w.getBoundingClientRect().height)"""
    for link in (url, url.replace("rmsnorm.offset", "rmsnorm%2Eoffset")):  # the runtime reads both
        with new_page(browser, **DESKTOP) as page:
            page.route("**/runtime-*/main.js", lambda route: route.abort())
            page.goto(link, wait_until="load")
            assert page.evaluate(shown) == {"rmsnorm": 0, "mlp": 0}, link
            assert min(page.evaluate(tall)) > 600, link  # the widgets' room, not an empty strip
    with new_page(browser, **DESKTOP) as page:
        page.route("**/plotly.min.js", lambda route: None)  # never answered: no live figure
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_function("""() => [...document.querySelectorAll('[data-widget]')]
            .every(w => w.widget)""", timeout=20_000)
        assert page.evaluate(shown) == {"rmsnorm": 0, "mlp": 1}
        assert page.locator('[data-widget="rmsnorm"] .tw-placeholder').count() == 1


def test_when_plotly_never_comes_the_picture_stays_and_says_why(browser, server):
    with new_page(browser, **DESKTOP) as page:
        page.route("**/plotly.min.js", lambda route: route.abort())
        page.goto(server + SCALING, wait_until="domcontentloaded")
        page.wait_for_function(f"""() => /did not load/.test(
            document.querySelector('{W} .tw-plot').textContent)""", timeout=20_000)
        got = page.evaluate(SNAPS, W)
        assert got["shown"] == ["tw-snap-light tw-snap-wide"] and got["inPlot"], got


# Of each widget: where its shown picture is, or its drawn figure once there is one, and where
# what follows the widget starts (page coordinates).
PLACES = """() => Object.fromEntries([...document.querySelectorAll('[data-widget]')].map(w => {
    const shown = [...w.querySelectorAll('.tw-snap')].find(i => getComputedStyle(i).display !== 'none');
    const svg = w.querySelector('.tw-plot .main-svg');
    const at = (e) => e ? Math.round(e.getBoundingClientRect().top + scrollY) : null;
    return [w.id, {figure: at(svg || shown), after: at(w.nextElementSibling)}];
}))"""


SAMPLE = ["/chapters/attention-maps/", "/chapters/block/"]


@pytest.mark.parametrize("window", [1280, 390, 1440, 360])
def test_nothing_moves_when_the_widgets_start(browser, server, built_site, window):
    """At the widths the pictures were drawn at (1280, 390) and the others the build measures
    the room at, each picture keeps the room the widget's title, controls and readouts take
    once it starts: the live figure is drawn where its picture was, and the text after the
    widget stays where it was at the first paint. (The build measures every widget alike; two
    pages, seven widgets, keep this to about a minute.)"""
    from widgets.build.snapshots import ROOM_AT, VIEWPORTS

    width = "wide" if window >= 600 else "narrow"
    assert window == VIEWPORTS[width]["width"] or window in ROOM_AT[width]
    pages = _widget_pages(built_site)
    for path in SAMPLE:
        assert path in pages, path
        places = []
        for scripts in (False, True):
            with new_page(browser, viewport={**VIEWPORTS[width], "width": window}) as page:
                if not scripts:  # the page as first painted: the book's runtime not started
                    page.route("**/runtime-*/main.js", lambda route: route.abort())
                page.goto(server + path, wait_until="load")
                page.evaluate("document.fonts.ready")
                if scripts:
                    page.wait_for_function("""() => [...document.querySelectorAll(
                        '[data-widget]')].every(w => w.querySelector('.tw-plot .main-svg')
                        || !w.querySelector('.tw-snapbox, .tw-plot'))""", timeout=30_000)
                places.append(page.evaluate(PLACES))
        first, started = places
        for wid in first:
            if first[wid]["figure"] is None:
                continue  # no picture (a widget with no opening figure)
            assert abs(started[wid]["figure"] - first[wid]["figure"]) <= 2, (path, wid, places)
            assert abs(started[wid]["after"] - first[wid]["after"]) <= 2, (path, wid, places)
