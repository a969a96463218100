"""The Llama chapter in Chromium: the installed code is on the page, the parity widget goes live."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/llama/"
W = '[data-widget="parity"]'


def test_source_shown_and_parity_moves_live(page, server):
    import transformers

    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=30_000)
    body = page.inner_text("article")
    assert "class LlamaMLP" in body and "def repeat_kv" in body
    assert f"transformers {transformers.__version__}" in body and "Apache License 2.0" in body
    assert page.locator(f'{W} .tw-value[data-name="max_abs_logit_diff"] dd').inner_text().strip() == "0.0e+00"  # the prose's .1e
    page.evaluate("""(w) => {
        const s = document.querySelector(`${w} input[type=range][name=seed]`);
        s.value = 7; s.dispatchEvent(new Event('input', {bubbles: true})); }""", W)
    page.wait_for_function(f"document.querySelector('{W}').dataset.source === 'live'", timeout=30_000)
    assert page.evaluate(f"document.querySelector('{W} .tw-plot').data[0].y.length") == 5
    assert page.locator(f'{W} .tw-value[data-name="cached_vs_uncached_diff"] dd').inner_text().strip()


def test_bar_labels_stay_flat_on_a_phone(page, server):
    """Review: rotated labels overlapped the legend at 390 px; the labels are two short lines."""
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=30_000)
    plot = f"document.querySelector('{W} .tw-plot')"
    assert page.evaluate(f"{plot}.layout.xaxis.tickangle") == 0
    assert all("<br>" in x for x in page.evaluate(f"{plot}.data[0].x")[1:3])
