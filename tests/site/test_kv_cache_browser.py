"""The KV-cache chapter in Chromium: the baked run drawn (time per step, key rows), then re-measured
live as the controls move."""

from __future__ import annotations

import pytest
from widget_page import open_widget, refused_in_words, set_box, value_text, wait_source

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/kv-cache/"
WIDGET = '[data-widget="kv_decode"]'


def test_the_widget_draws_and_follows_steps_prompt_and_model(page, server):
    open_widget(page, server + CHAPTER, WIDGET)
    assert "cpu" in value_text(page, WIDGET, "measured_on")
    assert value_text(page, WIDGET, "key_rows_no_cache").split()[0] == "80,200"  # the default 400 steps
    assert value_text(page, WIDGET, "key_rows_cache").split()[0] == "400"

    set_box(page, WIDGET, "steps", 30)
    wait_source(page, WIDGET, "w.querySelector('.tw-plot').data[6].x[0] === 30", timeout=60_000)
    assert value_text(page, WIDGET, "key_rows_no_cache").split()[0] == "465"      # 30 * 31 / 2

    set_box(page, WIDGET, "prompt_len", 4)
    page.wait_for_function(f"""() => document.querySelector('{WIDGET}')
        .querySelector('.tw-plot').data[6].y[1] === 33""", timeout=60_000)  # 4 + 30 - 1

    page.locator(f'{WIDGET} select[name="model"]').select_option("book")
    wait_source(page, WIDGET, "w.querySelector('.tw-plot').data[6].y[0] === 4 * 30 + 435",
                timeout=60_000)
    assert page.locator(f'{WIDGET} input[type=range][name="steps"]').count() == 1
    assert page.console_errors == []


def test_steps_out_of_range_are_refused_in_words(page, server):
    open_widget(page, server + CHAPTER, WIDGET)
    refused_in_words(page, WIDGET, "steps", 5000, "from 1 to 400")
    page.locator(f'{WIDGET} select[name="model"]').select_option("book")
    refused_in_words(page, WIDGET, "steps", 97, "from 1 to 96")


def test_with_the_api_blocked_a_200_step_run_is_baked(page, server):
    page.route("**/api/**", lambda route: route.abort())
    open_widget(page, server + CHAPTER, WIDGET)
    set_box(page, WIDGET, "steps", 200)
    wait_source(page, WIDGET, "w.querySelector('.tw-plot').data[6].x[0] === 200",
                source="precomputed")
    assert value_text(page, WIDGET, "key_rows_no_cache").split()[0] == "20,100"
    assert value_text(page, WIDGET, "key_rows_cache").split()[0] == "200"


def test_exercise_2s_setting_is_baked_and_draws_its_single_points(page, server):
    page.route("**/api/**", lambda route: route.abort())
    open_widget(page, server + CHAPTER, WIDGET)
    set_box(page, WIDGET, "prompt_len", 32)
    set_box(page, WIDGET, "steps", 1)
    page.wait_for_function(f"""() => {{
        const w = document.querySelector('{WIDGET}');
        const d = w.querySelector('.tw-plot').data;
        return w.dataset.source === 'precomputed' && d[6].x[0] === 1 && d[6].y[1] === 32;
    }}""", timeout=20_000)
    modes = page.evaluate(f"""() => document.querySelector('{WIDGET} .tw-plot').data
        .slice(4, 6).map(t => t.mode)""")
    assert all("markers" in m for m in modes)
    assert value_text(page, WIDGET, "same_tokens") == "yes"
    assert value_text(page, WIDGET, "key_rows_no_cache").split()[0] == "32"
