"""The reader's page, polish (issue 33's P1, P2, P9, P11, P12, P14 from the UX review), in
Chromium against a built book: what is only seen in a browser.

Each test failed on the book as built before its fix (the runtime and figures of then)."""

from __future__ import annotations

import pytest

from tests.support.browser import PHONE, new_page

pytestmark = pytest.mark.browser

# Every widget on the page drawn (or showing that it has nothing to draw) and none waiting.
SETTLED = """() => [...document.querySelectorAll('.tw-widget[data-widget]')].every(w =>
    (w.querySelector('.tw-plot .main-svg') || w.classList.contains('tw-nobaked'))
    && !w.classList.contains('tw-busy'))"""

# The pages of the widgets the review names, where a value wrapped or was written raw.
VALUE_PAGES = ["/chapters/positions/", "/chapters/llama/", "/chapters/scaling/",
               "/chapters/serving/", "/chapters/model/"]

# Each value row whose number (a value with no letters but its unit's) is laid out on more
# than one line: the text's boxes at more than one height.
BROKEN_NUMBERS = """() => [...document.querySelectorAll('.tw-value dd')].filter(dd => {
    const text = dd.textContent.trim();
    if (!/^[-+−]?[\\d.,]+(e[-+]\\d+)?%?( \\S+)?$/.test(text)) return false;
    const r = document.createRange();
    r.selectNodeContents(dd);
    const tops = new Set([...r.getClientRects()].filter(b => b.width > 0)
                         .map(b => Math.round(b.top)));
    return tops.size > 1;
  }).map(dd => dd.closest('.tw-value').dataset.name + ': ' + dd.textContent)"""

OUTSIDE_WIDGET = """() => [...document.querySelectorAll('.tw-value dd')].filter(dd =>
    dd.getBoundingClientRect().right > dd.closest('.tw-widget').getBoundingClientRect().right + 0.5)
  .map(dd => dd.closest('.tw-value').dataset.name + ': ' + dd.textContent)"""


@pytest.mark.parametrize("width", [320, 390, 768, 1024])
def test_no_number_breaks_inside(browser, server, width):
    """P1: "1.2e-⏎06", "4.67⏎nats", "16,060,522,⏎496 bytes": a number and its unit stay on one
    line (its label wraps instead), and no value runs out of its widget for it."""
    with new_page(browser, viewport={"width": width, "height": 900}) as pg:
        for path in VALUE_PAGES:
            pg.goto(server + path)
            pg.wait_for_function(SETTLED, timeout=30_000)
            assert pg.evaluate(BROKEN_NUMBERS) == [], path
            assert pg.evaluate(OUTSIDE_WIDGET) == [], path


# What each data table's and text description's disclosure looks like, and whether its summary
# takes the keyboard's focus with a visible ring.
DISCLOSURES = """() => [...document.querySelectorAll('details.tw-table:not([hidden]), details.tw-alt')]
  .map(d => {
    const s = d.querySelector(':scope > summary'), cs = getComputedStyle(d);
    const before = getComputedStyle(s, '::before');
    s.focus();
    const ring = getComputedStyle(s);
    return {cls: d.className, icon: before.maskImage || before.webkitMaskImage,
            border: parseFloat(cs.borderLeftWidth), shadow: cs.boxShadow,
            tint: getComputedStyle(s).backgroundColor,
            focused: document.activeElement === s,
            ring: s.matches(':focus-visible') ? ring.outlineStyle + ' ' + ring.outlineWidth : 'none'};
  })"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_data_tables_and_text_descriptions_are_plain_disclosures(browser, server, scheme):
    """P2: no admonition look (pencil icon, coloured border, tinted title bar) on "Data table"
    and "Text description"; each summary still takes the keyboard's focus, with a ring."""
    with new_page(browser, viewport={"width": 1200, "height": 900}, color_scheme=scheme) as pg:
        pg.goto(server + "/chapters/cost/")
        pg.wait_for_function(SETTLED, timeout=30_000)
        found = pg.evaluate(DISCLOSURES)
        assert {f["cls"] for f in found} >= {"tw-table", "tw-alt"}, found
        for f in found:
            assert f["icon"] in ("none", ""), f
            assert f["border"] == 0 and f["shadow"] == "none", f
            assert f["tint"] in ("rgba(0, 0, 0, 0)", "transparent"), f
            assert f["focused"] and f["ring"] == "solid 3px", f


# Per widget: the widths of its number boxes, and the right ends of its sliders per column.
BOXES = """() => [...document.querySelectorAll('.tw-widget[data-widget]')].map(w => {
    const boxes = [...w.querySelectorAll('.tw-control input[type=number]')];
    const ends = {};
    w.querySelectorAll('.tw-control input[type=range]').forEach(s => {
      const col = Math.round(s.closest('.tw-control').getBoundingClientRect().left);
      (ends[col] = ends[col] || []).push(Math.round(s.getBoundingClientRect().right));
    });
    return {widget: w.dataset.widget,
            widths: [...new Set(boxes.map(b => Math.round(b.getBoundingClientRect().width)))],
            ragged: Object.values(ends).filter(e => Math.max(...e) - Math.min(...e) > 1)};
  })"""


@pytest.mark.parametrize("path", ["/chapters/scaling/", "/chapters/cost/", "/chapters/model/"])
def test_one_number_box_width_per_widget(page, server, path):
    """P9: scaling's "positions" slider ran 8 px further than "head dim": every number box of a
    widget is one width, so its sliders end in one line in each column."""
    page.goto(server + path)
    page.wait_for_function(SETTLED, timeout=30_000)
    for w in page.evaluate(BOXES):
        assert len(w["widths"]) <= 1 and not w["ragged"], w


# The contrast of each greyed-out control's label against the widget's background: its colour
# composited (with every opacity on the way up) over the first opaque background behind it.
DISABLED_CONTRAST = """() => {
  const rgba = c => (c.match(/[\\d.]+/g) || []).map(Number).concat([1]).slice(0, 4);
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                     return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const over = (fg, a, bg) => [0, 1, 2].map(i => fg[i] * a + bg[i] * (1 - a));
  return [...document.querySelectorAll('.tw-control.tw-disabled label')].map(label => {
    let bg = null, alpha = 1;
    for (let e = label; e; e = e.parentElement) {
      const cs = getComputedStyle(e);
      alpha *= parseFloat(cs.opacity);
      const b = rgba(cs.backgroundColor);
      if (!bg && b[3] === 1 && cs.backgroundColor !== 'rgba(0, 0, 0, 0)') bg = b;
    }
    bg = bg || [255, 255, 255];
    const fg = rgba(getComputedStyle(label).color);
    const seen = over(fg, fg[3] * alpha, bg);
    const [hi, lo] = [lum(seen), lum(bg)].sort((a, b) => b - a);
    return [label.textContent, Math.round((hi + 0.05) / (lo + 0.05) * 100) / 100];
  });
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_greyed_out_labels_read_at_4_5_to_1(browser, server, scheme):
    """P14: attention_map's "layer" and "head", greyed while the map is a mean, were 4.30:1
    (light) and 4.13:1 (dark)."""
    with new_page(browser, viewport={"width": 1200, "height": 900}, color_scheme=scheme) as pg:
        pg.goto(server + "/chapters/attention-maps/")
        pg.wait_for_function(SETTLED, timeout=30_000)
        found = pg.evaluate(DISABLED_CONTRAST)
        assert found, "no greyed-out control at the defaults"
        assert all(ratio >= 4.5 for _, ratio in found), found


# Each code line of the print edition that wraps on paper: where its text starts on its first
# line, where its indentation ends, and where each further line starts (px).
WRAPPED_CODE = """() => {
  const out = [];
  document.querySelectorAll('.tw-line').forEach(line => {
    const r = document.createRange();
    r.selectNodeContents(line);
    const rows = [];  // the leftmost start of each row of text (a new row: half a line lower)
    let top = -Infinity;
    [...r.getClientRects()].filter(b => b.width > 0).sort((a, b) => a.top - b.top).forEach(b => {
      if (b.top > top + b.height / 2) { rows.push(b.left); top = b.top; }
      else rows[rows.length - 1] = Math.min(rows[rows.length - 1], b.left);
    });
    if (rows.length < 2) return;
    const text = line.textContent, indent = text.length - text.replace(/^ +/, '').length;
    const ch = parseFloat(getComputedStyle(line).paddingLeft) / (indent + 4);
    out.push({text: text.slice(0, 60), first: rows[0], indented: rows[0] + indent * ch,
              rest: Math.min(...rows.slice(1))});
  });
  return out;
}"""


def test_wrapped_code_keeps_its_indentation_in_print(browser, server):
    """P14: in the print edition a wrapped Python line went on at column 0; it goes on under
    its own indentation (plus four columns)."""
    with new_page(browser, viewport={"width": 700, "height": 900}) as pg:
        pg.emulate_media(media="print")
        # (not until "load": with every figure's picture and font in, that ran past 30 s in CI)
        pg.goto(server + "/print/", wait_until="commit")
        pg.wait_for_function("document.documentElement.dataset.twPrint", timeout=120_000,
                             polling=500)
        assert pg.evaluate("document.documentElement.dataset.twPrint") == "ready"
        wrapped = pg.evaluate(WRAPPED_CODE)
        assert wrapped, "no code line wraps on paper (or none is a line of its own)"
        assert all(w["rest"] >= w["indented"] - 1 for w in wrapped), \
            [w for w in wrapped if w["rest"] < w["indented"] - 1][:3]
        assert any(w["indented"] > w["first"] for w in wrapped)  # an indented line wrapped


# Per drawn figure: tick labels under 11 px, log axes labelled between powers of ten ("D1",
# "D2": plotly's minor digits), tick labels of one axis that touch, and the legend's entries.
TICKS = """() => [...document.querySelectorAll('.tw-widget[data-widget]')].map(w => {
    const gd = w.querySelector('.tw-plot.js-plotly-plot');
    if (!gd || !gd._fullLayout) return null;
    const fl = gd._fullLayout, out = {widget: w.dataset.widget, small: [], minor: [], touching: []};
    Object.keys(fl).filter(k => /^[xy]axis\\d*$/.test(k)).forEach(k => {
      const ax = fl[k];
      if (!ax.visible || !ax._id) return;
      if (ax.type === 'log' && typeof ax.dtick === 'string' && ax.dtick[0] === 'D'
          && Math.abs(ax.range[1] - ax.range[0]) >= 1) out.minor.push(k + ' ' + ax.dtick);
      // Two neighbours touch when their text lines come closer than a line's height: for
      // labels turned by an angle, their centres' distance across the lines' direction.
      const texts = [...gd.querySelectorAll(`.${ax._id}tick text`)].filter(t => t.textContent.trim());
      const turn = texts.length ? /rotate\\((-?[\\d.]+)/.exec(texts[0].getAttribute('transform') || '') : null;
      const angle = turn ? Math.abs(+turn[1]) * Math.PI / 180 : 0;
      // (a label turned up from its tick ends at the tick: its box's right edge is its anchor)
      const boxes = texts.map(t => [t.getBoundingClientRect(), parseFloat(getComputedStyle(t).fontSize)])
        .map(([r, px]) => [r, px, r.right])
        .filter(([r]) => r.width > 0)
        .sort(([a, , ax], [b, , bx]) => k[0] === 'x' ? (angle ? ax - bx : a.left - b.left) : a.top - b.top);
      boxes.forEach(([r, px, x], i) => {
        if (!i) return;
        const [q, , qx] = boxes[i - 1];
        const gap = k[0] === 'y' ? r.top - q.bottom
          : angle ? (x - qx) * Math.sin(angle) - px
          : r.left - q.right;
        if (gap < 1) out.touching.push(k);
      });
      [...gd.querySelectorAll(`.${ax._id}tick text`)].forEach(t => {
        const px = parseFloat(getComputedStyle(t).fontSize);
        if (px < 11) out.small.push(k + ' ' + px);
      });
    });
    out.legend = [...gd.querySelectorAll('.legendtext')].map(t => t.textContent);
    return out;
  }).filter(Boolean)"""


@pytest.mark.parametrize("path", ["/chapters/heads/", "/chapters/cost/", "/chapters/decode-time/",
                                  "/chapters/attention-maps/"])
def test_phone_ticks_are_legible(browser, server, path):
    """P12: on a phone, 9 px tick labels (multi_head, attention_map), log axes labelled "2 5 2 5"
    between decades, decode_roofline's "100 120" touching, and its legend naming the reader's
    step twice ("1 user" beside "B = 1")."""
    with new_page(browser, **PHONE) as pg:
        pg.goto(server + path)
        pg.wait_for_function(SETTLED, timeout=30_000)
        for fig in pg.evaluate(TICKS):
            assert not fig["small"] and not fig["minor"] and not fig["touching"], fig
            assert not any(t.startswith("B = ") for t in fig["legend"]), fig
