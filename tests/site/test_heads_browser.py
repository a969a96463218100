"""The heads chapter in Chromium: the multi_head widget draws baked maps, then recomputes live."""

from __future__ import annotations

import pytest
from widget_page import move_slider, value_text

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/heads/"
WIDGET = '[data-widget="multi_head"]'


def n_maps(page):
    return page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').data.length")


def test_multi_head_draws_and_recomputes(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(".katex", timeout=15_000)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=20_000)
    widget = page.locator(WIDGET)
    assert widget.get_attribute("data-source") == "precomputed"
    assert n_maps(page) == 8 and value_text(page, WIDGET, "kv_fraction") == "0.2500"

    move_slider(page, WIDGET, "n_kv", 0)  # the first of the allowed counts (divisors of h): multi-query
    page.wait_for_function(f"document.querySelector('{WIDGET}').dataset.source === 'live'",
                           timeout=20_000)
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-value[data-name="kv_fraction"] dd')
        .innerText.trim() === '0.1250'""", timeout=20_000)
    assert page.locator(f'{WIDGET} input[name="n_kv-value"]').input_value() == "1"

    move_slider(page, WIDGET, "n_heads", 4)  # 4 heads, still one KV head
    page.wait_for_function(f"document.querySelector('{WIDGET} .tw-plot').data.length === 4",
                           timeout=20_000)
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-value[data-name="kv_fraction"] dd')
        .innerText.trim() === '0.2500'""", timeout=20_000)
    assert page.console_errors == []


def test_phone_width_stacks_two_columns(phone, server):
    page = phone
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=20_000)
    dom = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').layout.xaxis2.domain")
    assert dom[0] > 0.5  # head 1 sits in the second of two columns
