"""The families chapter in Chromium: the training_signal widget draws, recomputes live, counts a
real passage, and fits a phone."""

from __future__ import annotations

import pytest
from widget_page import open_widget, value_text, wait_live, wait_value

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/families/"
WIDGET = '[data-widget="training_signal"]'


def bars(page):
    return page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').data[0].y")


def test_training_signal_moves_and_counts_a_passage(page, server):
    open_widget(page, server + CHAPTER, WIDGET, katex=15_000)
    assert bars(page) == [511, 77]
    assert value_text(page, WIDGET, "encoder_predictions") == "77"
    assert value_text(page, WIDGET, "ratio") == "6.64"  # no spaced "×" unit to wrap at 1200 px
    ticks = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').layout.xaxis2.tickvals")
    assert ticks[-1] == 4096

    page.fill(f'{WIDGET} input[name="length-value"]', "46")
    page.press(f'{WIDGET} input[name="length-value"]', "Enter")
    wait_live(page, WIDGET)
    page.wait_for_function(f"""() => JSON.stringify(document.querySelector('{WIDGET} .tw-plot')
        .data[0].y) === '[45,7]'""", timeout=20_000)

    slider = page.locator(f'{WIDGET} input[type=range][name="mask_rate"]')
    slider.evaluate("(el) => { el.value = el.max; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-plot').data[0].y[1]
        === 23""", timeout=20_000)  # half of 46 hidden

    page.check(f'{WIDGET} input[type=checkbox][name="use_text"]')
    wait_value(page, WIDGET, "tokens", "46")
    assert page.console_errors == []


def test_training_signal_fits_a_phone(phone, server, fits_the_screen):
    phone.goto(server + CHAPTER)
    fits_the_screen(phone, WIDGET)
