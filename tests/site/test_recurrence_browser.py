"""The recurrence chapter in Chromium: baked timings drawn, then re-measured live."""

from __future__ import annotations

import pytest
from widget_page import open_widget, refused_in_words, set_box, value_text, wait_source

from tests.support.browser import PHONE, new_page

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/recurrence/"
WIDGET = '[data-widget="sequential_vs_parallel"]'


def wait_live_and(page, js_condition):
    wait_source(page, WIDGET, js_condition, timeout=30_000)


def open_shared_link(page, server, length, factor):
    """Open the chapter from a link that sets the length and the factor, and wait until the live
    measurement of that length is drawn."""
    page.goto(server + CHAPTER + f"?sequential_vs_parallel.length={length}"
              f"&sequential_vs_parallel.factor={factor}")
    wait_live_and(page, f"""w.querySelector('.tw-plot').layout.annotations[0].text
        .startsWith('T = {length},')""")


def test_the_widget_draws_and_both_panels_follow_the_controls(page, server):
    open_widget(page, server + CHAPTER, WIDGET, katex=20_000)
    assert "cpu" in value_text(page, WIDGET, "measured_on")
    assert float(value_text(page, WIDGET, "speedup").split()[0]) > 0
    first_ms = value_text(page, WIDGET, "ms_sequential")

    # The factor slider: the right panel and the gradient value follow; 1.1 over 100 steps.
    set_box(page, WIDGET, "factor", 1.1)
    wait_live_and(page, """w.querySelector('.tw-plot').data
        .some(t => t.name === '1.1 per step' && t.line && t.line.width === 3)""")
    assert value_text(page, WIDGET, "gradient_product").split()[0] == "1.38e+04"  # as Python writes .3g

    # The length: a new measurement, drawn with its length in the title of the left panel.
    set_box(page, WIDGET, "length", 512)
    wait_live_and(page, """w.querySelector('.tw-plot').layout.annotations[0].text
        .startsWith('T = 512,')""")
    assert value_text(page, WIDGET, "ms_sequential") != first_ms
    assert page.locator(f'{WIDGET} input[type=range][name="length"]').count() == 1
    assert page.console_errors == []


def test_a_width_outside_the_range_is_refused_in_words(page, server):
    open_widget(page, server + CHAPTER, WIDGET)
    refused_in_words(page, WIDGET, "width", 5000, "from 16 to 512")


def test_with_the_api_blocked_the_baked_timings_are_drawn(page, server):
    page.route("**/api/**", lambda route: route.abort())
    open_widget(page, server + CHAPTER, WIDGET)
    set_box(page, WIDGET, "length", 1024)  # one of the baked lengths
    wait_source(page, WIDGET, "w.querySelector('.tw-plot').layout.annotations[0].text"
                ".startsWith('T = 1024,')", source="precomputed")
    assert "cpu" in value_text(page, WIDGET, "measured_on")


def test_a_shared_link_sets_the_controls_and_a_phone_gets_stacked_panels(browser, server):
    with new_page(browser, **PHONE) as page:
        open_shared_link(page, server, length=256, factor="1.01")
        assert page.locator(f'{WIDGET} input[name="factor-value"]').input_value() == "1.01"
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        domain = page.evaluate(f"""() => document.querySelector('{WIDGET} .tw-plot')
            .layout.xaxis2.domain""")
        assert overflow <= 0 and domain == [0, 1]


OVERLAPS = f"""() => {{
    const root = document.querySelector('{WIDGET} .tw-plot');
    const title = root.querySelector('.g-y2title text').getBoundingClientRect();
    return [...root.querySelectorAll('.y2tick text')].filter(t => {{
        const b = t.getBoundingClientRect();
        return b.right > title.left && b.left < title.right &&
               b.bottom > title.top && b.top < title.bottom;
    }}).map(t => t.textContent);
}}"""


def test_on_a_phone_the_tiniest_gradients_leave_the_axis_title_clear(browser, server):
    """factor 0.5 over 1,024 steps: ticks down to 1e-300 beside the 'gradient multiplier' title."""
    with new_page(browser, **PHONE) as page:
        open_shared_link(page, server, length=1024, factor="0.5")
        page.wait_for_selector(f"{WIDGET} .tw-plot .g-y2title text")
        assert page.evaluate(OVERLAPS) == []
        # The left panel: linear bars, each with its time written on it.
        labels = page.evaluate(f"""() => [...document.querySelectorAll(
            '{WIDGET} .tw-plot .bars .bartext')].map(t => t.textContent)""")
        assert len(labels) == 2 and all(t.endswith(" ms") for t in labels)
