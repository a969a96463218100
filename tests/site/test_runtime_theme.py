"""Figures follow the colour scheme, also on a live switch (issue 8, item 5)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

SCALING = "/chapters/scaling/"
MAPS = "/chapters/attention-maps/"
W = '[data-widget="attention_scaling"]'
A = '[data-widget="attention_map"]'

# What the drawn figure really paints: the SVG background and the colour of the tick labels.
PAINTED = """(sel) => {
  const root = document.querySelector(sel);
  const bg = root.querySelector('.main-svg rect.bg') || root.querySelector('.main-svg');
  const tick = root.querySelector('.xtick text');
  const lum = c => { const m = c.match(/[\\d.]+/g).map(Number); return (m[0] + m[1] + m[2]) / 3; };
  return {paper: getComputedStyle(root.querySelector('.main-svg')).backgroundColor,
          plot: bg.style.fill || bg.getAttribute('fill'),
          tick: lum(tick.style.fill || getComputedStyle(tick).fill),
          page: lum(getComputedStyle(document.body).backgroundColor)};
}"""


def test_plots_follow_a_live_palette_switch(page, server):
    page.goto(server + SCALING)
    page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
    light = page.evaluate(PAINTED, W)
    assert light["tick"] < 100 and light["page"] > 200   # dark text on a light page
    page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
    page.wait_for_function(f"""() => document.querySelector('{W} .tw-plot').layout.font.color
        !== '#1f2328'""")
    dark = page.evaluate(PAINTED, W)
    assert dark["page"] < 60 and dark["tick"] > 180      # light text on the dark page
    # no white panel: paper and plot area are transparent, the page shows through
    layout = page.evaluate(f"document.querySelector('{W} .tw-plot').layout")
    assert layout["paper_bgcolor"] == "rgba(0,0,0,0)" and layout["plot_bgcolor"] == "rgba(0,0,0,0)"
    assert page.evaluate(f"getComputedStyle(document.querySelector('{W} .tw-plot .main-svg')).backgroundColor") \
        in ("rgba(0, 0, 0, 0)", "transparent")


def test_a_dark_page_opens_with_dark_plots_and_a_heatmap_whose_zero_is_the_page(browser, server):
    context = browser.new_context(viewport={"width": 1200, "height": 900}, color_scheme="dark")
    page = context.new_page()
    page.goto(server + MAPS)
    page.wait_for_selector(f"{A} .tw-plot .main-svg", timeout=30_000)
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
    trace = page.evaluate(f"document.querySelector('{A} .tw-plot').data[0]")
    layout = page.evaluate(f"document.querySelector('{A} .tw-plot').layout")
    # The scale lives on the trace or, for figures whose phone patch moves the colour bar, on a
    # layout colour axis: either way weight 0 must be the page itself.
    scale = trace.get("colorscale") or layout[trace["coloraxis"]]["colorscale"]
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    zero, top = scale[0][1], scale[-1][1]
    assert zero == bg or zero.replace(" ", "").endswith(",0)")  # the page's colour, or transparent
    assert trace.get("reversescale") in (False, None)
    assert top != zero and not top.replace(" ", "").endswith(",0)")  # the largest weight is coloured
    assert page.evaluate(f"document.querySelector('{A} .tw-plot').layout.font.color") == "#e6e8ee"
    context.close()


def test_the_loss_curve_follows_the_scheme(page, server):
    page.goto(server + MAPS)
    svg = page.locator("article svg.tw-themed-svg, article img[src$='bookmodel-loss.svg']").first
    svg.wait_for(state="attached", timeout=20_000)
    # the curve sits in a "going further" box: open it, as a reader would
    page.evaluate("document.querySelectorAll('article details').forEach(d => { d.open = true; })")
    page.wait_for_selector("article svg.tw-themed-svg", timeout=10_000)  # inlined by the runtime
    fill = lambda: page.evaluate("getComputedStyle(document.querySelector('article svg.tw-themed-svg text')).fill")
    light = fill()
    page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
    dark = fill()
    assert light != dark
    bg = page.evaluate("getComputedStyle(document.querySelector('article svg.tw-themed-svg rect.tw-bg')).fill")
    assert bg in ("none", "rgba(0, 0, 0, 0)", "transparent")
