"""The families chapter in Chromium: the training_signal widget draws, recomputes live, counts a
real passage, and fits a phone."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/families/"
WIDGET = '[data-widget="training_signal"]'


def value(page, name):
    return page.locator(f'{WIDGET} .tw-value[data-name="{name}"] dd').inner_text().strip()


def bars(page):
    return page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').data[0].y")


def test_training_signal_moves_and_counts_a_passage(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=20_000)
    page.wait_for_selector(".katex", timeout=15_000)
    assert bars(page) == [511, 77]
    assert value(page, "encoder_predictions") == "77"
    assert value(page, "ratio") == "6.64"  # no spaced "×" unit to wrap at 1200 px
    ticks = page.evaluate(f"document.querySelector('{WIDGET} .tw-plot').layout.xaxis2.tickvals")
    assert ticks[-1] == 4096

    page.fill(f'{WIDGET} input[name="length-value"]', "46")
    page.press(f'{WIDGET} input[name="length-value"]', "Enter")
    page.wait_for_function(f"document.querySelector('{WIDGET}').dataset.source === 'live'",
                           timeout=20_000)
    page.wait_for_function(f"""() => JSON.stringify(document.querySelector('{WIDGET} .tw-plot')
        .data[0].y) === '[45,7]'""", timeout=20_000)

    slider = page.locator(f'{WIDGET} input[type=range][name="mask_rate"]')
    slider.evaluate("(el) => { el.value = el.max; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-plot').data[0].y[1]
        === 23""", timeout=20_000)  # half of 46 hidden

    page.check(f'{WIDGET} input[type=checkbox][name="use_text"]')
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-value[data-name="tokens"] dd')
        .innerText.trim() === '46'""", timeout=20_000)
    assert page.console_errors == []


def test_training_signal_fits_a_phone(phone, server, fits_the_screen):
    phone.goto(server + CHAPTER)
    fits_the_screen(phone, WIDGET)
