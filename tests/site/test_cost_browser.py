"""The cost chapter in Chromium: the baked measurement drawn, every control moved live, the
device's ceiling shown on the slider and refused in words above it, and the offline page."""

from __future__ import annotations

import pytest
from widget_page import open_widget, set_box, value_text, wait_source

from tests.support.browser import PHONE, new_page

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/cost/"
WIDGET = '[data-widget="attention_cost"]'


def wait_live_and(page, js_condition):
    wait_source(page, WIDGET, js_condition, timeout=40_000)


TITLE = "w.querySelector('.tw-plot').layout.annotations[0].text"


def test_every_control_moves_the_figure_and_the_values(page, server):
    open_widget(page, server + CHAPTER, WIDGET, katex=20_000)
    assert value_text(page, WIDGET, "device") == "cpu"
    slider = page.locator(f'{WIDGET} input[type=range][name="context_len"]')
    assert slider.count() == 1
    # The slider's top is the device's ceiling, declared in the spec.
    assert page.locator(f'{WIDGET} input[name="context_len-value"]').get_attribute("max") \
        == "1448"

    set_box(page, WIDGET, "context_len", 512)
    wait_live_and(page, f"{TITLE} === 'time at T = 512'")
    first_flops = value_text(page, WIDGET, "flops")

    set_box(page, WIDGET, "head_dim", 128)
    wait_live_and(page, f"""{TITLE} === 'time at T = 512' &&
        w.querySelector('.tw-value[data-name="flops"] dd').innerText.trim() !== '{first_flops}'""")

    set_box(page, WIDGET, "n_heads", 2)    # the ceiling at 2 heads of 128: 724
    wait_live_and(page, """w.querySelector('.tw-value[data-name="ceiling"] dd')
        .innerText.includes('724')""")

    set_box(page, WIDGET, "batch", 2)      # and at batch 2 as well: 512, the T already set
    wait_live_and(page, """w.querySelector('.tw-value[data-name="ceiling"] dd')
        .innerText.includes('512')""")

    page.locator(f'{WIDGET} select[name="dtype"]').select_option("bfloat16")
    wait_live_and(page, """w.querySelector('.tw-plot').data
        .some(t => (t.name || '').startsWith('explicit working set (10 B'))""")
    assert page.console_errors == []


def test_the_sliders_top_follows_the_heads_and_the_batch_together(page, server):
    open_widget(page, server + CHAPTER, WIDGET)
    box = page.locator(f'{WIDGET} input[name="context_len-value"]')
    set_box(page, WIDGET, "n_heads", 4)   # the ceiling falls to 724: the slider's top and T follow
    wait_live_and(page, """w.querySelector('.tw-value[data-name="ceiling"] dd')
        .innerText.includes('724') && w.querySelector('.tw-plot').layout.annotations[0].text
        === 'time at T = 724'""")
    assert box.get_attribute("max") == "724" and box.input_value() == "724"
    assert "set to 724" in page.locator(WIDGET).inner_text()
    # two controls moved: the page follows both (the spec's Limits), T comes down, no refusal
    set_box(page, WIDGET, "batch", 4)
    wait_live_and(page, """w.querySelector('.tw-value[data-name="ceiling"] dd')
        .innerText.includes('362') && w.querySelector('.tw-plot').layout.annotations[0].text
        === 'time at T = 362'""")
    assert box.get_attribute("max") == "362" and box.input_value() == "362"
    assert "set to 362" in page.locator(f"{WIDGET} .tw-notice").inner_text()
    assert page.locator(f"{WIDGET} .tw-error").is_hidden()
    assert page.console_errors == []


def test_with_the_api_blocked_the_baked_measurement_is_drawn(page, server):
    page.route("**/api/**", lambda route: route.abort())
    open_widget(page, server + CHAPTER, WIDGET)
    set_box(page, WIDGET, "context_len", 256)  # a baked point
    wait_source(page, WIDGET, f"{TITLE} === 'time at T = 256'", source="precomputed")
    assert value_text(page, WIDGET, "device") == "cpu"


def test_on_a_phone_the_panels_stack_and_fit(browser, server):
    with new_page(browser, **PHONE) as page:
        page.goto(server + CHAPTER + "?attention_cost.context_len=256")
        page.wait_for_function(f"""() => {{
            const w = document.querySelector('{WIDGET}');
            return w && w.querySelector('.tw-plot') && w.querySelector('.tw-plot').layout &&
                {TITLE} === 'time at T = 256';
        }}""", timeout=40_000)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        domain = page.evaluate(f"""() => document.querySelector('{WIDGET} .tw-plot')
            .layout.xaxis2.domain""")
        assert overflow <= 0 and domain == [0, 1]
