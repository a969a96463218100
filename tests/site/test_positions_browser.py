"""'Where order comes from' in Chromium: the widget draws, recomputes live, and fits a phone."""

from __future__ import annotations

import pytest
from widget_page import move_slider, open_widget, wait_live, wait_source

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/positions/"
WIDGET = '[data-widget="positions"]'


def test_theta_and_width_recompute_live(page, server):
    open_widget(page, server + CHAPTER, WIDGET, timeout=15_000)
    before = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').data[1].y.slice(0, 40)")
    move_slider(page, WIDGET, "rope_theta", 13)  # the 14th round stop (1-2-5 per decade): 1,000,000
    wait_live(page, WIDGET, timeout=15_000)
    page.wait_for_function(f"""(before) => {{
        const y = document.querySelector('{WIDGET} .tw-plot').data[1].y.slice(0, 40);
        return y.some((v, i) => v !== before[i]); }}""", arg=before, timeout=15_000)
    move_slider(page, WIDGET, "d_model", 6)  # 64
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-plot').data[0]
        .z[0].length === 64""", timeout=15_000)
    half = page.locator(f'{WIDGET} .tw-value[data-name="half_distance_text"] dd').inner_text()
    assert half.replace(",", "").isdigit() or half.startswith("beyond")
    assert page.console_errors == []


def test_offline_the_baked_theta_is_drawn(page, server):
    page.route("**/api/**", lambda route: route.abort())
    open_widget(page, server + CHAPTER, WIDGET, timeout=15_000)
    move_slider(page, WIDGET, "rope_theta", 12)  # 500,000, a baked value
    wait_source(page, WIDGET, source="precomputed", timeout=15_000)


def test_fits_a_phone(phone, server):
    page = phone
    open_widget(page, server + CHAPTER, WIDGET, timeout=15_000)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    height = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').getBoundingClientRect().height")
    assert overflow <= 0
    assert height >= 600  # the two panels stack on a phone
