"""The masks chapter in Chromium: the causal_mask widget draws, recomputes live, and fits a phone."""

from __future__ import annotations

import pytest
from widget_page import open_widget, value_text, wait_live, wait_value

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/masks/"
WIDGET = '[data-widget="causal_mask"]'


def test_mask_widget_moves_and_shows_the_nan_row(page, server):
    open_widget(page, server + CHAPTER, WIDGET, katex=15_000)
    z = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').data[0].z")
    assert [round(w, 2) for w in z[1][:2]] == [0.08, 0.92]  # the handout's decoder row for river
    assert value_text(page, WIDGET, "row_sums_text") == "1.00 · 1.00 · 1.00"

    page.select_option(f'{WIDGET} select[name="mask"]', "causal_padding")
    wait_live(page, WIDGET)
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-plot').data[0]
        .y.length === 4""", timeout=20_000)
    assert value_text(page, WIDGET, "nan_rows") == "1"
    assert value_text(page, WIDGET, "row_sums_text").startswith("NaN")
    nan_trace = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').data[2].z[0]")
    assert nan_trace == [1, 1, 1, 1]

    page.select_option(f'{WIDGET} select[name="form"]', "boolean")
    wait_value(page, WIDGET, "nan_rows", "0")
    # the float32 minimum cast to bfloat16: the NaN row is back, shown by its own form
    page.select_option(f'{WIDGET} select[name="form"]', "additive_min_fp32")
    page.select_option(f'{WIDGET} select[name="dtype"]', "bfloat16")
    wait_value(page, WIDGET, "nan_rows", "1")
    # the cells' text is drawn by one trace only
    with_text = page.evaluate(f"""document.querySelector('{WIDGET} .tw-plot').data
        .filter(t => t.text && t.type !== 'bar').map(t => t.name)""")
    assert with_text == ["labels"]
    page.select_option(f'{WIDGET} select[name="dtype"]', "float32")
    page.select_option(f'{WIDGET} select[name="form"]', "after_softmax")
    page.select_option(f'{WIDGET} select[name="mask"]', "causal")
    wait_value(page, WIDGET, "row_sums_text", "0.78 · 0.79 · 1.00")
    assert page.console_errors == []


def test_mask_widget_fits_a_phone(phone, server, fits_the_screen):
    phone.goto(server + CHAPTER)
    fits_the_screen(phone, WIDGET)
