"""The block chapter in Chromium: both widgets draw, recompute live when moved, and fit a phone."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/block/"
MLP = '[data-widget="mlp"]'
NORM = '[data-widget="rmsnorm"]'


def value(page, widget, name):
    return page.locator(f'{widget} .tw-value[data-name="{name}"] dd').inner_text().strip()


def test_mlp_widget_moves(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{MLP} .tw-plot .main-svg", timeout=20_000)
    assert value(page, MLP, "params_gated") == "176,160,768"
    assert value(page, MLP, "params_plain") == "117,440,512"
    assert value(page, MLP, "mlp_share") == "80.8%"  # the text's Llama-3-8B figure, at the default
    box = page.locator(f'{MLP} input[name="d_ff-value"]')
    box.fill("11008")
    box.press("Enter")
    page.wait_for_function(f"""() => document.querySelector('{MLP} .tw-value[data-name="params_gated"] dd')
        .innerText.trim() === '135,266,304'""", timeout=20_000)
    page.select_option(f'{MLP} select[name="kind"]', "plain")
    page.wait_for_function(f"document.querySelector('{MLP}').dataset.source === 'live'", timeout=20_000)
    page.wait_for_function(f"""() => document.querySelector('{MLP} .tw-plot').data[2].y[0] === 90177536""",
                           timeout=20_000)
    assert page.console_errors == []


def test_rmsnorm_widget_moves(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{NORM} .tw-plot .main-svg", timeout=20_000)
    page.select_option(f'{NORM} select[name="dtype"]', "float16")
    box = page.locator(f'{NORM} input[name="offset-value"]')
    box.fill("300")
    box.press("Enter")
    page.locator(f'{NORM} input[type=checkbox][name="upcast"]').uncheck()
    page.wait_for_function(f"document.querySelector('{NORM}').dataset.source === 'live'", timeout=20_000)
    page.wait_for_function(f"""() => parseFloat(document.querySelector('{NORM} .tw-value[data-name="error_no_upcast"] dd')
        .innerText) > 0.99""", timeout=20_000)
    text = page.locator(f'{NORM} .tw-value[data-name="mean_square_running_text"] dd').inner_text()
    assert "overflows" in text
    assert page.console_errors == []


def test_block_widgets_fit_a_phone(phone, server, fits_the_screen):
    phone.goto(server + CHAPTER)
    fits_the_screen(phone, MLP)
