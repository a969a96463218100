"""The model chapter in Chromium: presets move the fields, custom frees them, sampling goes live."""

from __future__ import annotations

import pytest
from widget_page import move_slider, open_widget, value_text, wait_live, wait_value

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/model/"
MP = '[data-widget="model_params"]'
SA = '[data-widget="sampling"]'


def test_model_params_presets_and_custom(page, server):
    open_widget(page, server + CHAPTER, MP, katex=15_000)
    assert value_text(page, MP, "total_params") == "6,738,415,616"
    page.select_option(f"{MP} select[name=preset]", "llama-2-70b")
    wait_value(page, MP, "total_params", "68,976,648,192")
    assert page.input_value(f"{MP} input[name=n_layers-value]") == "80"  # the preset moved the field
    page.select_option(f"{MP} select[name=preset]", "custom")
    move_slider(page, MP, "n_layers", 40)
    wait_live(page, MP)
    page.wait_for_function(f"""() => document.querySelector('{MP} .tw-value[data-name="total_params"] dd')
        .textContent.trim() !== '68,976,648,192'""", timeout=20_000)
    # one stacked segment per part: embedding, Q, K, V, O, gate, up, down, norms, LM head
    assert page.evaluate(f"document.querySelector('{MP} .tw-plot').data.length") == 10


def test_sampling_moves_live(page, server):
    open_widget(page, server + CHAPTER, SA)
    assert value_text(page, SA, "kept_tokens") == "4,096"
    move_slider(page, SA, "top_k", 7)
    wait_live(page, SA, timeout=30_000)
    wait_value(page, SA, "kept_tokens", "7")


@pytest.mark.parametrize("preset, total", [("llama-3.2-1b", "1,235,814,400"), ("book", "1,311,872")])
def test_tying_presets_go_live(page, server, preset, total):
    """The tie checkbox has no slider to move: under a preset it greys out and the server uses
    the preset's value, so the page gets a live result, not a 400."""
    open_widget(page, server + CHAPTER, MP)
    page.select_option(f"{MP} select[name=preset]", preset)
    wait_live(page, MP)
    wait_value(page, MP, "total_params", total)
    assert page.is_disabled(f"{MP} input[type=checkbox][name=tied]")
    assert not page.evaluate(f"document.querySelector('{MP}').classList.contains('tw-stale')")
    assert "ties" in page.locator(f"{MP} .tw-notice").inner_text()


def test_sampling_values_panel_has_the_off_by_two(page, server):
    open_widget(page, server + CHAPTER, SA)
    for name in ("loss_right", "loss_off_by_two", "loss_right_same", "n_prompt_tokens",
                 "logits_bytes_full", "logits_bytes_last"):
        assert value_text(page, SA, name)
