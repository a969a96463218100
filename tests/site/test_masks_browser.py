"""The masks chapter in Chromium: the causal_mask widget draws, recomputes live, and fits a phone."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/masks/"
WIDGET = '[data-widget="causal_mask"]'


def value(page, name):
    return page.locator(f'{WIDGET} .tw-value[data-name="{name}"] dd').inner_text().strip()


def test_mask_widget_moves_and_shows_the_nan_row(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=20_000)
    page.wait_for_selector(".katex", timeout=15_000)
    z = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').data[0].z")
    assert [round(w, 2) for w in z[1][:2]] == [0.08, 0.92]  # the handout's decoder row for river
    assert value(page, "row_sums_text") == "1.00 · 1.00 · 1.00"

    page.select_option(f'{WIDGET} select[name="mask"]', "causal_padding")
    page.wait_for_function(f"document.querySelector('{WIDGET}').dataset.source === 'live'",
                           timeout=20_000)
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-plot').data[0]
        .y.length === 4""", timeout=20_000)
    assert value(page, "nan_rows") == "1"
    assert value(page, "row_sums_text").startswith("NaN")
    nan_trace = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').data[2].z[0]")
    assert nan_trace == [1, 1, 1, 1]

    page.select_option(f'{WIDGET} select[name="form"]', "boolean")
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-value[data-name="nan_rows"] dd')
        .innerText.trim() === '0'""", timeout=20_000)
    # the float32 minimum cast to bfloat16: the NaN row is back, shown by its own form
    page.select_option(f'{WIDGET} select[name="form"]', "additive_min_fp32")
    page.select_option(f'{WIDGET} select[name="dtype"]', "bfloat16")
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-value[data-name="nan_rows"] dd')
        .innerText.trim() === '1'""", timeout=20_000)
    # the cells' text is drawn by one trace only
    with_text = page.evaluate(f"""document.querySelector('{WIDGET} .tw-plot').data
        .filter(t => t.text && t.type !== 'bar').map(t => t.name)""")
    assert with_text == ["labels"]
    page.select_option(f'{WIDGET} select[name="dtype"]', "float32")
    page.select_option(f'{WIDGET} select[name="form"]', "after_softmax")
    page.select_option(f'{WIDGET} select[name="mask"]', "causal")
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-value[data-name="row_sums_text"] dd')
        .innerText.trim() === '0.78 · 0.79 · 1.00'""", timeout=20_000)
    assert page.console_errors == []


def test_mask_widget_fits_a_phone(phone, server, fits_the_screen):
    phone.goto(server + CHAPTER)
    fits_the_screen(phone, WIDGET)
