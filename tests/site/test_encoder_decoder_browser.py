"""The encoder-decoder chapter in Chromium: enc_dec_masks draws three heatmaps, recomputes live
when a slider moves, refuses padding that reaches the length, and stacks on a phone."""

from __future__ import annotations

import pytest
from widget_page import open_widget, value_text, wait_live, wait_value

from tests.support.browser import PHONE, new_page

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/encoder-decoder/"
WIDGET = '[data-widget="enc_dec_masks"]'


def heat_sizes(page):
    return page.evaluate(f"""Array.from(document.querySelector('{WIDGET} .tw-plot').data)
        .filter(t => t.type === 'heatmap').map(t => [t.z.length, t.z[0].length])""")


def test_enc_dec_masks_draws_and_moves(page, server):
    open_widget(page, server + CHAPTER, WIDGET)
    assert heat_sizes(page) == [[6, 6], [5, 5], [5, 6]]
    assert value_text(page, WIDGET, "cross_shape") == "(2, 5, 6)"

    page.fill(f'{WIDGET} input[name="src_len-value"]', "9")
    page.press(f'{WIDGET} input[name="src_len-value"]', "Enter")
    wait_live(page, WIDGET)
    wait_value(page, WIDGET, "cross_shape", "(2, 5, 9)")
    assert heat_sizes(page) == [[9, 9], [5, 5], [5, 9]]

    for name in ("src_pad", "tgt_pad", "tgt_len"):  # pads first: padding must stay below the length
        slider = page.locator(f'{WIDGET} input[type=range][name="{name}"]')
        slider.evaluate("(el) => { el.value = el.min; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    wait_value(page, WIDGET, "encoder_allowed", "81")  # no source padding: all 9 x 9 pairs
    wait_value(page, WIDGET, "decoder_shape", "(2, 1, 1)")  # the last slider's answer arrives last
    assert value_text(page, WIDGET, "encoder_allowed") == "81"
    assert page.console_errors == []


def test_enc_dec_masks_stacks_on_a_phone(browser, server):
    with new_page(browser, **PHONE) as page:
        open_widget(page, server + CHAPTER, WIDGET)
        width = page.evaluate(f"document.querySelector('{WIDGET}').getBoundingClientRect().width")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert width <= 390 and overflow <= 0
        tops = page.evaluate(f"""(() => {{ const p = document.querySelector('{WIDGET} .tw-plot');
            return ['xaxis', 'xaxis2', 'xaxis3'].map(a => p._fullLayout[a.replace('x', 'y')].domain[0]); }})()""")
        assert tops[0] > tops[1] > tops[2]  # three panels, one above the other
        # no panel's tick labels run into the title of the panel below it
        clash = page.evaluate(f"""(() => {{ const p = document.querySelector('{WIDGET} .tw-plot');
            const bottom = x => {{ const b = Array.from(p.querySelectorAll(`.${{x}}tick text`))
                .map(e => e.getBoundingClientRect().bottom); return b.length ? Math.max(...b) : 1e9; }};
            const tops = Array.from(p.querySelectorAll('.annotation')).map(e => e.getBoundingClientRect().top)
                .sort((a, b) => a - b);
            return [bottom('x') - tops[1], bottom('x2') - tops[2]]; }})()""")
        assert max(clash) < 0, clash
