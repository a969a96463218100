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
    assert page.locator(f'{W} .tw-value[data-name="max_abs_logit_diff"] dd').inner_text().strip() == "0.00e+00"
    page.evaluate("""(w) => {
        const s = document.querySelector(`${w} input[type=range][name=seed]`);
        s.value = 7; s.dispatchEvent(new Event('input', {bubbles: true})); }""", W)
    page.wait_for_function(f"document.querySelector('{W}').dataset.source === 'live'", timeout=30_000)
    assert page.evaluate(f"document.querySelector('{W} .tw-plot').data[0].y.length") == 5
    assert page.locator(f'{W} .tw-value[data-name="cached_vs_uncached_diff"] dd').inner_text().strip()
