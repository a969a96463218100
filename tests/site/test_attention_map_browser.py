"""The attention-maps chapter in Chromium: real weights drawn, then recomputed live."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/attention-maps/"
WIDGETS = '[data-widget="attention_map"]'


def plot_layout(page, i):
    return page.evaluate(f"document.querySelectorAll('{WIDGETS}')[{i}].querySelector('.tw-plot').layout")


def test_book_and_minilm_maps_draw_and_recompute(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{WIDGETS} .tw-plot .main-svg", timeout=20_000)
    widgets = page.locator(WIDGETS)
    assert widgets.count() == 2
    book, minilm = plot_layout(page, 0), plot_layout(page, 1)
    assert book["xaxis"]["ticktext"][0] == "&lt;|endoftext|&gt;" and "it" in book["xaxis"]["ticktext"]
    assert minilm["xaxis"]["ticktext"][0] == "[CLS]"
    assert "causal" in book["title"]["text"] and "bidirectional" in minilm["title"]["text"]

    first = widgets.nth(0)
    first.locator('input[name="average"]').uncheck()
    page.wait_for_function(f"document.querySelector('{WIDGETS}').dataset.source === 'live'",
                           timeout=20_000)
    page.wait_for_function(f"""() => document.querySelector('{WIDGETS} .tw-plot').layout
        .title.text.endsWith('layer 0, head 0')""", timeout=20_000)
    assert first.locator('.tw-value[data-name="look_from_token"] dd').inner_text() == "it"
    assert first.locator('.tw-value[data-name="top_summary"] dd').inner_text().strip()
    assert page.console_errors == []


GEOMETRY = """() => {
  const plot = document.querySelector('[data-widget="attention_map"] .tw-plot');
  const rect = (n) => n.getBoundingClientRect();
  const overlaps = (sel) => {
    const boxes = [...plot.querySelectorAll(sel)].map(rect).filter(b => b.width > 0);
    let n = 0;
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) n++;
    }
    return {count: boxes.length, overlaps: n};
  };
  const p = rect(plot), t = rect(plot.querySelector('.gtitle'));
  const hits = (title, sel) => [...plot.querySelectorAll(sel)].map(rect).filter(b =>
    b.left < title.right - 1 && title.left < b.right - 1 && b.top < title.bottom - 1 && title.top < b.bottom - 1).length;
  const xt = rect(plot.querySelector('.g-xtitle')), yt = rect(plot.querySelector('.g-ytitle'));
  return {plot: {left: p.left, right: p.right, top: p.top, width: p.width},
          title: {left: t.left, right: t.right, top: t.top},
          xtick: overlaps('g.xtick text'), ytick: overlaps('g.ytick text'),
          axisTitleHits: hits(xt, 'g.xtick text') + hits(yt, 'g.ytick text')};
}"""

LONG = ("The animal didn't cross the busy street because it was far too tired after walking "
        "all day through the hot and dusty city streets of the old town")


def _assert_readable(page):
    g = page.evaluate(GEOMETRY)
    assert g["plot"]["width"] >= 300, g  # was 144 px on a phone
    assert g["plot"]["left"] - 1 <= g["title"]["left"] and g["title"]["right"] <= g["plot"]["right"] + 1, g
    assert g["title"]["top"] >= g["plot"]["top"] - 1, g  # the title is not cut off
    for axis in ("xtick", "ytick"):
        assert g[axis]["count"] >= 3 and g[axis]["overlaps"] == 0, (axis, g)
    assert g["axisTitleHits"] == 0, g  # the axis titles clear the tick labels


def test_maps_are_readable_on_a_phone_and_at_the_token_limit(phone, server):
    page = phone
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{WIDGETS} .tw-plot .main-svg", timeout=20_000)
    _assert_readable(page)

    # A sentence near the limit, drawn into the same plot the way the runtime draws on a phone.
    page.evaluate("""async (text) => {
        const r = await fetch('/api/widgets/attention_map', {method: 'POST',
            headers: {'Content-Type': 'application/json'}, body: JSON.stringify({text})});
        const out = await r.json();
        const merge = (b, p) => { const o = Object.assign({}, b); for (const k of Object.keys(p)) {
            o[k] = (b[k] && typeof b[k] === 'object' && typeof p[k] === 'object' && !Array.isArray(p[k]))
                ? merge(b[k], p[k]) : p[k]; } return o; };
        const div = document.querySelector('[data-widget="attention_map"] .tw-plot');
        await Plotly.react(div, out.figure.data, merge(out.figure.layout, out.figure.narrow));
        window.__n = out.values.n_tokens;
    }""", LONG)
    assert page.evaluate("window.__n") >= 40
    _assert_readable(page)


ROLES = '[data-widget="head_roles"]'


def test_a_click_on_a_head_score_opens_that_head(page, server):
    """A real mouse click on the cell (layer 11, head 1) of the score map sets the layer and head
    controls, the page URL, and draws that head's map live."""
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{ROLES} .tw-plot .main-svg", timeout=20_000)
    page.locator(ROLES).scroll_into_view_if_needed()
    x, y = page.evaluate(f"""() => {{
        const gd = document.querySelector('{ROLES} .tw-plot'), L = gd._fullLayout;
        const box = gd.getBoundingClientRect();
        return [box.left + L.xaxis._offset + L.xaxis.d2p(1),
                box.top + L.yaxis._offset + L.yaxis.d2p(11)];
    }}""")
    page.mouse.click(x, y)
    page.wait_for_function(f"""() => document.querySelector('{ROLES} .tw-plot').layout
        .title.text.endsWith('layer 11') &&
        document.querySelector('{ROLES}').dataset.source === 'live'""", timeout=30_000)
    w = page.locator(ROLES)
    assert w.locator('input[name="layer-value"]').input_value() == "11"
    assert w.locator('input[name="head-value"]').input_value() == "1"
    assert "head_roles.layer=11" in page.evaluate("location.search")
    assert page.console_errors == []
