"""Page weight, first paint and notebooks (issue 8: items 9 and 10).

First paint is measured with Chromium's own network emulation (CDP) at 1.6 Mbit/s, the link
the issue names, on a fresh browser context (empty cache), against the real gunicorn (which
serves the build's .gz files)."""

from __future__ import annotations

import pytest

from tests.support.browser import next_frames

pytestmark = pytest.mark.browser

SCALING = "/chapters/scaling/"
NOTEBOOK = "/exercises/01-variance/"
W = '[data-widget="attention_scaling"]'
LINK = {"offline": False, "latency": 40, "downloadThroughput": 1_600_000 / 8,
        "uploadThroughput": 1_600_000 / 8}


def throttled_load(browser, url, wait_for=None, link=LINK, **context_args):
    """Load `url` in a fresh context with the browser's cache off, over `link` (CDP network
    emulation; None: the loopback as it is); (context, page, first contentful paint ms, ms at
    which `wait_for` appeared, URLs requested)."""
    context = browser.new_context(**({"viewport": {"width": 1200, "height": 900}} | context_args))
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    if link:
        cdp.send("Network.emulateNetworkConditions", link)
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(url, wait_until="commit")
    page.wait_for_function("performance.getEntriesByName('first-contentful-paint').length > 0",
                           timeout=30_000)
    figure_ms = None
    if wait_for:
        page.wait_for_selector(wait_for, timeout=60_000)
        figure_ms = page.evaluate("performance.now()")
    fcp = page.evaluate("performance.getEntriesByName('first-contentful-paint')[0].startTime")
    return context, page, fcp, figure_ms, requested


# When the build's picture of a widget's opening figure (widgets/build/snapshots.py) was first
# painted on screen, ms from navigation: its Element Timing entry (`elementtiming="tw-snap"`),
# which only an observer reads back; null if none is painted within 20 s (a picture off screen
# is fetched but not painted).
PICTURE_PAINTED = """() => new Promise(done => {
  setTimeout(() => done(null), 20000);
  new PerformanceObserver((list, obs) => {
    const seen = list.getEntries().filter(e => e.identifier === 'tw-snap');
    if (seen.length) { obs.disconnect(); done(Math.min(...seen.map(e => e.renderTime || e.loadTime))); }
  }).observe({type: 'element', buffered: true}); })"""


def test_a_chapter_paints_its_text_fast_on_a_slow_link_and_then_its_figure(browser, server):
    context, page, fcp, figure_ms, requested = throttled_load(
        browser, server + SCALING, wait_for=f"{W} .tw-plot .main-svg")
    text_visible = page.evaluate("!!document.querySelector('article h1')")
    print(f"\nscaling chapter at 1.6 Mbit/s: first contentful paint {fcp:.0f} ms, "
          f"baked figure drawn at {figure_ms:.0f} ms")
    context.close()
    assert text_visible and fcp < 1500
    assert any(u.endswith("plotly.min.js") for u in requested)


def test_pages_without_a_figure_never_load_plotly(browser, server):
    context, page, fcp, _, requested = throttled_load(browser, server + "/")
    # no request for half a second after the load: whatever the page fetches, it has asked for
    page.wait_for_load_state("networkidle", timeout=60_000)
    print(f"\nhome page at 1.6 Mbit/s: first contentful paint {fcp:.0f} ms")
    context.close()
    # the library itself (assets/vendor/plotly.min.js, ~1 MB); the runtime's small module that
    # would load it (assets/book/runtime/plotly.js) is preloaded on every page
    assert not any("/vendor/plotly" in u for u in requested), requested
    assert fcp < 1500


def test_plotly_is_not_render_blocking(page, server):
    page.goto(server + SCALING)
    head_scripts = page.evaluate("""[...document.head.querySelectorAll('script[src]')]
        .filter(s => !s.async && !s.defer && s.type !== 'module').map(s => s.src)""")
    assert not any("plotly" in s for s in head_scripts), head_scripts


def test_notebook_figures_wait_for_plotly_on_load_and_after_instant_navigation(page, server):
    page.goto(server + NOTEBOOK)
    page.wait_for_selector(".jupyter-wrapper .js-plotly-plot .main-svg", timeout=30_000)
    assert page.console_errors == []  # no "Plotly is not defined" from the inline scripts
    page.goto(server + "/")
    page.evaluate("() => { window.__opened = 'once'; }")
    page.click("article a[href*='01-variance']")
    page.wait_for_selector(".jupyter-wrapper .js-plotly-plot .main-svg", timeout=30_000)
    # the click was instant navigation (the same window), not a full load
    assert page.evaluate("() => window.__opened") == "once"
    assert page.console_errors == []


def test_each_notebook_page_links_its_ipynb_at_the_top(page, server):
    page.goto(server + NOTEBOOK)
    link = page.locator("article a[download][href$='.ipynb']").first
    assert link.is_visible()
    box = link.bounding_box()
    assert box and box["y"] < 400  # at the top, above the first cell
    url = page.evaluate("document.querySelector('article a[download]').href")
    response = page.request.get(url)
    assert response.status == 200, url
    assert response.json()["cells"]  # the notebook itself


def test_notebooks_fit_a_phone_without_layout_shift(phone, server):
    page = phone
    page.add_init_script("""window.__cls = 0; new PerformanceObserver(l => { for (const e of
        l.getEntries()) if (!e.hadRecentInput) window.__cls += e.value; })
        .observe({type: 'layout-shift', buffered: true});""")
    page.goto(server + NOTEBOOK)
    page.wait_for_selector(".jupyter-wrapper .js-plotly-plot .main-svg", timeout=30_000)
    # every figure drawn and the fonts in; then no request for half a second, so nothing late
    # (a script, an image) is still on its way to shift the page
    page.wait_for_function("""() => document.fonts.status === 'loaded' && [...document
        .querySelectorAll('.jupyter-wrapper .js-plotly-plot')].every(d => d.querySelector('.main-svg'))""")
    page.wait_for_load_state("networkidle", timeout=30_000)
    next_frames(page)
    plot_w = page.evaluate("""Math.min(...[...document.querySelectorAll('.jupyter-wrapper .js-plotly-plot')]
        .map(d => d._fullLayout._size.w))""")
    pre = page.evaluate("""(() => { const p = document.querySelector('.jupyter-wrapper .jp-OutputArea-output pre');
        const s = getComputedStyle(p); return [s.whiteSpace, s.overflowX]; })()""")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    cls = page.evaluate("window.__cls")
    print(f"\nnotebook on a 390 px phone: narrowest plot area {plot_w:.0f} px, CLS {cls:.3f}")
    assert plot_w >= 0.6 * 390  # was about 60 px: the plot area now takes most of the screen
    assert pre == ["pre", "auto"]
    assert overflow <= 0
    assert cls < 0.1
