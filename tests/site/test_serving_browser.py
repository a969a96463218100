"""The serving chapter in Chromium: both widgets draw baked results, then recompute live."""

from __future__ import annotations

import pytest
from widget_page import move_slider, open_widget, set_box, value_text, wait_live, wait_value

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/serving/"
KV = '[data-widget="kv_cache"]'
PC = '[data-widget="prefix_cache_cost"]'


def test_kv_cache_moves_through_heads_context_and_presets(page, server):
    open_widget(page, server + CHAPTER, KV, katex=15_000)
    assert page.locator(KV).get_attribute("data-source") == "precomputed"
    assert value_text(page, KV, "bytes_per_token") == "131,072 bytes"
    assert value_text(page, KV, "users_fit") == "64"
    assert page.evaluate(f"document.querySelector('{KV} .tw-plot').data.length") == 6

    move_slider(page, KV, "n_kv", 5)  # the last of 1, 2, 4, 8, 16, 32: multi-head attention
    wait_live(page, KV)
    wait_value(page, KV, "bytes_per_token", "524,288 bytes")
    wait_value(page, KV, "users_fit", "15")

    move_slider(page, KV, "context_len", 17)  # log2 slider: 131,072 tokens
    wait_value(page, KV, "users_fit", "0")
    assert page.evaluate(f"document.querySelector('{KV} .tw-plot').data[5].x[0]") == 131072
    assert "none fits" in page.locator(f"{KV} .tw-notice").inner_text()

    page.select_option(f"{KV} select[name=preset]", "llama-2-70b")
    wait_value(page, KV, "gqa_saving_factor", "8 ×")
    assert page.input_value(f"{KV} input[name=n_layers-value]") == "80"  # the preset moved it
    assert "do not fit" in page.locator(f"{KV} .tw-notice").inner_text()
    page.select_option(f"{KV} select[name=memory]", "192")
    wait_value(page, KV, "users_fit", "1")
    page.select_option(f"{KV} select[name=dtype]", "fp8")
    wait_value(page, KV, "bytes_per_token", "166,400 bytes")
    assert page.console_errors == []


def test_prefix_cache_cost_moves_and_refuses_more_cached_than_input(page, server):
    open_widget(page, server + CHAPTER, PC)
    assert value_text(page, PC, "cost_full") == "0.00900"
    assert value_text(page, PC, "cost_cached") == "0.00585"
    assert value_text(page, PC, "saving") == "35%"

    move_slider(page, PC, "cached_tokens", 8)  # log2 slider: 256 cached tokens
    wait_live(page, PC)
    wait_value(page, PC, "cost_cached", "0.00670")  # (144 * 10 + 256 * 1 + 100 * 50) / 1e6
    set_box(page, PC, "cached_tokens", 500)
    error = page.locator(f"{PC} .tw-error")
    error.wait_for(state="visible", timeout=20_000)
    # refused in the page (the rule is spec data: cached at most input), naming the bound
    assert "'cached prefix tokens' must be from 1 to 400 at input tokens = 400" in error.inner_text()
    assert "Kept cached prefix tokens = 256" in error.inner_text()
    assert page.console_errors == []  # nothing was sent, so nothing was refused


def test_phone_width(phone, server, fits_the_screen):
    phone.goto(server + CHAPTER)
    fits_the_screen(phone, KV)
    fits_the_screen(phone, PC)
