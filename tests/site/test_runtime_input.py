"""The runtime with real readers' input (issue 8: items 2, 4, 6, 7, 11), in Chromium."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import PHONE, computes, idle, new_page

pytestmark = pytest.mark.browser

SCALING = "/chapters/scaling/"
MAPS = "/chapters/attention-maps/"
W = '[data-widget="attention_scaling"]'
A = '[data-widget="attention_map"]'


def marker_x(page):
    return page.evaluate(f"""() => document.querySelector('{W} .tw-plot').data
        .find(t => t.mode === 'markers' && t.showlegend === false).x[0]""")


def open_scaling(page, server, query=""):
    page.goto(server + SCALING + query)
    page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
    return page.locator(W)


def type_into(page, selector, text):
    box = page.locator(selector)
    box.fill(text)
    box.dispatch_event("change")
    return box


@pytest.mark.parametrize("typed, words", [
    ("1.5", "'head dim d_k' must be an integer, got 1.5"),
    ("5000", "'head dim d_k' must be from 1 to 1024, got 5000"),
    ("-3", "'head dim d_k' must be from 1 to 1024, got -3"),
    ("0", "'head dim d_k' must be from 1 to 1024, got 0"),
])
def test_an_invalid_value_is_refused_and_slider_box_and_figure_agree(page, server, typed, words):
    widget = open_scaling(page, server)
    type_into(page, f'{W} input[name="d_k-value"]', "256")
    page.wait_for_function(f"document.querySelector('{W}').dataset.source === 'live'")
    page.wait_for_function(f"""() => document.querySelector('{W} .tw-plot').data
        .find(t => t.showlegend === false).x[0] === 256""")
    url_before = page.evaluate("location.search")
    posts = []
    page.on("request", lambda r: computes(r) and posts.append(r.url))
    box = type_into(page, f'{W} input[name="d_k-value"]', typed)
    error = widget.locator(".tw-error")
    error.wait_for(state="visible")
    assert words in error.inner_text()
    assert "Kept head dim d_k = 256" in error.inner_text()      # which setting is shown, in words
    assert box.input_value() == "256"                           # the box went back
    assert page.locator(f"{W} input[type=range][name=d_k]").input_value() == "8"  # 2**8
    assert marker_x(page) == 256                                # the figure shows the same
    assert page.evaluate("location.search") == url_before       # the URL never got the bad value
    idle(page, W)                                               # nothing waits to be sent
    assert posts == []                                          # refused before it was sent


def test_a_400_from_the_server_puts_the_controls_back_to_the_figures_setting(page, server):
    widget = open_scaling(page, server)
    page.route("**/api/widgets/attention_scaling/result*", lambda route: route.fulfill(
        status=400, content_type="application/json",
        body=json.dumps({"error": "'positions' must be from 2 to 512, got 600", "param": "n_positions"})))
    page.evaluate(f"""() => {{ const s = document.querySelector('{W} input[type=range][name=n_positions]');
        s.value = 5; s.dispatchEvent(new Event('input', {{bubbles: true}})); }}""")
    widget.locator(".tw-error").wait_for(state="visible")
    assert "Kept head dim d_k = 64, positions = 8" in widget.locator(".tw-error").inner_text()
    # the controls went back to what the figure shows (8 positions, slider position 3), so the
    # figure is not stale: controls and figure agree
    assert "tw-stale" not in widget.get_attribute("class")
    assert page.locator(f'{W} input[name="n_positions-value"]').input_value() == "8"
    assert "n_positions" not in page.evaluate("location.search")


def test_an_invalid_value_in_a_shared_link_is_ignored_with_a_notice(page, server):
    widget = open_scaling(page, server, "?attention_scaling.d_k=abc&attention_scaling.n_positions=32")
    notice = widget.locator(".tw-notice")
    assert notice.is_visible()
    assert "'head dim d_k' must be an integer, got \"abc\"" in notice.inner_text()
    assert "None" not in notice.inner_text()
    assert widget.locator(".tw-error").is_hidden()
    page.wait_for_function(f"document.querySelector('{W}').dataset.source === 'live'")
    assert marker_x(page) == 64  # the default, not a broken page
    assert page.locator(f'{W} input[name="n_positions-value"]').input_value() == "32"
    assert "d_k=abc" not in page.evaluate("location.search")


def test_two_maps_on_one_page_own_their_url_keys(page, server):
    page.goto(server + MAPS + "?attention_map.model=minilm&attention_map.2.model=book")
    page.wait_for_selector(f"{A} .tw-plot .main-svg", timeout=30_000)
    models = page.evaluate(f"[...document.querySelectorAll('{A} select[name=model]')].map(s => s.value)")
    assert models == ["minilm", "book"]  # each instance read its own key
    keys = page.evaluate(f"[...document.querySelectorAll('{A}')].map(w => w.dataset.key)")
    assert keys == ["attention_map", "attention_map.2"]


def test_layer_and_head_follow_the_model_and_the_average_box(page, server):
    page.goto(server + MAPS)
    page.wait_for_selector(f"{A} .tw-plot .main-svg", timeout=30_000)
    first = page.locator(A).nth(0)
    layer = first.locator("input[type=range][name=layer]")
    head = first.locator("input[type=range][name=head]")
    assert layer.is_disabled() and head.is_disabled()      # average is ticked: they do nothing
    first.locator('input[name="average"]').uncheck()
    assert not layer.is_disabled()
    assert (layer.get_attribute("max"), head.get_attribute("max")) == ("3", "3")  # book: 4 x 4
    first.locator("select[name=model]").select_option("minilm")
    assert (layer.get_attribute("max"), head.get_attribute("max")) == ("5", "11")  # MiniLM: 6 x 12
    first.locator('input[name="head-value"]').fill("11")
    first.locator('input[name="head-value"]').dispatch_event("change")
    page.wait_for_function(f"""() => document.querySelector('{A} .tw-plot').layout.title.text
        .endsWith('layer 0, head 11')""", timeout=60_000)
    # back to the book's model: head 11 does not exist there; the control moves and says so
    first.locator("select[name=model]").select_option("book")
    assert first.locator('input[name="head-value"]').input_value() == "3"
    assert "'head' set to 3" in first.locator(".tw-notice").inner_text()
    page.wait_for_function(f"""() => document.querySelector('{A} .tw-plot').layout.title.text
        .endsWith('layer 0, head 3')""", timeout=60_000)
    assert first.locator(".tw-error").is_hidden()


def test_text_counts_characters_and_tokens_as_the_reader_types(page, server):
    page.goto(server + MAPS)
    page.wait_for_selector(f"{A} .tw-plot .main-svg", timeout=30_000)
    first = page.locator(A).nth(0)
    count = first.locator(".tw-count").first
    assert "59 / 500 characters" in count.inner_text() and "tokens" in count.inner_text()
    first.locator("textarea[name=text]").fill("The cat sat")
    assert "11 / 500 characters" in count.inner_text()
    page.wait_for_function(f"""() => document.querySelector('{A} .tw-count').innerText
        .includes('tokens')""", timeout=60_000)
    n = first.locator('.tw-value[data-name="n_tokens"] dd').inner_text()
    assert f"· {n} tokens" in count.inner_text()
    first.locator("textarea[name=text]").fill("x" * 600)  # no silent cut at 500
    assert "600 / 500 characters" in count.inner_text()
    assert "'sentence' is 600 characters long; the limit is 500" in first.locator(".tw-error").inner_text()


def test_offline_a_typed_sentence_with_no_baked_map_says_so(page, server):
    page.route("**/api/**", lambda route: route.abort())
    page.goto(server + MAPS)
    page.wait_for_selector(f"{A} .tw-plot .main-svg", timeout=30_000)
    first = page.locator(A).nth(0)
    first.locator("textarea[name=text]").fill("A sentence nobody baked")
    page.wait_for_function(f"""() => document.querySelector('{A} .tw-status').innerText
        .includes('no precomputed result')""", timeout=20_000)
    status = first.locator(".tw-status").inner_text()
    assert "sentence = \u201cA sentence nobody baked\u201d" in status
    assert first.get_attribute("data-source") == "precomputed"
    assert page.evaluate(f"document.querySelectorAll('{A}')[0].querySelector('.tw-plot .main-svg')") \
        is None  # no stand-in map of the built-in sentence
    # the built-in sentence's other baked map is still offered for a baked sentence
    first.locator("textarea[name=text]").fill(
        "The animal didn't cross the street because it was too wide")
    page.wait_for_function(f"""() => document.querySelector('{A} .tw-status').innerText
        .includes('nearest result baked')""", timeout=20_000)


def test_a_cached_answer_is_called_cached_with_no_fresh_compute_time(page, server):
    """The server's real answer, as its cache would return it (which worker holds a cached
    copy is up to gunicorn, so the flag is set here; tests/app checks the server's side)."""
    def as_cached(route):
        body = route.fetch().json()
        body.update(cached=True, elapsed_ms=0.02)
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    widget = open_scaling(page, server)
    page.route("**/api/widgets/attention_scaling/result*", as_cached)
    page.evaluate(f"""() => {{ const s = document.querySelector('{W} input[type=range][name=d_k]');
        s.value = 9; s.dispatchEvent(new Event('input', {{bubbles: true}})); }}""")
    page.wait_for_function(f"document.querySelector('{W}').dataset.source === 'live'")
    status = widget.locator(".tw-status").inner_text()
    assert "server's cache" in status and "nothing recomputed" in status
    assert "ms;" not in status.split("round trip")[0]  # no compute time claimed for it


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_on_a_phone_refusals_dependent_controls_and_plots_fit(browser, server, scheme):
    with new_page(browser, **PHONE, color_scheme=scheme) as page:
        page.goto(server + SCALING)
        page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
        type_into(page, f'{W} input[name="d_k-value"]', "5000")
        error = page.locator(f"{W} .tw-error")
        error.wait_for(state="visible")
        assert "'head dim d_k' must be from 1 to 1024" in error.inner_text()
        assert page.locator(f'{W} input[name="d_k-value"]').input_value() == "64"
        assert error.bounding_box()["x"] + error.bounding_box()["width"] <= 390
        assert page.evaluate(f"document.querySelector('{W} .tw-plot').layout.paper_bgcolor") == "rgba(0,0,0,0)"
        page.goto(server + MAPS)
        page.wait_for_selector(f"{A} .tw-plot .main-svg", timeout=30_000)
        first = page.locator(A).nth(0)
        first.locator('input[name="average"]').uncheck()
        assert first.locator("input[type=range][name=layer]").get_attribute("max") == "3"
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


def test_a_setting_seen_before_is_answered_by_the_browsers_own_cache(page, server):
    """The runtime asks with a GET the server lets browsers keep (Cache-Control, ETag): going
    back to a setting already drawn sends nothing to the server, and the status says where the
    answer came from instead of claiming a computation."""
    widget = open_scaling(page, server)
    # The browser's own network log (DevTools protocol), not the runtime's reading of it.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    asked, from_cache = {}, set()
    cdp.on("Network.requestWillBeSent", lambda e: "/result?" in e["request"]["url"]
           and asked.__setitem__(e["requestId"], e["request"]["url"]))
    cdp.on("Network.requestServedFromCache", lambda e: from_cache.add(e["requestId"]))
    cdp.on("Network.responseReceived", lambda e: e["response"].get("fromDiskCache")
           and from_cache.add(e["requestId"]))

    def move(position):
        before = page.evaluate("location.search")
        page.evaluate(f"""() => {{ const s = document.querySelector('{W} input[type=range][name=d_k]');
            s.value = {position}; s.dispatchEvent(new Event('input', {{bubbles: true}})); }}""")
        page.wait_for_function(f"""() => document.querySelector('{W}').dataset.source === 'live'
            && location.search !== {before!r}""", timeout=30_000)
        return widget.locator(".tw-status").inner_text()

    assert "browser's cache" not in move(9)
    first = page.evaluate("location.search")
    assert "browser's cache" not in move(7)
    status = move(9)
    assert page.evaluate("location.search") == first
    assert "your browser's cache" in status and "nothing recomputed" in status, status
    assert "ms;" not in status.split("round trip")[0]  # no compute time claimed for it
    d_k = first.split("d_k=")[1].split("&")[0]
    same = [i for i, u in asked.items() if f"d_k={d_k}&" in u or u.endswith(f"d_k={d_k}")]
    assert len(same) == 2 and same[0] not in from_cache and same[1] in from_cache, (
        asked, from_cache)
