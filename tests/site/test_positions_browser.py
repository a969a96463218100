"""'Where order comes from' in Chromium: its three widgets draw, recompute live and fit a phone,
and a link shared before the one widget was split in three still opens at its setting."""

from __future__ import annotations

import pytest
from widget_page import move_slider, open_widget, wait_live, wait_source

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/positions/"
ORDER = '[data-widget="positions_order"]'
TABLE = '[data-widget="positions_sinusoids"]'
ROPE = '[data-widget="positions_rope"]'


def test_theta_and_head_width_recompute_live(page, server):
    open_widget(page, server + CHAPTER, ROPE, timeout=15_000)
    before = page.evaluate(f"document.querySelector('{ROPE} .tw-plot').data[0].y.slice(0, 40)")
    move_slider(page, ROPE, "rope_theta", 13)  # the 14th round stop (1-2-5 per decade): 1,000,000
    wait_live(page, ROPE, timeout=15_000)
    page.wait_for_function(f"""(before) => {{
        const y = document.querySelector('{ROPE} .tw-plot').data[0].y.slice(0, 40);
        return y.some((v, i) => v !== before[i]); }}""", arg=before, timeout=15_000)
    top = page.evaluate(f"document.querySelector('{ROPE} input[type=range][name=d_head]').max")
    move_slider(page, ROPE, "d_head", top)  # 512: 256 pairs, so the values panel says so
    page.wait_for_function(f"""() => document.querySelector('{ROPE} input[name="d_head-value"]')
        .value === '512'""", timeout=15_000)
    wait_live(page, ROPE, settled=True, timeout=15_000)
    half = page.locator(f'{ROPE} .tw-value[data-name="half_distance_text"] dd').inner_text()
    assert half.replace(",", "").isdigit() or half.startswith("beyond")
    assert page.console_errors == []


def test_the_table_has_its_own_width(page, server):
    """The model width moves the table only: the RoPE widget below keeps its head width."""
    open_widget(page, server + CHAPTER, TABLE, timeout=15_000)
    top = page.evaluate(f"document.querySelector('{TABLE} input[type=range][name=d_model]').max")
    move_slider(page, TABLE, "d_model", top)  # 512 columns, drawn as 64 (sampled)
    page.wait_for_function(f"""() => document.querySelector('{TABLE} .tw-plot').data[0]
        .z[0].length === 64""", timeout=15_000)
    assert page.locator(f'{ROPE} input[name="d_head-value"]').input_value() == "8"
    assert page.console_errors == []


def test_strength_zero_closes_the_gap(page, server):
    open_widget(page, server + CHAPTER, ORDER, timeout=15_000)
    move_slider(page, ORDER, "strength", 0)
    page.wait_for_function(f"""() => {{
        const dd = n => document.querySelector(
            `{ORDER} .tw-value[data-name="${{n}}"] dd`);
        const a = dd('order_gap_with'), b = dd('order_gap_without');
        // the same computation at strength 0 reads the same (it read 0.000 beside 5.6e-17);
        // whether it is a rounding residue or exactly 0 depends on the CPU
        return a && b && a.textContent.trim() !== ''
            && a.textContent.trim() === b.textContent.trim(); }}""", timeout=15_000)


def test_offline_the_baked_theta_is_drawn(page, server):
    page.route("**/api/**", lambda route: route.abort())
    open_widget(page, server + CHAPTER, ROPE, timeout=15_000)
    move_slider(page, ROPE, "rope_theta", 12)  # 500,000, a baked value
    wait_source(page, ROPE, source="precomputed", timeout=15_000)


def test_a_link_to_the_old_single_widget_opens_the_rope_widget_at_its_setting(page, server):
    """Links copied before the split carry `positions.<param>` and `#widget-positions`: the RoPE
    widget's block keeps that key, so θ and the positions come back; the old width, now two
    controls, is one the link can no longer set and is left at the opening value."""
    page.goto(server + CHAPTER + "?positions.rope_theta=500000&positions.m=10&positions.n=8"
              "&positions.d_model=64#widget-positions")
    page.wait_for_selector(f"{ROPE} .tw-plot .main-svg", timeout=15_000)
    assert page.evaluate("document.querySelector('#widget-positions').dataset.widget") == "positions_rope"
    page.wait_for_function(f"""() => document.querySelector('{ROPE} input[name="rope_theta-value"]')
        .value.replace(/,/g, '') === '500000'""", timeout=15_000)
    assert page.locator(f'{ROPE} input[name="m-value"]').input_value() == "10"
    assert page.locator(f'{ROPE} input[name="d_head-value"]').input_value() == "8"
    assert page.console_errors == []


def test_m_and_n_sliders_end_at_the_sequence_length_and_step_by_one(page, server):
    """Issue 30: the 'sequence length' control did not bound m and n, and their sliders ran to
    131,072 in steps no drag could make one at a time. Now they end at the length minus 1 and
    follow it, a value past the new end is moved to it, and each step is one position."""
    open_widget(page, server + CHAPTER, ROPE, timeout=15_000)
    ends = f"""(top) => ['m', 'n'].every((p) => {{
        const s = document.querySelector(`{ROPE} input[type=range][name=${{p}}]`);
        return s.max === String(top) && s.step === '1'; }})"""
    page.wait_for_function(ends, arg=63, timeout=15_000)           # the default length, 64
    move_slider(page, ROPE, "m", 63)
    page.wait_for_function(f"""() => document.querySelector('{ROPE} input[name="m-value"]')
        .value === '63'""", timeout=15_000)
    bottom = page.evaluate(f"document.querySelector('{ROPE} input[type=range][name=max_position]').min")
    move_slider(page, ROPE, "max_position", bottom)                  # the shortest sequence, 8
    page.wait_for_function(ends, arg=7, timeout=15_000)
    page.wait_for_function(f"""() => document.querySelector('{ROPE} input[name="m-value"]')
        .value === '7'""", timeout=15_000)                            # moved to the new end
    wait_live(page, ROPE, settled=True, timeout=15_000)
    # the URL keeps the clamped setting (the page never holds one the API would refuse)
    page.wait_for_function("() => /positions\\.m=7(&|$)/.test(location.search)", timeout=15_000)
    box = page.locator(f'{ROPE} input[name="max_position-value"]')
    box.fill("4096")
    box.dispatch_event("change")
    page.wait_for_function(ends, arg=4095, timeout=15_000)
    assert page.console_errors == []


def test_fits_a_phone(phone, server):
    page = phone
    open_widget(page, server + CHAPTER, ORDER, timeout=15_000)
    for w in (TABLE, ROPE):
        page.wait_for_selector(f"{w} .tw-plot .main-svg", timeout=15_000)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    height = page.evaluate(f"document.querySelector('{ORDER} .tw-plot').getBoundingClientRect().height")
    assert overflow <= 0
    assert height >= 560  # the dog-bites-man widget's two panels stack on a phone
