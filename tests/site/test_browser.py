"""The book in a real browser (headless system Chromium) against a real gunicorn."""

from __future__ import annotations

import pytest
from widget_page import move_slider, value_text

from tests.support.browser import computes, idle

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/scaling/"
WIDGET = '[data-widget="attention_scaling"]'


def marker_x(page):
    """x of the 'current d_k' marker trace in the drawn figure: what the plot shows now."""
    return page.evaluate(f"""() => document.querySelector('{WIDGET} .tw-plot').data
        .find(t => t.mode === 'markers' && t.showlegend === false).x[0]""")


def open_chapter(page, server):
    page.goto(server + CHAPTER)
    page.wait_for_selector(".katex", timeout=15_000)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=15_000)
    return page.locator(WIDGET)


def test_slider_recomputes_live(page, server):
    widget = open_chapter(page, server)
    assert widget.get_attribute("data-source") == "precomputed"
    assert "when the book was built" in widget.locator(".tw-status").inner_text()
    before = float(value_text(page, WIDGET, "var_unscaled"))
    assert marker_x(page) == 64

    page.evaluate(f"""() => document.querySelector('{WIDGET} .tw-plot')
        .on('plotly_afterplot', () => {{ window.__plotted = performance.now(); }})""")
    move_slider(page, WIDGET, "d_k", 8)  # log2 slider: 2**8 = 256
    page.wait_for_function(
        f"document.querySelector('{WIDGET}').dataset.source === 'live'", timeout=10_000)
    status = widget.locator(".tw-status").inner_text()
    assert "Computed live on cpu" in status or "Computed live on cuda" in status
    assert marker_x(page) == 256
    after = float(value_text(page, WIDGET, "var_unscaled"))
    assert after != before and 200 < after < 320
    assert page.locator(f'{WIDGET} input[name="d_k-value"]').input_value() == "256"
    latency = page.evaluate("window.__plotted - window.__moved")
    print(f"\nslider-to-plot latency: {latency:.0f} ms")
    assert page.console_errors == []


def test_number_box_reaches_values_the_slider_skips_and_errors_show_in_widget(page, server):
    widget = open_chapter(page, server)
    box = widget.locator('input[name="d_k-value"]')
    box.fill("100")
    box.dispatch_event("change")
    page.wait_for_function(f"document.querySelector('{WIDGET}').dataset.source === 'live'")
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-plot').data
        .find(t => t.showlegend === false).x[0] === 100""")
    box.fill("5000")
    box.dispatch_event("change")
    error = widget.locator(".tw-error")
    error.wait_for(state="visible", timeout=10_000)
    # refused in the browser, in the words of the control's label; the box keeps what is drawn
    assert "'head dim d_k' must be from 1 to 1024, got 5000" in error.inner_text()
    assert box.input_value() == "100"
    assert page.console_errors == [] or all("400" in e for e in page.console_errors)


def test_with_the_api_blocked_the_baked_results_are_drawn(page, server):
    page.route("**/api/**", lambda route: route.abort())
    widget = open_chapter(page, server)
    move_slider(page, WIDGET, "d_k", 10)  # 1024, one of the baked settings
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-status')
        .innerText.includes('nearest result baked')""", timeout=10_000)
    assert widget.get_attribute("data-source") == "precomputed"
    assert marker_x(page) == 1024
    assert "d_k = 1024" in widget.locator(".tw-status").inner_text()
    assert float(value_text(page, WIDGET, "var_unscaled")) > 700
    # Between baked settings the nearest one is drawn, and the label says which.
    move_slider(page, WIDGET, "d_k", 7.4)
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-status')
        .innerText.includes('d_k = 128')""", timeout=10_000)
    unexpected = [e for e in page.console_errors if "ERR_FAILED" not in e]
    assert unexpected == []
    # a fallback is a warning; the same baked result on a healthy server only a note
    assert "tw-precomputed" in widget.get_attribute("class")


STATUS_COLOR = "el => getComputedStyle(el.querySelector('.tw-status')).color"
WARNING = "el => getComputedStyle(el).getPropertyValue('--tw-precomputed').trim()"


def test_a_baked_result_on_a_healthy_server_is_a_neutral_note(page, server):
    """Issue 33, item 4: 'Precomputed' is a neutral note on a healthy server, a warning only
    when it is a fallback."""
    widget = open_chapter(page, server)
    assert widget.get_attribute("data-source") == "precomputed"
    classes = widget.get_attribute("class").split()
    assert "tw-built" in classes and "tw-precomputed" not in classes
    before = widget.evaluate("el => getComputedStyle(el.querySelector('.tw-status'), "
                             "'::before').content")
    assert "Precomputed" in before
    shown = widget.evaluate(STATUS_COLOR)
    warning = widget.evaluate(WARNING)
    assert shown != page.evaluate("c => { const d = document.createElement('div'); "
                                  "d.style.color = c; document.body.append(d); "
                                  "const x = getComputedStyle(d).color; d.remove(); return x; }",
                                  warning)


# Every Content-Security-Policy violation the page reports, kept across instant navigation.
VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e =>
  window.__csp.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' ' +
                    (e.sourceFile || '') + ':' + (e.lineNumber || '')));
"""


def _kept(page) -> bool:
    """The document the test opened is still the one shown: no click reloaded the page."""
    return page.evaluate("() => window.__opened === 'once'")


def test_instant_navigation_mounts_widgets_and_keeps_notebook_figures(strict_page, server):
    """Clicks are followed by Material's instant navigation (the sitemap lists the book's pages
    at the reader's own address), under the first page's policy: the window set before the
    first click is the same after each, the new pages' widget and notebook figures draw (once),
    and nothing is refused. Before the sitemap named the pages, every click was a full load;
    with it, the pages' JSON blocks ran as code and the widget never drew."""
    page = strict_page
    page.add_init_script(VIOLATIONS)
    page.goto(server + "/")
    page.wait_for_selector("article a[href*='chapters/scaling']")
    page.evaluate("() => { window.__opened = 'once'; }")
    page.click("article a[href*='chapters/scaling']")
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=15_000)
    page.wait_for_selector(".katex")
    assert _kept(page) and page.url.endswith(CHAPTER)
    assert page.evaluate("() => document.querySelectorAll('[data-widget]').length") == 1
    assert page.evaluate(f"() => document.querySelectorAll('{WIDGET} .tw-plot').length") == 1
    page.click("article a[href*='01-variance']")
    page.wait_for_selector(".jp-RenderedMarkdown .katex", timeout=15_000)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=15_000)
    assert _kept(page) and "/exercises/01-variance/" in page.url
    assert page.evaluate("() => document.querySelectorAll('.js-plotly-plot').length") == 1
    page.go_back()
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=15_000)
    assert _kept(page)
    assert page.evaluate(f"() => document.querySelectorAll('{WIDGET} .tw-controls').length") == 1
    move_slider(page, WIDGET, "n_positions", 5)
    page.wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.source === 'live'")
    # plotly's modebar styles survive the head swap of instant navigation
    display = page.evaluate(f"""() => getComputedStyle(
        document.querySelector('{WIDGET} .modebar-container') || document.body).position""")
    assert display == "absolute"
    assert _kept(page)
    assert page.evaluate("() => window.__csp") == []
    assert page.console_errors == []


def test_phone_width_has_no_horizontal_scroll(phone, server):
    page = phone
    page.goto(server + CHAPTER)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    widget_width = page.evaluate(f"document.querySelector('{WIDGET}').getBoundingClientRect().width")
    assert overflow <= 0 and widget_width <= 390


def test_settings_are_shared_through_the_url(page, server):
    page.goto(server + CHAPTER + "?attention_scaling.d_k=512&attention_scaling.n_positions=32")
    page.wait_for_function(f"document.querySelector('{WIDGET}')?.dataset.source === 'live'",
                           timeout=15_000)
    assert marker_x(page) == 512
    assert page.locator(f'{WIDGET} input[name="n_positions-value"]').input_value() == "32"
    move_slider(page, WIDGET, "d_k", 3)
    page.wait_for_function("location.search.includes('attention_scaling.d_k=8')")
    assert "n_positions=32" in page.evaluate("location.search")
    # A bad value in a link is ignored with a notice in the widget, not a broken page.
    page.goto(server + CHAPTER + "?attention_scaling.d_k=0")
    page.locator(f"{WIDGET} .tw-notice").wait_for(state="visible", timeout=15_000)
    assert "'head dim d_k' must be from 1 to 1024, got 0" in page.locator(
        f"{WIDGET} .tw-notice").inner_text()
    assert marker_x(page) == 64


def test_a_fast_drag_is_coalesced_and_ends_on_the_last_value(page, server):
    open_chapter(page, server)
    posts = []
    page.on("request", lambda r: computes(r) and posts.append(r.url))
    page.evaluate("""(w) => {
        const s = document.querySelector(`${w} input[type=range][name=d_k]`);
        for (let pos = 0; pos <= 10; pos++) {
            s.value = pos; s.dispatchEvent(new Event('input', {bubbles: true}));
        }
    }""", WIDGET)
    page.wait_for_function(f"""() => document.querySelector('{WIDGET}').dataset.source === 'live'
        && document.querySelector('{WIDGET} .tw-plot').data
             .find(t => t.showlegend === false).x[0] === 1024""", timeout=10_000)
    idle(page, WIDGET)  # nothing left to send: a third request would have gone already
    # the first step at once; the ten that came while it was in flight are one request, the last
    assert len(posts) == 2, posts
    assert marker_x(page) == 1024


# Every fetch the page makes to the widget API, held back `delay` ms so a drag always outruns
# the answers: for each, when it left, what it carried, what the slider showed at that moment,
# and how many were in flight.
SLOW_API = """([w, delay]) => {
    const log = window.__api = {calls: [], answered: [], inflight: 0, most: 0};
    const real = window.fetch;
    window.fetch = function (url, opts) {
        if (!String(url).includes('/result?')) return real.apply(this, arguments);
        const root = document.querySelector(w);
        // the setting the request carries, from its query (numbers as numbers)
        const body = Object.fromEntries([...new URL(String(url), location.href).searchParams]
            .map(([k, v]) => [k, v !== '' && !isNaN(+v) ? +v : v]));
        log.calls.push({at: performance.now(), body: body,
                        slider: +root.querySelector('input[name=d_k-value]').value});
        log.most = Math.max(log.most, ++log.inflight);
        return real.apply(this, arguments).then(r => new Promise(ok => setTimeout(() => {
            log.inflight--; log.answered.push(performance.now()); ok(r);
        }, delay)));
    };
}"""

DRAG = """async ([w, stops]) => {
    const s = document.querySelector(`${w} input[type=range][name=d_k]`);
    const box = document.querySelector(`${w} input[name=d_k-value]`);
    const reached = {};  // d_k -> when the drag first showed it
    for (const pos of stops) {
        s.value = pos; s.dispatchEvent(new Event('input', {bubbles: true}));
        if (!(box.value in reached)) reached[box.value] = performance.now();
        await new Promise(r => setTimeout(r, 16));
    }
    return reached;
}"""


def test_a_slow_drag_keeps_one_request_in_flight_and_sends_only_the_newest_value(page, server):
    """A 60 Hz drag against answers that take 120 ms: never two requests at once, every request
    carries the slider's value at the moment it left (no stale one), the values sent only move
    the way the drag moves, and the last one sent, and drawn, is where the drag stopped."""
    open_chapter(page, server)
    page.evaluate(SLOW_API, [WIDGET, 120])
    stops = [i / 10 for i in range(0, 101)]            # log2 slider: d_k from 1 to 1024
    reached = page.evaluate(DRAG, [WIDGET, stops])
    page.wait_for_function(f"""() => window.__api.inflight === 0 &&
        document.querySelector('{WIDGET} .tw-plot').data
          .find(t => t.showlegend === false).x[0] === 1024""", timeout=15_000)
    idle(page, WIDGET)
    api = page.evaluate("window.__api")
    calls = api["calls"]
    assert api["most"] == 1
    assert all(c["body"]["d_k"] == c["slider"] for c in calls), calls   # no stale value
    sent = [c["body"]["d_k"] for c in calls]
    assert sent == sorted(set(sent)), sent                               # never back, never twice
    assert sent[-1] == 1024 and marker_x(page) == 1024
    assert 2 <= len(calls) < len(stops) / 4                               # coalesced, not dropped
    # each next value left as soon as both it and the answer before it were there: no fixed wait
    gaps = [c["at"] - max(a, reached[str(c["body"]["d_k"])])
            for c, a in zip(calls[1:], api["answered"])]
    assert max(gaps) < 60, gaps
    assert page.locator(f'{WIDGET} input[name="d_k-value"]').input_value() == "1024"
    assert page.console_errors == []


def test_typed_values_and_the_first_step_go_out_at_once(page, server):
    """A value typed in the number box, and the first slider step, leave in the same event (no
    debounce); a value typed while an answer is awaited goes the moment that answer is in, and
    the figure ends on it."""
    open_chapter(page, server)
    page.evaluate(SLOW_API, [WIDGET, 150])
    sent_now = page.evaluate("""(w) => {
        const box = document.querySelector(`${w} input[name=d_k-value]`);
        box.value = 100; box.dispatchEvent(new Event('change', {bubbles: true}));
        const first = window.__api.calls.length;
        box.value = 300; box.dispatchEvent(new Event('change', {bubbles: true}));
        return [first, window.__api.calls.length];
    }""", WIDGET)
    assert sent_now == [1, 1]  # the first at once; the second waits for the answer in flight
    page.wait_for_function(f"""() => window.__api.calls.length === 2 && window.__api.inflight === 0
        && document.querySelector('{WIDGET} .tw-plot').data
             .find(t => t.showlegend === false).x[0] === 300""", timeout=15_000)
    api = page.evaluate("window.__api")
    assert [c["body"]["d_k"] for c in api["calls"]] == [100, 300]
    assert api["calls"][1]["at"] - api["answered"][0] < 60
    assert page.evaluate(f"document.querySelector('{WIDGET}').dataset.source") == "live"
    step = page.evaluate("""(w) => {
        const s = document.querySelector(`${w} input[type=range][name=d_k]`);
        const before = window.__api.calls.length;
        s.value = 5; s.dispatchEvent(new Event('input', {bubbles: true}));
        return window.__api.calls.length - before;
    }""", WIDGET)
    assert step == 1
    page.wait_for_function(f"""() => document.querySelector('{WIDGET} .tw-plot').data
             .find(t => t.showlegend === false).x[0] === 32""", timeout=15_000)
    assert page.console_errors == []


def test_each_answer_leaves_a_timing_measure(page, server):
    """The runtime's `tw:update` Performance measures, which the latency benchmark reads."""
    open_chapter(page, server)
    move_slider(page, WIDGET, "d_k", 9)
    page.wait_for_function("performance.getEntriesByName('tw:update').length > 0", timeout=10_000)
    d = page.evaluate("performance.getEntriesByName('tw:update')[0].detail")
    assert d["widget"] == "attention_scaling" and d["params"]["d_k"] == 512
    assert d["bytes"] > 1000
    for part in ("wait", "network", "download", "parse", "theme", "react", "total"):
        assert d[part] >= 0, part
    assert d["total"] >= d["network"] + d["react"]
