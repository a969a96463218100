"""Keyboard and screen-reader access to widgets (issue 8: items 1, 5 (text contrast), 8)."""

from __future__ import annotations

import pytest

from tests.support.browser import styles_settled

pytestmark = pytest.mark.browser

SCALING = "/chapters/scaling/"
MAPS = "/chapters/attention-maps/"
W = '[data-widget="attention_scaling"]'
A = '[data-widget="attention_map"]'

CONTRAST = """([sel, prop]) => {
  const node = document.querySelector(sel);
  const parse = c => { const m = c.match(/[\\d.]+/g).map(Number); return m.length > 3 && m[3] === 0 ? null : m; };
  const lum = ([r, g, b]) => { const f = v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
                               return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  let bg = null;
  for (let n = node; n && !bg; n = n.parentElement) bg = parse(getComputedStyle(n).backgroundColor);
  bg = bg || [255, 255, 255];
  const fg = parse(getComputedStyle(node)[prop]);
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def set_scheme(page, scheme):
    page.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
    styles_settled(page)


def focus_by_tab(page, selector, limit=80):
    """Tab from the top of the page until `selector` has focus (keyboard, so :focus-visible)."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.locator("article h1").first.click()
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement.matches('{selector}')"):
            return
    raise AssertionError(f"Tab never reached {selector}")


@pytest.mark.parametrize("scheme", ["default", "slate"])
@pytest.mark.parametrize("control", [
    "input[type=range][name=d_k]", 'input[name="d_k-value"]',
])
def test_every_control_shows_a_focus_ring(page, server, scheme, control):
    page.goto(server + SCALING)
    page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
    set_scheme(page, scheme)
    focus_by_tab(page, f"{W} {control}")
    style = page.evaluate("(() => { const s = getComputedStyle(document.activeElement); "
                          "return [s.outlineStyle, parseFloat(s.outlineWidth)]; })()")
    assert style[0] != "none" and style[1] >= 2
    ratio = page.evaluate(CONTRAST, [f"{W} {control}", "outlineColor"])
    assert ratio >= 3, ratio  # WCAG 1.4.11: a focus indicator 3:1 against its background


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_checkbox_and_select_show_a_focus_ring(page, server, scheme):
    page.goto(server + MAPS)
    page.wait_for_selector(f"{A} .tw-plot .main-svg", timeout=30_000)
    set_scheme(page, scheme)
    for control in ("input[type=checkbox][name=average]", "select[name=model]"):
        focus_by_tab(page, f"{A} {control}", limit=150)
        style = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert style != "none", control


VISIBLE = """(() => { let o = 1; for (let n = document.activeElement; n; n = n.parentElement)
    o *= +getComputedStyle(n).opacity; return o; })()"""


def test_plotly_toolbar_buttons_are_visible_when_focused(page, server):
    """Plotly's toolbar is faded out until hover; its buttons are in the tab order, so a
    keyboard reader must see each one it lands on."""
    page.goto(server + SCALING)
    page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
    n = page.evaluate(f"[...document.querySelectorAll('{W} .modebar-btn')].filter(b => b.tabIndex >= 0).length")
    assert n > 0
    focus_by_tab(page, f"{W} .modebar-btn", limit=120)
    for _ in range(n):
        assert page.evaluate("document.activeElement.matches('.modebar-btn')")
        assert page.evaluate(VISIBLE) == 1.0
        assert page.evaluate("document.activeElement.getAttribute('aria-label') || "
                             "document.activeElement.getAttribute('data-title')")
        page.keyboard.press("Tab")


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_error_and_precomputed_texts_meet_wcag_aa(page, server, scheme):
    page.goto(server + SCALING)
    page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
    set_scheme(page, scheme)
    box = page.locator(f'{W} input[name="d_k-value"]')
    box.fill("5000")
    box.dispatch_event("change")
    page.locator(f"{W} .tw-error").wait_for(state="visible")
    assert page.evaluate(CONTRAST, [f"{W} .tw-error", "color"]) >= 4.5
    assert page.locator(W).get_attribute("data-source") == "precomputed"
    assert page.evaluate(CONTRAST, [f"{W} .tw-status", "color"]) >= 4.5
    page.evaluate(f"document.querySelector('{W} .tw-notice').hidden = false; "
                  f"document.querySelector('{W} .tw-notice').textContent = 'x'")
    assert page.evaluate(CONTRAST, [f"{W} .tw-notice", "color"]) >= 4.5


def test_the_log_slider_announces_its_value_not_its_exponent(page, server):
    page.goto(server + SCALING)
    page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
    slider = page.locator(f"{W} input[type=range][name=d_k]")
    assert slider.input_value() == "6"
    assert slider.get_attribute("aria-valuetext") == "64"
    focus_by_tab(page, f"{W} input[type=range][name=d_k]")
    page.keyboard.press("ArrowRight")
    assert slider.get_attribute("aria-valuetext") == "128"


def test_each_plot_has_a_label_a_summary_and_a_data_table(page, server):
    page.goto(server + MAPS)
    page.wait_for_selector(f"{A} .tw-plot .main-svg", timeout=30_000)
    for sel in (f"{A}", W):
        if sel == W:
            page.goto(server + SCALING)
            page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
        plot = page.locator(f"{sel} .tw-plot").first
        label = page.evaluate(f"""() => {{ const p = document.querySelector('{sel} .tw-plot');
            return document.getElementById(p.getAttribute('aria-labelledby')).innerText; }}""")
        summary = page.evaluate(f"""() => {{ const p = document.querySelector('{sel} .tw-plot');
            return document.getElementById(p.getAttribute('aria-describedby')).textContent; }}""")
        assert plot.get_attribute("role") == "figure" and label.strip()
        assert len(summary) > 20
    # a result's table is a real <table> in a <details> a screen reader can open
    page.route("**/api/widgets/attention_scaling/result*", lambda route: route.fulfill(
        status=200, content_type="application/json",
        body=__import__("json").dumps({**route.fetch().json(), "summary": "Two curves.",
              "table": {"caption": "Var by d_k", "columns": ["d_k", "var"], "rows": [[64, 63.9]]}})))
    page.evaluate(f"""() => {{ const s = document.querySelector('{W} input[type=range][name=d_k]');
        s.value = 7; s.dispatchEvent(new Event('input', {{bubbles: true}})); }}""")
    page.wait_for_function(f"document.querySelector('{W}').dataset.source === 'live'")
    assert page.locator(f"{W} .tw-summary").text_content() == "Two curves."
    table = page.locator(f"{W} details.tw-table table")
    assert table.locator("caption").text_content() == "Var by d_k"
    assert table.locator("th[scope=col]").all_text_contents() == ["d_k", "var"]
    assert table.locator("tbody th[scope=row]").all_text_contents() == ["64"]
