"""A control never offers a stop the server refuses (issue 17, items 4, 6 and code review F11),
in Chromium: sliders step over the legal values only, a ceiling shared by several controls is
followed by the page, a preset's slider switches to custom, float sliders stop on round values,
and the browser's pre-check knows an int's step grid."""

from __future__ import annotations

import re

import pytest
from widget_page import move_slider, wait_live

from tests.support.browser import computes, idle, setting

pytestmark = pytest.mark.browser

MODEL, SERVING, COST, POSITIONS = ("/chapters/model/", "/chapters/serving/", "/chapters/cost/",
                                   "/chapters/positions/")
MP = '[data-widget="model_params"]'
KV = '[data-widget="kv_cache"]'
AC = '[data-widget="attention_cost"]'
PO = '[data-widget="positions_rope"]'


def open_widget(page, url, w):
    page.goto(url)
    page.wait_for_selector(f"{w} .tw-plot .main-svg", timeout=30_000)


def slider(page, w, name):
    return page.locator(f"{w} input[type=range][name={name}]")


def box(page, w, name):
    return page.locator(f'{w} input[name="{name}-value"]')


def type_into(page, w, name, value):
    b = box(page, w, name)
    b.fill(str(value))
    b.dispatch_event("change")


def answered(page, widget_name, action):
    """Do `action` and return the status of the widget's request it causes."""
    with page.expect_response(lambda r: computes(r.request, widget_name),
                              timeout=40_000) as info:
        action()
    return info.value.status


def notice(page, w):
    n = page.locator(f"{w} .tw-notice")
    return "" if n.is_hidden() else n.inner_text().strip()


def test_query_heads_drag_over_legal_stops_only(page, server):
    """Item 4 / B3: dragging 'query heads h' was refused 16 times out of 16. Now the slider
    steps over the head counts the width allows, and the server accepts every stop."""
    open_widget(page, server + MODEL, MP)
    s = slider(page, MP, "n_heads")
    # at width 4096: h in 1, 2, 4, ..., 128 (h divides d_model, d_model / h even)
    assert (s.get_attribute("min"), s.get_attribute("max")) == ("0", "7")
    assert s.input_value() == "5" and s.get_attribute("aria-valuetext") == "32"
    statuses, shown = [], []
    for index in (6, 7, 4, 2, 0, 3, 5):
        statuses.append(answered(page, "model_params", lambda: move_slider(page, MP, "n_heads", index)))
        wait_live(page, MP, settled=True, timeout=40_000)
        shown.append((box(page, MP, "n_heads").input_value(), s.get_attribute("aria-valuetext"),
                      box(page, MP, "n_kv").input_value()))
        if index == 2:  # 4 query heads: the 8 key/value heads moved to 4, in one line
            assert "'key/value heads' set to 4" in notice(page, MP)
            assert "\n" not in notice(page, MP)
    assert statuses == [200] * 7
    assert [v[0] for v in shown] == ["64", "128", "16", "4", "1", "8", "32"]
    assert all(v[0] == v[1] for v in shown)   # aria-valuetext names the value, not the index
    assert page.locator(f"{MP} .tw-error").is_hidden()
    # keyboard: the arrow keys step to the next legal count, End to the last
    s.focus()
    assert answered(page, "model_params", lambda: page.keyboard.press("ArrowRight")) == 200
    assert box(page, MP, "n_heads").input_value() == "64"
    assert answered(page, "model_params", lambda: page.keyboard.press("End")) == 200
    assert box(page, MP, "n_heads").input_value() == "128"
    # the number box still takes a typed legal value
    assert answered(page, "model_params", lambda: type_into(page, MP, "n_heads", 16)) == 200
    assert s.input_value() == "4"


def test_kv_heads_drag_over_divisors_in_the_serving_chapter(page, server):
    open_widget(page, server + SERVING, KV)
    s = slider(page, KV, "n_kv")
    assert s.get_attribute("max") == "5"  # 32 query heads: 1, 2, 4, 8, 16, 32
    statuses = [answered(page, "kv_cache", lambda i=i: move_slider(page, KV, "n_kv", i))
                for i in (0, 1, 2, 4, 5)]
    assert statuses == [200] * 5
    assert box(page, KV, "n_kv").input_value() == "32"


def test_attention_cost_follows_heads_batch_and_dtype_together(page, server):
    """Item 4 / W4: heads 20 at size 160, then batch 10, then bfloat16 were each refused; now T
    comes down to the combined ceiling with a one-line notice before the request leaves."""
    open_widget(page, server + COST, AC)
    posted = []
    page.on("request", lambda r: computes(r, "attention_cost") and posted.append(setting(r)))
    steps = [("head_dim", 160, 915), ("n_heads", 20, 204), ("batch", 10, 64)]
    for name, value, ceiling in steps:
        assert answered(page, "attention_cost", lambda: type_into(page, AC, name, value)) == 200
        wait_live(page, AC, settled=True, timeout=40_000)
        if ceiling:
            assert box(page, AC, "context_len").input_value() == str(ceiling)
            assert box(page, AC, "context_len").get_attribute("max") == str(ceiling)
            line = notice(page, AC)
            assert f"'context length T' set to {ceiling} at " in line and "\n" not in line
            page.wait_for_function("""(c) => document.querySelector(
                '[data-widget="attention_cost"] .tw-value[data-name="ceiling"] dd')
                .textContent.trim() === c + ' tokens'""", arg=f"{ceiling:,}", timeout=40_000)
    assert answered(page, "attention_cost", lambda: page.locator(
        f"{AC} select[name=dtype]").select_option("bfloat16")) == 200
    page.wait_for_function("""() => document.querySelector('[data-widget="attention_cost"] .tw-plot')
        .data.some(t => (t.name || '').startsWith('explicit working set (10 B'))""", timeout=40_000)
    assert box(page, AC, "context_len").input_value() == "64"
    assert page.locator(f"{AC} .tw-error").is_hidden()
    assert not page.evaluate(f"document.querySelector('{AC}').classList.contains('tw-stale')")
    # every request carried a T at or under its own ceiling: none was refused
    sent = [p["context_len"] for p in posted]
    assert [t for i, t in enumerate(sent) if i == 0 or t != sent[i - 1]] == [915, 204, 64]
    assert posted[-1] == {"context_len": 64, "head_dim": 160, "n_heads": 20, "batch": 10,
                          "dtype": "bfloat16"}
    # the page's top is the rule's: window.bookWidgets.effective on the page's own spec
    top = page.evaluate(f"""() => {{
        const cfg = JSON.parse(document.querySelector('{AC} template.tw-data').content
            .querySelector('script.tw-config').textContent);
        const p = cfg.spec.params.find(q => q.name === 'context_len');
        return window.bookWidgets.effective(p, {{n_heads: 32, batch: 16, head_dim: 256,
                                                 dtype: 'float16'}}, {{}}).max; }}""")
    assert top == 32  # isqrt(2^27 / (16 * 32 * 256))


@pytest.mark.parametrize("w, url, name, preset", [
    (MP, MODEL, "model_params", "llama-3-8b"), (KV, SERVING, "kv_cache", "llama-2-7b")])
def test_a_preset_says_one_line_and_a_slider_switches_to_custom(page, server, w, url, name,
                                                                preset):
    """W6 and H10: a preset's sliders looked enabled but were locked, and choosing it printed
    every moved value. Now: one line, and moving a slider switches to custom from there."""
    open_widget(page, server + url, w)
    assert answered(page, name, lambda: page.locator(f"{w} select[name=preset]")
                    .select_option(preset)) == 200
    wait_live(page, w, settled=True, timeout=40_000)
    line = notice(page, w)
    assert f"Showing {preset}'s configuration." in line and "set to" not in line
    layers = slider(page, w, "n_layers")
    assert not layers.is_disabled() and layers.get_attribute("max") == "128"
    assert box(page, w, "n_layers").input_value() == "32"
    assert answered(page, name, lambda: move_slider(page, w, "n_layers", 40)) == 200
    wait_live(page, w, settled=True, timeout=40_000)
    assert page.locator(f"{w} select[name=preset]").input_value() == "custom"
    assert notice(page, w) == f"Switched to custom, starting from {preset}'s configuration."
    assert box(page, w, "n_layers").input_value() == "40"
    assert box(page, w, "n_heads").input_value() == "32"     # the preset's other values stay
    assert page.locator(f"{w} .tw-error").is_hidden()
    # typing under a preset does the same, no red error
    page.locator(f"{w} select[name=preset]").select_option(preset)
    wait_live(page, w, settled=True, timeout=40_000)
    assert answered(page, name, lambda: type_into(page, w, "n_layers", 20)) == 200
    wait_live(page, w, settled=True, timeout=40_000)
    assert page.locator(f"{w} select[name=preset]").input_value() == "custom"
    assert page.locator(f"{w} .tw-error").is_hidden()


def test_theta_is_round_in_the_box_the_request_and_the_url(page, server):
    """Item 6 / W2: θ was sent as 20000.000000000706; its stops were 78.125 × 2^k."""
    open_widget(page, server + POSITIONS, PO)
    s = slider(page, PO, "rope_theta")
    sent = []
    page.on("request", lambda r: computes(r, "positions_rope")
            and sent.append(setting(r)["rope_theta"]))
    seen = []
    for index in (8, 9, 12, 13, 16):
        assert answered(page, "positions_rope", lambda i=index: move_slider(page, PO, "rope_theta", i)) == 200
        wait_live(page, PO, settled=True, timeout=40_000)
        seen.append(float(box(page, PO, "rope_theta").input_value()))
    assert seen == [20000, 50000, 500000, 1_000_000, 10_000_000]
    assert sent == seen
    # (its keys are `positions.*`: the RoPE widget's block takes the key the chapter's one widget
    # had before the split, so links shared then still open it.)
    # the runtime writes the URL when it handles the answer, which may be just after the
    # response event `answered` waits for (seen on a loaded machine)
    page.wait_for_function("() => /positions\\.rope_theta=10000000(&|$)/.test(location.search)",
                           timeout=10_000)
    assert re.search(r"positions\.rope_theta=10000000(&|$)", page.evaluate("location.search"))
    assert s.get_attribute("aria-valuetext") == "10,000,000"
    assert s.get_attribute("max") == "17"  # 78.125, 100, 200, 500, ..., 10,000,000, 10,240,000


def test_the_int_step_grid_is_checked_before_sending(page, server):
    """Code review F11: a typed width off the 64 grid went to the server and came back a 400."""
    open_widget(page, server + MODEL, MP)
    posts = []
    page.on("request", lambda r: computes(r) and posts.append(r.url))
    type_into(page, MP, "d_model", 4100)
    err = page.locator(f"{MP} .tw-error")
    err.wait_for(state="visible")
    assert "'width d_model' must be a multiple of 64, got 4100" in err.inner_text()
    assert box(page, MP, "d_model").input_value() == "4096"
    idle(page, MP)  # nothing waits to be sent
    assert posts == []
