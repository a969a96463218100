"""The attention-maps chapter in Chromium: real weights drawn, then recomputed live."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/attention-maps/"
WIDGETS = '[data-widget="attention_map"]'


def plot_layout(page, i):
    return page.evaluate(f"document.querySelectorAll('{WIDGETS}')[{i}].querySelector('.tw-plot').layout")


def test_book_and_minilm_maps_draw_and_recompute(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{WIDGETS} .tw-plot .main-svg", timeout=20_000)
    widgets = page.locator(WIDGETS)
    assert widgets.count() == 2
    book, minilm = plot_layout(page, 0), plot_layout(page, 1)
    assert book["xaxis"]["ticktext"][0] == "&lt;|endoftext|&gt;" and "it" in book["xaxis"]["ticktext"]
    assert minilm["xaxis"]["ticktext"][0] == "[CLS]"
    assert "causal" in book["title"]["text"] and "bidirectional" in minilm["title"]["text"]

    first = widgets.nth(0)
    first.locator('input[name="average"]').uncheck()
    page.wait_for_function(f"document.querySelector('{WIDGETS}').dataset.source === 'live'",
                           timeout=20_000)
    page.wait_for_function(f"""() => document.querySelector('{WIDGETS} .tw-plot').layout
        .title.text.endsWith('layer 0, head 0')""", timeout=20_000)
    assert first.locator('.tw-value[data-name="look_from_token"] dd').inner_text() == "it"
    assert first.locator('.tw-value[data-name="top_summary"] dd').inner_text().strip()
    assert page.console_errors == []
