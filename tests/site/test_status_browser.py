"""What a widget's status says while an answer is slow, and where the reader sees it, in Chromium
(issue 33; the UX review's W5 and H5, still open after the readers' re-try).

W5: while a result computes, the status said "Precomputed · Computing head dim d_k = 128…": the
prefix of the built figure stayed, the setting named was the one in flight (after three key
presses the box read 512 and the status 128), and the values were not dimmed. H5: the status
was the widget's last line, 1,118 px (desktop) and 1,884 px (phone) below the first control.

The API is slowed by holding its result requests in Playwright's router until the test lets
them go. Each test failed on the runtime before the change (the base build of main): the status
named d_k = 128 under a box reading 512, "Precomputed · " was still drawn before it, the values
kept opacity 1 with no aria-busy, and the widget had no status chip near its controls."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.support.browser import DESKTOP, PHONE, new_page, started_without_plotly

pytestmark = pytest.mark.browser

SCALING = "/chapters/scaling/"
W = '[data-widget="attention_scaling"]'
RESULTS = "**/api/widgets/attention_scaling/result*"

STATE = f"""() => {{ const w = document.querySelector('{W}');
    const status = w.querySelector('.tw-status'), values = w.querySelector('.tw-values');
    const chip = w.querySelector('.tw-chip');
    return {{status: status.textContent,
             before: getComputedStyle(status, '::before').content,
             valuesOpacity: +getComputedStyle(values).opacity,
             valuesBusy: values.getAttribute('aria-busy'),
             plotBusy: w.querySelector('.tw-plot').getAttribute('aria-busy'),
             chip: chip && !chip.hidden ? chip.textContent : null,
             box: w.querySelector('input[name="d_k-value"]').value,
             busy: w.classList.contains('tw-busy')}}; }}"""


class Held:
    """The widget's result requests, held until `release`."""

    def __init__(self, page):
        self.routes, self.sent, self.released = [], 0, 0
        page.route(RESULTS, lambda route: self.routes.append(route))
        page.on("request", self._sent)

    def _sent(self, request):
        if "attention_scaling/result" in request.url:
            self.sent += 1

    def wait(self, page, n=1, timeout_s=20):
        """Until `n` requests are held, on events, not a timer: the browser's request event first,
        then round trips that let Playwright hand the queued route (it comes just after) over."""
        deadline = time.monotonic() + timeout_s
        while len(self.routes) < n:
            left_ms = (deadline - time.monotonic()) * 1000
            assert left_ms > 0, "no result request reached the router"
            if self.sent < self.released + n:  # not yet sent: wait for the browser to send it
                try:
                    page.wait_for_event("request", lambda r: "attention_scaling/result" in r.url,
                                        timeout=left_ms)
                except PlaywrightTimeout:
                    pass
            else:
                page.evaluate("0")

    def release(self):
        while self.routes:
            self.released += 1
            self.routes.pop(0).continue_()


def _open(page, server):
    page.goto(server + SCALING)
    page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)


def test_while_computing_the_status_names_the_controls_setting_and_marks_values_stale(
        browser, server):
    with new_page(browser, **DESKTOP) as page:
        _open(page, server)
        built = page.evaluate(STATE)
        assert "Precomputed" in built["before"], built
        held = Held(page)
        slider = page.locator(f'{W} input[type=range][name="d_k"]')
        slider.focus()
        slider.press("ArrowRight")  # 64 -> 128: sent, and held
        held.wait(page)
        page.wait_for_function(f"document.querySelector('{W}').classList.contains('tw-busy')",
                               timeout=5_000)
        for _ in range(2):  # two more while 128 computes: 256, 512 wait on the controls
            slider.press("ArrowRight")
        # the values fade over 0.15 s (runtime.css): wait for the fade, not a fixed time
        page.wait_for_function(f"+getComputedStyle(document.querySelector('{W} .tw-values'))"
                               ".opacity < 0.8", timeout=5_000)
        now = page.evaluate(STATE)
        assert now["box"] == "512", now
        assert f"d_k = {now['box']}" in now["status"], now
        assert "d_k = 128" not in now["status"], now
        assert now["status"].startswith("Computing"), now
        assert now["before"] in ("none", "normal"), now  # no "Precomputed · " before it
        assert now["valuesBusy"] == "true" and now["plotBusy"] == "true", now
        assert now["valuesOpacity"] < 0.8, now
        assert built["chip"] == "Precomputed" and now["chip"] == "Computing\u2026", now
        # 128's answer lands; 512 leaves at once and is held: still computing 512, still busy
        held.release()
        held.wait(page)
        page.wait_for_function(f"document.querySelector('{W}').dataset.source === 'live'")
        mid = page.evaluate(STATE)
        assert mid["busy"] and "d_k = 512" in mid["status"], mid
        held.release()
        page.wait_for_function(f"""() => {{ const w = document.querySelector('{W}');
            return !w.classList.contains('tw-busy') && w.widget.shown.params.d_k === 512; }}""",
                               timeout=20_000)
        done = page.evaluate(STATE)
        assert done["status"].startswith("Computed live"), done
        assert done["valuesBusy"] is None and done["plotBusy"] is None, done
        assert done["chip"] == "Live", done


@pytest.mark.parametrize("setup", [DESKTOP, {**DESKTOP, "viewport": {"width": 1280, "height": 900}},
                                   PHONE], ids=["1200", "1280", "phone-390"])
def test_the_status_chip_sits_beside_the_controls(browser, server, setup):
    with new_page(browser, **setup) as page:
        _open(page, server)
        where = page.evaluate(f"""() => {{ const w = document.querySelector('{W}');
            const chip = w.querySelector('.tw-chip');
            if (!chip) return null;
            const c = chip.getBoundingClientRect();
            const form = w.querySelector('.tw-controls').getBoundingClientRect();
            const first = w.querySelector('.tw-control').getBoundingClientRect();
            return {{gap: form.top - c.bottom, toFirst: first.top - c.top, width: c.width,
                     right: c.right, widget: w.getBoundingClientRect().right,
                     text: chip.textContent}}; }}""")
        assert where is not None, "no status chip in the widget's head"
        assert where["text"] == "Precomputed" and where["width"] > 0, where
        # in the head row, just above the first control (a screen away before: 1,118 px)
        assert 0 <= where["gap"] <= 80 and where["toFirst"] <= 120, where
        assert where["right"] <= where["widget"], where


def test_a_refusal_sits_under_its_control_and_describes_it(browser, server):
    """H4: the refusal was a paragraph 291 px below the control, tied to nothing."""
    with new_page(browser, **DESKTOP) as page:
        _open(page, server)
        box = page.locator(f'{W} input[name="d_k-value"]')
        box.fill("5000")  # over the slider's 1024: refused in the page
        box.dispatch_event("change")
        page.locator(f"{W} .tw-error").wait_for(state="visible", timeout=5_000)
        where = page.evaluate(f"""() => {{ const w = document.querySelector('{W}');
            const err = w.querySelector('.tw-error'), box = w.querySelector('input[name="d_k-value"]');
            const row = box.closest('.tw-control').getBoundingClientRect();
            return {{gap: err.getBoundingClientRect().top - row.bottom, id: err.id,
                     described: (box.getAttribute('aria-describedby') || '').split(' '),
                     slider: (w.querySelector('input[type=range][name="d_k"]')
                              .getAttribute('aria-describedby') || '').split(' '),
                     text: err.textContent}}; }}""")
        assert where["id"] and where["id"] in where["described"], where
        assert where["id"] in where["slider"], where
        assert 0 <= where["gap"] <= 24, where
        assert "Kept head dim d_k = 64" in where["text"], where
        # the next accepted move clears it, and the control describes nothing any more
        slider = page.locator(f'{W} input[type=range][name="d_k"]')
        slider.focus()
        slider.press("ArrowRight")
        page.locator(f"{W} .tw-error").wait_for(state="hidden", timeout=5_000)
        assert page.get_attribute(f'{W} input[name="d_k-value"]', "aria-describedby") in (None, "")


DR = '[data-widget="decode_roofline"]'


def test_a_status_names_a_choice_by_its_label_not_its_key(browser, server):
    """decode_roofline's offline status read "accelerator = 80" for the card the menu calls
    "A100 80 GB"."""
    with new_page(browser, **DESKTOP) as page:
        page.route("**/api/**", lambda route: route.abort())
        page.goto(server + "/chapters/decode-time/")
        page.wait_for_selector(f"{DR} .tw-plot .main-svg", timeout=20_000)
        pick = page.evaluate(f"""() => {{ const s = document.querySelector('{DR} select[name="card"]');
            const o = [...s.options].find(o => !o.selected && o.value !== o.textContent);
            return [o.value, o.textContent]; }}""")
        page.select_option(f'{DR} select[name="card"]', pick[0])
        page.wait_for_function(f"document.querySelector('{DR}').classList.contains('tw-precomputed')",
                               timeout=20_000)
        status = page.locator(f"{DR} .tw-status").inner_text()
        options = page.evaluate(f"""() => Object.fromEntries(['card', 'preset'].map(n =>
            [n, [...document.querySelectorAll(`{DR} select[name="${{n}}"] option`)]
                .map(o => [o.value, o.textContent])]))""")
        for name, label in (("card", "accelerator"), ("preset", "model")):
            shown = [lab for _, lab in options[name] if f"{label} = {lab}" in status]
            assert shown, (label, status)
            for key, lab in options[name]:
                if key != lab:
                    assert not re.search(rf"{label} = {re.escape(key)}(,|\.|$)", status), status


def test_before_plotly_arrives_a_new_settings_figure_says_it_is_being_drawn(browser, server):
    """W2: on a slow link, the baked figure was a blank 360 px box until plotly.js came. The
    opening figure is now the build's picture meanwhile (test_snapshots_browser.py); a setting
    the reader moves to before plotly.js is in has no picture, and says it is being drawn."""
    with new_page(browser, **DESKTOP) as page:
        held = started_without_plotly(page, server + SCALING, W)
        assert held, "plotly.js was not asked for"
        first = page.evaluate(f"() => document.querySelector('{W} .tw-value dd').textContent")
        page.locator(f'{W} input[type=range][name="d_k"]').press("ArrowRight")
        page.wait_for_function(f"""(first) => {{ const w = document.querySelector('{W}');
            return w.querySelector('.tw-value dd').textContent !== first
                && w.querySelector('.tw-plot .tw-placeholder'); }}""", arg=first,
                               timeout=20_000)
        now = page.evaluate(f"""() => {{ const w = document.querySelector('{W}');
            const p = w.querySelector('.tw-plot .tw-placeholder');
            return {{placeholder: p ? p.textContent : null,
                     height: p ? p.getBoundingClientRect().height : 0,
                     picture: !!w.querySelector('.tw-snapbox'),
                     plotly: !!window.Plotly,
                     values: [...w.querySelectorAll('.tw-value dd')].map(d => d.textContent)}}; }}""")
        assert not now["plotly"] and not now["picture"], now
        assert now["placeholder"] == "Drawing the figure\u2026" and now["height"] > 200, now
        assert re.match(r"\d", now["values"][0]), now  # the new setting's values meanwhile
        for route in held:
            route.continue_()
        page.wait_for_selector(f"{W} .tw-plot .main-svg", timeout=20_000)
        assert page.locator(f"{W} .tw-plot .tw-placeholder").count() == 0
