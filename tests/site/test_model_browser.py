"""The model chapter in Chromium: presets move the fields, custom frees them, sampling goes live."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/model/"
MP = '[data-widget="model_params"]'
SA = '[data-widget="sampling"]'


def value_text(page, w, name):
    return page.locator(f'{w} .tw-value[data-name="{name}"] dd').inner_text().strip()


def wait_value(page, w, name, text):
    page.wait_for_function("""([w, name, text]) => {
        const dd = document.querySelector(`${w} .tw-value[data-name="${name}"] dd`);
        return dd && dd.textContent.trim() === text; }""", arg=[w, name, text], timeout=20_000)


def move_slider(page, w, name, position):
    page.evaluate("""([w, name, pos]) => {
        const s = document.querySelector(`${w} input[type=range][name=${name}]`);
        s.value = pos;
        s.dispatchEvent(new Event('input', {bubbles: true}));
    }""", [w, name, position])


def test_model_params_presets_and_custom(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(".katex", timeout=15_000)
    page.wait_for_selector(f"{MP} .tw-plot .main-svg", timeout=20_000)
    assert value_text(page, MP, "total_params") == "6,738,415,616"
    page.select_option(f"{MP} select[name=preset]", "llama-2-70b")
    wait_value(page, MP, "total_params", "68,976,648,192")
    assert page.input_value(f"{MP} input[name=n_layers-value]") == "80"  # the preset moved the field
    page.select_option(f"{MP} select[name=preset]", "custom")
    move_slider(page, MP, "n_layers", 40)
    page.wait_for_function(f"document.querySelector('{MP}').dataset.source === 'live'", timeout=20_000)
    page.wait_for_function(f"""() => document.querySelector('{MP} .tw-value[data-name="total_params"] dd')
        .textContent.trim() !== '68,976,648,192'""", timeout=20_000)
    assert page.evaluate(f"document.querySelector('{MP} .tw-plot').data[0].x.length") == 5


def test_sampling_moves_live(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{SA} .tw-plot .main-svg", timeout=20_000)
    assert value_text(page, SA, "kept_tokens") == "4,096"
    move_slider(page, SA, "top_k", 7)
    page.wait_for_function(f"document.querySelector('{SA}').dataset.source === 'live'", timeout=30_000)
    wait_value(page, SA, "kept_tokens", "7")
