"""Wide figures on large screens (issue 33, item 6; the UX review's P13, Distill's `l-page`):
at 1920 x 1080 a widget whose figure is a heatmap or panels side by side is wider than the text
column, which keeps its reading width, and covers neither the navigation nor the table of
contents; its figure is drawn again when the window grows or shrinks. On a phone and on a
1280 px desktop nothing changed: every widget is as wide as the text, and nothing scrolls
sideways. Which widgets are wide is the build's one rule (widget_blocks.py wide_figure), read
from each widget's own opening figure.

On the book as built before (`main` at 58c9952) every figure stayed in the text column at
1920 px: attention_map's plot was 719 px wide beside a 756 px paragraph."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.browser import PHONE, holds, new_page, next_frames
from widgets.build.widget_blocks import wide_figure

pytestmark = pytest.mark.browser

LARGE = {"viewport": {"width": 1920, "height": 1080}}
LAPTOP = {"viewport": {"width": 1280, "height": 900}}
# A wide widget of each kind: a heatmap, a heatmap beside its key, two charts side by side;
# and one that is neither (a single chart), which keeps the text's width everywhere.
WIDE = {"/chapters/attention-maps/": "attention_map", "/chapters/positions/": "positions_sinusoids",
        "/chapters/scaling/": "attention_scaling"}
NARROW = ("/chapters/positions/", "positions_rope")

# Rectangles of the page, in CSS px: the text column (the article's first paragraph), the two
# sidebars where they are shown, each widget and its drawn figure, and the page's own width.
MEASURE = """() => {
  const rect = (e) => { if (!e) return null; const r = e.getBoundingClientRect();
    return {left: r.left, right: r.right, width: r.width}; };
  const shown = (s) => { const e = document.querySelector(s);
    return e && getComputedStyle(e).display !== 'none' && e.getBoundingClientRect().width > 0
      && e.getBoundingClientRect().right > 0 ? rect(e) : null; };
  const widgets = {};
  for (const w of document.querySelectorAll('.md-content__inner > .tw-widget[data-widget]')) {
    widgets[w.dataset.widget] = {box: rect(w), svg: rect(w.querySelector('.tw-plot .main-svg')),
                                 wide: w.classList.contains('tw-wide')};
  }
  return {text: rect(document.querySelector('.md-content__inner > p:not([class])')),
          nav: shown('.md-sidebar--primary'), toc: shown('.md-sidebar--secondary'), widgets,
          scroll: document.documentElement.scrollWidth, inner: innerWidth};
}"""
DRAWN = """() => [...document.querySelectorAll('.tw-widget[data-widget]')].every(w =>
    w.querySelector('.tw-plot .main-svg') || w.classList.contains('tw-nobaked'))"""
# The figure of `name` drawn at its plot's width (after a resize: drawn again).
FITS = """(name) => { const w = document.querySelector(`.tw-widget[data-widget="${name}"]`);
  const svg = w.querySelector('.tw-plot .main-svg'), plot = w.querySelector('.tw-plot');
  return svg && Math.abs(svg.getBoundingClientRect().width - plot.clientWidth) < 2; }"""


def measure(page, server, path):
    page.goto(server + path)
    page.wait_for_function(DRAWN, timeout=30_000)
    next_frames(page)
    return page.evaluate(MEASURE)


def test_wide_figures_use_the_free_width_of_a_large_screen(browser, server):
    with new_page(browser, **LARGE) as page:
        for path, name in WIDE.items():
            m = measure(page, server, path)
            assert page.evaluate(FITS, name), (path, name)
            w, text = m["widgets"][name], m["text"]
            # the text keeps its reading width (34.4rem: 756 px at Material's 22 px root) ...
            assert 700 <= text["width"] <= 800, (path, text)
            # ... and the figure takes the room beside it: half as wide again, or more
            assert w["wide"] and w["svg"]["width"] >= 1.4 * text["width"], (path, name, w, text)
            # centred on the text, between the sidebars, never over them
            assert m["nav"] and m["toc"], m
            assert w["box"]["left"] >= m["nav"]["right"] - 0.5, (path, name, w, m["nav"])
            assert w["box"]["right"] <= m["toc"]["left"] + 0.5, (path, name, w, m["toc"])
            assert w["svg"]["right"] <= w["box"]["right"] + 0.5
            middle = lambda r: (r["left"] + r["right"]) / 2  # noqa: E731
            assert abs(middle(w["box"]) - middle(text)) < 2, (path, name, w, text)
            assert m["scroll"] <= m["inner"], (path, m["scroll"])
        m = measure(page, server, NARROW[0])
        narrow = m["widgets"][NARROW[1]]
        assert not narrow["wide"] and abs(narrow["box"]["width"] - m["text"]["width"]) < 1, m


def test_a_wide_figure_is_drawn_again_when_the_window_grows_and_shrinks(browser, server):
    path, name = "/chapters/attention-maps/", "attention_map"
    with new_page(browser, **LAPTOP) as page:
        small = measure(page, server, path)
        page.set_viewport_size(LARGE["viewport"])
        assert holds(page, """([name, was]) => { const svg = document.querySelector(
            `.tw-widget[data-widget="${name}"] .tw-plot .main-svg`);
            return svg && svg.getBoundingClientRect().width > 1.4 * was; }""",
                     [name, small["widgets"][name]["svg"]["width"]])
        assert page.evaluate(FITS, name)
        page.set_viewport_size(LAPTOP["viewport"])
        assert holds(page, f"() => ({FITS})({json.dumps(name)})")
        back = page.evaluate(MEASURE)["widgets"][name]["svg"]["width"]
        assert abs(back - small["widgets"][name]["svg"]["width"]) < 2


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone-390", "desktop-1280"])
def test_smaller_screens_keep_one_column(browser, server, viewport):
    with new_page(browser, **viewport) as page:
        for path in sorted(set(WIDE) | {NARROW[0]}):
            m = measure(page, server, path)
            assert m["scroll"] <= m["inner"], (path, m["scroll"], m["inner"])
            for name, w in m["widgets"].items():
                # every widget, wide or not, is exactly as wide as the text
                assert abs(w["box"]["width"] - m["text"]["width"]) < 1, (path, name, w, m["text"])
                assert w["svg"] is None or w["svg"]["right"] <= w["box"]["right"] + 0.5


# ------------------------------------------------------------------ the build's one rule

def test_the_rule_reads_the_figure():
    heatmap = {"data": [{"type": "heatmap", "z": [[1]]}], "layout": {}}
    beside = {"data": [{}, {}], "layout": {"xaxis": {"domain": [0, 0.45]},
                                           "xaxis2": {"domain": [0.55, 1]}}}
    stacked = {"data": [{}, {}], "layout": {"xaxis": {"domain": [0, 1]},
                                            "xaxis2": {"domain": [0, 1]},
                                            "yaxis": {"domain": [0.55, 1]},
                                            "yaxis2": {"domain": [0, 0.45]}}}
    single = {"data": [{"type": "bar"}], "layout": {"xaxis": {"title": "x"}}}
    assert wide_figure(heatmap) and wide_figure(beside)
    assert not wide_figure(stacked) and not wide_figure(single)


BLOCK = re.compile(r'<div class="tw-widget( tw-wide)?" data-widget="(\w+)"[^>]*>'
                   r'(?:<template class="tw-data">)?<script type="application/json" '
                   r'class="tw-config">(.*?)</script>', re.S)


def test_every_built_widget_is_laid_out_by_its_figure(built_site):
    """Every widget of the book carries `tw-wide` exactly when its opening figure (baked into
    the page) is a heatmap or has panels side by side: nothing is marked by hand."""
    seen = {}
    for page in sorted(built_site.glob("chapters/*/index.html")):
        for wide, name, config in BLOCK.findall(page.read_text(encoding="utf-8")):
            figure = json.loads(config)["baked"][0]["figure"]
            assert bool(wide) == wide_figure(figure), (page, name)
            seen[name] = bool(wide)
    assert len(seen) >= 25
    assert seen["attention_map"] and seen["attention_scaling"] and seen["multi_head"]
    assert not seen["kv_cache"] and not seen["positions_rope"]
