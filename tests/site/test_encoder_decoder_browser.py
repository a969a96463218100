"""The encoder-decoder chapter in Chromium: enc_dec_masks draws three heatmaps, recomputes live
when a slider moves, refuses padding that reaches the length, and stacks on a phone."""

from __future__ import annotations

import pytest

from tests.support.browser import PHONE, new_page

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/encoder-decoder/"
WIDGET = '[data-widget="enc_dec_masks"]'


def value(page, name):
    return page.locator(f'{WIDGET} .tw-value[data-name="{name}"] dd').inner_text().strip()


def heat_sizes(page):
    return page.evaluate(f"""Array.from(document.querySelector('{WIDGET} .tw-plot').data)
        .filter(t => t.type === 'heatmap').map(t => [t.z.length, t.z[0].length])""")


def test_enc_dec_masks_draws_and_moves(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=20_000)
    assert heat_sizes(page) == [[6, 6], [5, 5], [5, 6]]
    assert value(page, "cross_shape") == "(2, 5, 6)"

    page.fill(f'{WIDGET} input[name="src_len-value"]', "9")
    page.press(f'{WIDGET} input[name="src_len-value"]', "Enter")
    page.wait_for_function(f"document.querySelector('{WIDGET}').dataset.source === 'live'",
                           timeout=20_000)
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-value[data-name="cross_shape"] dd')
        .innerText.trim() === '(2, 5, 9)'""", timeout=20_000)
    assert heat_sizes(page) == [[9, 9], [5, 5], [5, 9]]

    for name in ("src_pad", "tgt_pad", "tgt_len"):  # pads first: padding must stay below the length
        slider = page.locator(f'{WIDGET} input[type=range][name="{name}"]')
        slider.evaluate("(el) => { el.value = el.min; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-value[data-name="encoder_allowed"] dd')
        .innerText.trim() === '81'""", timeout=20_000)  # no source padding: all 9 x 9 pairs
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-value[data-name="decoder_shape"] dd')
        .innerText.trim() === '(2, 1, 1)'""", timeout=20_000)  # the last slider's answer arrives last
    assert value(page, "encoder_allowed") == "81"
    assert page.console_errors == []


def test_enc_dec_masks_stacks_on_a_phone(browser, server):
    with new_page(browser, **PHONE) as page:
        page.goto(server + CHAPTER)
        page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=20_000)
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
