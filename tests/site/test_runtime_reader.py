"""What a reader touches most, in Chromium (issue 17: items 1, 2, 3, 5, 7 and 10): same-page
links, touch screens, room for every slider, the toolbar and the book's own buttons, dark-mode
cell labels, a hidden table, a slow answer and the sticky header. Each test failed on the
runtime of a9a2140."""

from __future__ import annotations

import re

import pytest

from tests.support.browser import computes, holds, idle, next_frames, scroll_settled, styles_settled

pytestmark = pytest.mark.browser

SCALING = "/chapters/scaling/"
MAPS = "/chapters/attention-maps/"
W = '[data-widget="attention_scaling"]'
A = '[data-widget="attention_map"]'
SINK = '[data-widget="attention_sink"]'

COUNT = """() => [document.querySelectorAll('[data-widget] input, [data-widget] select').length,
                  document.querySelectorAll('[data-widget] .tw-plot .main-svg').length]"""


def open_page(page, server, path, widget, query=""):
    page.goto(server + path + query)
    page.wait_for_selector(f"{widget} .tw-plot .main-svg", timeout=30_000)


def move_live(page, widget, name, value):
    """Type `value` into a slider's number box and wait for the live answer for it."""
    box = page.locator(f'{widget} input[name="{name}-value"]')
    box.fill(str(value))
    box.dispatch_event("change")
    page.wait_for_function(f"""() => document.querySelector('{widget}').dataset.source === 'live'
        && document.querySelector('{widget}').widget.shown.params['{name}'] === {value}""")


# ------------------------------------------------------------------ 1. same-page links

def test_same_page_links_leave_every_widget_mounted(page, server):
    """The table of contents, a heading's permalink, the jump link and the back button: no
    refetch of the page, every control and figure still there, the reader's setting kept."""
    open_page(page, server, MAPS, A)
    before = page.evaluate(COUNT)
    assert before[0] > 5 and before[1] >= 2
    fetched = []
    page.on("request", lambda r: r.resource_type == "document" or (
        r.method == "GET" and r.url.rstrip("/").endswith(MAPS.rstrip("/"))) and fetched.append(r.url))
    page.evaluate("window.__same_document = 1")  # gone if the page were loaded anew
    # a table-of-contents entry
    page.evaluate("document.querySelector('.md-nav--secondary a.md-nav__link').click()")
    assert holds(page, "() => location.hash !== ''")
    scroll_settled(page)
    assert page.evaluate(COUNT) == before
    first_hash = page.evaluate("location.hash")
    # a heading's permalink, further down
    page.evaluate("[...document.querySelectorAll('article h2 a.headerlink')].at(-1).click()")
    assert holds(page, "h => location.hash !== h", first_hash)
    scroll_settled(page)
    assert page.evaluate(COUNT) == before
    # back to the first anchor: still the same page, still mounted
    page.go_back()
    assert holds(page, "h => location.hash === h", first_hash)
    scroll_settled(page)
    assert page.evaluate(COUNT) == before
    # A refetch of the page would start after the navigation that caused it, and nothing
    # announces that none is coming: the page gets a bounded while to show one.
    page.wait_for_timeout(600)
    assert page.evaluate(COUNT) == before
    assert page.evaluate("window.__same_document") == 1
    assert fetched == []
    assert page.console_errors == []


def test_a_reader_setting_survives_a_table_of_contents_click(page, server):
    open_page(page, server, SCALING, W)
    move_live(page, W, "d_k", 256)
    page.evaluate("document.querySelector('.md-nav--secondary a.md-nav__link').click()")
    assert holds(page, "() => location.hash !== ''")
    scroll_settled(page)
    idle(page, W)  # a setting the navigation had sent for would be answered and shown by now
    assert page.locator(f'{W} input[name="d_k-value"]').input_value() == "256"
    assert page.evaluate(f"document.querySelector('{W}').widget.shown.params.d_k") == 256
    assert "attention_scaling.d_k=256" in page.evaluate("location.search")  # the query stays
    assert page.evaluate("location.hash")


def test_jump_link_lands_on_the_figure(page, server):
    """A chapter whose widget sits far down links to it under the title; following the link
    keeps the widget and puts it at the top of the screen, clear of the sticky header."""
    open_page(page, server, SCALING, W)
    link = page.locator("article .tw-jump a")
    assert link.count() == 1
    assert link.get_attribute("href").endswith(SCALING + "#widget-attention_scaling")
    link.click()
    assert holds(page, "() => location.hash === '#widget-attention_scaling'")
    scroll_settled(page)
    top = page.evaluate(f"document.querySelector('{W}').getBoundingClientRect().top")
    header = page.evaluate("document.querySelector('.md-header').getBoundingClientRect().bottom")
    assert header <= top < header + 80
    assert page.evaluate(COUNT)[0] >= 2


# ------------------------------------------------------------------ 2. touch screens

# `phone` (tests/site/conftest.py): 390 px, touch, mobile, a 2x screen

def swipe(page, x, y, dy, dx=0, steps=8):
    """A finger on (x, y) moving by (dx, dy), through CDP's touch events (as a phone sends)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for i in range(1, steps + 1):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [
            {"x": x + dx * i / steps, "y": y + dy * i / steps}]})
        next_frames(page, 1)  # one move a frame, as a real finger's arrive
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    scroll_settled(page)


def test_a_swipe_over_a_figure_scrolls_the_page_and_never_zooms(phone, server):
    open_page(phone, server, SCALING, W)
    plot = phone.locator(f"{W} .tw-plot")
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    ranges = phone.evaluate(f"document.querySelector('{W} .tw-plot')._fullLayout.xaxis.range.slice()")
    y0 = phone.evaluate("scrollY")
    swipe(phone, box["x"] + box["width"] / 2, box["y"] + min(box["height"] - 20, 400), dy=-250)
    assert phone.evaluate("scrollY") > y0 + 100                      # the page scrolled
    layout = phone.evaluate(f"""(() => {{ const l = document.querySelector('{W} .tw-plot')._fullLayout;
        return [l.dragmode, l.xaxis.fixedrange, l.yaxis.fixedrange, l.xaxis.range]; }})()""")
    assert layout[0] is False and layout[1] and layout[2]
    assert layout[3] == ranges                                       # no zoom box was drawn
    config = phone.evaluate(f"document.querySelector('{W} .tw-plot')._context")
    assert config["doubleClick"] is False and config["scrollZoom"] is False


def test_a_swipe_that_starts_on_a_slider_scrolls_and_leaves_it_alone(phone, server):
    open_page(phone, server, SCALING, W)
    slider = phone.locator(f"{W} input[type=range][name=d_k]")
    slider.scroll_into_view_if_needed()
    phone.evaluate("window.scrollBy(0, -200)")
    before = slider.input_value()
    posts = []
    phone.on("request", lambda r: computes(r) and posts.append(r.url))
    box = slider.bounding_box()
    y0 = phone.evaluate("scrollY")
    # start near the slider's right end (far from the thumb), then move up the screen
    swipe(phone, box["x"] + box["width"] * 0.9, box["y"] + box["height"] / 2, dy=-200)
    assert phone.evaluate("scrollY") > y0 + 50
    assert slider.input_value() == before
    assert posts == []
    assert phone.evaluate("location.search") == ""
    # a sideways drag on the same slider still moves it, and the figure follows
    box = slider.bounding_box()
    swipe(phone, box["x"] + box["width"] * 0.45, box["y"] + box["height"] / 2, dy=0,
          dx=box["width"] * 0.4)
    assert slider.input_value() != before
    phone.wait_for_function(f"document.querySelector('{W}').dataset.source === 'live'")


# ------------------------------------------------------------------ 3. room for every slider

WIDTHS = (320, 390, 560, 700, 1024, 1150, 1180, 1200, 1220, 1280, 1440, 1920)
SLIDERS = """() => [...document.querySelectorAll('[data-widget] input[type=range]')].map(s =>
  [s.closest('[data-widget]').dataset.widget + '.' + s.name, s.getBoundingClientRect().width])"""
BOXES = """() => [...document.querySelectorAll('[data-widget] input[type=number]')].map(b => {
  const old = b.value; b.value = b.max; const fits = b.scrollWidth <= b.clientWidth + 1;
  b.value = old; return [b.name, b.max, fits]; })"""


def widget_pages(site):
    pages = []
    for index in sorted(site.rglob("index.html")):
        if 'data-widget="' in index.read_text(encoding="utf-8"):
            rel = index.parent.relative_to(site).as_posix()
            pages.append("/" + (rel + "/" if rel != "." else ""))
    return pages


def test_every_slider_keeps_a_usable_width_at_every_width(browser, server, built_site):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    narrow, overflowing = [], []
    pages = widget_pages(built_site)
    assert len(pages) >= 15
    for path in pages:
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(server + path)
        page.wait_for_selector("[data-widget] .tw-controls")
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            assert holds(page, "w => innerWidth === w", width)
            next_frames(page)  # the widgets' ResizeObservers have laid them out again
            narrow += [(path, width, name, round(w)) for name, w in page.evaluate(SLIDERS)
                       if w < 80]
        overflowing += [(path, name, top) for name, top, fits in page.evaluate(BOXES) if not fits]
    context.close()
    assert narrow == []
    assert overflowing == []


# ------------------------------------------------------------------ 5. toolbar, link, reset

def test_toolbar_offers_download_and_reset_axes_only(page, server):
    open_page(page, server, SCALING, W)
    titles = page.evaluate(f"""[...document.querySelectorAll('{W} .modebar-btn')]
        .map(b => b.getAttribute('data-title'))""")
    assert titles and all(re.match(r"Download plot|Reset axes", t) for t in titles), titles
    assert not any("Share" in t or "Cloud" in t for t in titles)


def test_copy_link_lands_on_the_widget_with_its_setting(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    open_page(page, server, SCALING, W)
    move_live(page, W, "d_k", 256)
    page.locator(f"{W} button.tw-copy").click()
    page.wait_for_function(f"document.querySelector('{W} button.tw-copy').textContent === 'Link copied'")
    link = page.evaluate("navigator.clipboard.readText()")
    assert link == server + SCALING + "?attention_scaling.d_k=256#widget-attention_scaling"
    fresh = context.new_page()
    fresh.goto(link)
    fresh.wait_for_function(f"""() => document.querySelector('{W}').dataset.source === 'live'
        && document.querySelector('{W}').widget.shown.params.d_k === 256""", timeout=30_000)
    # it lands on the widget, and again once the figures above it are drawn (page.js landOnWidget)
    holds(fresh, f"() => scrollY > 2000 && document.querySelector('{W}').getBoundingClientRect().top >= 0")
    scroll_settled(fresh)
    top = fresh.evaluate(f"document.querySelector('{W}').getBoundingClientRect().top")
    assert 0 <= top < 200                          # the widget, not the top of the chapter
    assert fresh.evaluate("scrollY") > 2000
    context.close()


def test_copy_link_after_back_copies_the_setting_on_screen(browser, server):
    """Part I review W1: set the river-bank widget's neighbour to savings after a jump to a
    section, press Back (the address loses the query; the widget still shows savings): the
    link copied was the default's. It is built from the widget's own setting now."""
    rb = '[data-widget="river_bank"]'
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    page.goto(server + "/chapters/self-attention/")
    page.wait_for_function(f"document.querySelector('{rb}') && document.querySelector('{rb}').widget")
    page.evaluate("location.hash = 'push-on-it'")
    page.wait_for_function("location.hash === '#push-on-it'")
    page.select_option(f'{rb} select[name="neighbour"]', "savings")
    page.wait_for_function(f"""() => document.querySelector('{rb}').widget.shown
        && document.querySelector('{rb}').widget.shown.params.neighbour === 'savings'""", timeout=30_000)
    page.wait_for_function("location.search.includes('river_bank.neighbour=savings')")
    page.go_back()
    page.wait_for_function("location.search === ''")
    assert page.evaluate(f"document.querySelector('{rb}').widget.params.neighbour") == "savings"
    page.locator(f"{rb} button.tw-copy").click()
    page.wait_for_function(f"document.querySelector('{rb} button.tw-copy').textContent === 'Link copied'")
    link = page.evaluate("navigator.clipboard.readText()")
    assert link == server + "/chapters/self-attention/?river_bank.neighbour=savings#widget-river_bank"
    context.close()


def test_reset_goes_back_to_the_books_setting(page, server):
    open_page(page, server, SCALING, W)
    start = page.locator(f'{W} input[name="d_k-value"]').input_value()
    move_live(page, W, "d_k", 256)
    page.locator(f"{W} button.tw-reset").click()
    assert page.locator(f'{W} input[name="d_k-value"]').input_value() == start
    assert page.evaluate(f"document.querySelector('{W}').widget.shown.params.d_k") == int(start)
    assert "attention_scaling" not in page.evaluate("location.search")
    assert "when the book was built" in page.locator(f"{W} .tw-status").inner_text()


# ------------------------------------------------------------------ 7. dark cells, hidden table

CELL_LABELS = """(sel) => {
  // Each cell label's colour against its own cell's colour, as plotly paints them.
  const plot = document.querySelector(sel + ' .tw-plot'), L = plot._fullLayout;
  const parse = c => c.startsWith('#') ? [1, 3, 5].map(i => parseInt(c.substr(i, 2), 16))
                                       : c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = c => parse(c).map(v => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const colour = (scale, f) => { let k = 0;
    while (k < scale.length - 2 && scale[k + 1][0] < f) k++;
    const [f0, c0] = scale[k], [f1, c1] = scale[k + 1];
    const t = Math.min(1, Math.max(0, (f - f0) / ((f1 - f0) || 1)));
    const a = parse(c0), b = parse(c1);
    return 'rgb(' + a.map((v, j) => v + (b[j] - v) * t).join(',') + ')'; };
  const out = [];
  plot._fullData.filter(t => t.type === 'heatmap').forEach((tr, i) => {
    const ax = L[tr.coloraxis], xa = L[tr.xaxis.replace('x', 'xaxis')], ya = L[tr.yaxis.replace('y', 'yaxis')];
    const labels = [...plot.querySelectorAll('.subplot.' + tr.xaxis + tr.yaxis + ' .heatmap-label text')];
    labels.forEach(t => {
      const col = Math.round(xa.p2c(+t.getAttribute('x'))), row = Math.round(ya.p2c(+t.getAttribute('y')));
      const z = tr.z[row][col], f = (z - ax.cmin) / (ax.cmax - ax.cmin);
      const fg = lum(getComputedStyle(t).fill), bg = lum(colour(ax.colorscale, f));
      const [p, q] = [fg, bg].sort((x, y) => y - x);
      out.push([t.textContent, Math.round((p + 0.05) / (q + 0.05) * 100) / 100]);
    });
  });
  return out;
}"""


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_heatmap_cell_labels_are_readable_in_both_schemes(browser, server, scheme):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    open_page(page, server, MAPS, SINK)
    page.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
    styles_settled(page)  # the switch redraws the figures (page.js watchScheme)
    ratios = page.evaluate(CELL_LABELS, SINK)
    context.close()
    assert len(ratios) >= 16
    assert [r for r in ratios if r[1] < 3] == []


def test_a_hidden_data_table_is_not_shown(page, server):
    """Offline with a sentence no baked result has: figure, values and table all go."""
    page.route("**/api/**", lambda route: route.abort())
    open_page(page, server, MAPS, A)
    box = page.locator(f"{A} textarea").first
    box.fill("An entirely new sentence that no page has baked.")
    box.dispatch_event("input")
    page.wait_for_function(f"document.querySelector('{A}').classList.contains('tw-nobaked')",
                           timeout=10_000)
    assert page.evaluate(f"getComputedStyle(document.querySelector('{A} .tw-table')).display") == "none"


# ------------------------------------------------------------------ 10. slow answers, focus

def test_a_slow_answer_says_computing_and_marks_the_figure_busy(page, server):
    open_page(page, server, SCALING, W)
    held = []
    page.route("**/api/widgets/attention_scaling/result*", lambda route: held.append(route))
    box = page.locator(f'{W} input[name="d_k-value"]')
    box.fill("256")
    box.dispatch_event("change")
    page.wait_for_function(f"""() => document.querySelector('{W} .tw-status').textContent
        .startsWith('Computing')""", timeout=5_000)
    assert "d_k = 256" in page.locator(f"{W} .tw-status").inner_text()
    assert page.get_attribute(f"{W} .tw-plot", "aria-busy") == "true"
    # timings are not read aloud; the result's summary is
    assert page.get_attribute(f"{W} .tw-status", "aria-live") is None
    held[0].continue_()
    page.unroute("**/api/widgets/attention_scaling/result*")
    page.wait_for_function(f"document.querySelector('{W}').dataset.source === 'live'")
    assert page.get_attribute(f"{W} .tw-plot", "aria-busy") is None
    page.wait_for_function(f"""() => document.querySelector('{W} [aria-live=polite]')
        .textContent.includes('256')""", timeout=5_000)


def test_a_focused_control_is_never_under_the_sticky_header(page, server):
    """Shift+Tab back into a row that sits just above the screen: it scrolls into view below
    the header, not under it (WCAG 2.4.11)."""
    open_page(page, server, SCALING, W)
    page.evaluate(f"""(() => {{ const s = document.querySelector('{W} input[type=range][name=d_k]');
        window.scrollTo(0, s.getBoundingClientRect().top + window.scrollY + 4);
        document.querySelector('{W} input[name="d_k-value"]').focus({{preventScroll: true}}); }})()""")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.name") == "d_k"
    scroll_settled(page)
    top = page.evaluate("document.activeElement.getBoundingClientRect().top")
    header = page.evaluate("document.querySelector('.md-header').getBoundingClientRect().bottom")
    assert top >= header
