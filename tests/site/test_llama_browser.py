"""The Llama chapter in Chromium: the installed code is on the page, the parity widget goes live."""

from __future__ import annotations

import pytest
from widget_page import move_slider, open_widget, value_text, wait_live

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/llama/"
W = '[data-widget="parity"]'


def test_source_shown_and_parity_moves_live(page, server):
    import transformers

    open_widget(page, server + CHAPTER, W, timeout=30_000)
    body = page.inner_text("article")
    assert "class LlamaMLP" in body and "def repeat_kv" in body
    assert f"transformers {transformers.__version__}" in body and "Apache License 2.0" in body
    assert value_text(page, W, "max_abs_logit_diff") == "0 (identical)"  # an exact zero, said so (ux P1)
    move_slider(page, W, "seed", 7)
    wait_live(page, W, timeout=90_000)
    lengths = page.evaluate(f"""() => {{ const d = document.querySelector('{W} .tw-plot').data[0];
        return [d.x.length, d.y.length]; }}""")
    assert lengths[0] == lengths[1] >= 2  # |Δ logit| at every position
    assert value_text(page, W, "cached_vs_uncached_diff")


def test_bar_labels_stay_flat_on_a_phone(page, server):
    """Review: rotated labels overlapped the legend at 390 px; no tick label is rotated."""
    page.set_viewport_size({"width": 390, "height": 800})
    open_widget(page, server + CHAPTER, W, timeout=30_000)
    transforms = page.evaluate(f"""() => [...document.querySelectorAll('{W} .tw-plot .xtick text')]
        .map(t => t.getAttribute('transform') || '')""")
    assert transforms and not any("rotate" in t for t in transforms), transforms
