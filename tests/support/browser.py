"""Chromium pages for the browser tests: one way to open a page in its own context, and the
phone every test that asks "does it fit a phone?" uses."""

from __future__ import annotations

import re
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlsplit

# A 390 px phone (DESIGN.md, "Every reader"): touch, mobile viewport, a 2x screen.
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
         "device_scale_factor": 2}
DESKTOP = {"viewport": {"width": 1200, "height": 900}}


@contextmanager
def new_page(browser, **context_args):
    """A page in a context of its own (`browser.new_context(**context_args)`), closed
    afterwards; the page's console errors and uncaught exceptions collect in
    `page.console_errors`."""
    context = browser.new_context(**context_args)
    try:
        pg = context.new_page()
        pg.console_errors = []
        pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
        pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
        yield pg
    finally:
        context.close()


# The runtime asks for each setting with `GET <api>/widgets/<name>/result?<setting>`
# (widgets/runtime/scheduler.js); these read such a request back.
_RESULT = re.compile(r"/api/widgets/(?P<name>[\w-]+)/result(?:\?|$)")


def computes(request, widget: str | None = None) -> bool:
    """Whether a Playwright request is a widget's computation (of `widget`, if named)."""
    m = _RESULT.search(request.url)
    return request.method == "GET" and m is not None and widget in (None, m["name"])


def setting(request) -> dict:
    """The setting such a request carries, typed as the server reads it (`?d_k=64` -> 64)."""
    from backend.app.query import _typed
    from backend.compute import REGISTRY

    url = urlsplit(request.url)
    spec = REGISTRY[_RESULT.search(request.url)["name"]].SPEC
    return {k: _typed(spec.param(k).type, v) for k, v in parse_qsl(url.query,
                                                                   keep_blank_values=True)}


# Waits on what the page does, not on the clock.

def next_frames(page, n: int = 2) -> None:
    """Return once the page has drawn `n` more animation frames: by then a resize's
    ResizeObserver callbacks, a redraw queued for the next frame and the layout they caused are
    done."""
    page.evaluate("""n => new Promise(done => {
        const tick = k => k ? requestAnimationFrame(() => tick(k - 1)) : done();
        tick(n); })""", n)


def scroll_settled(page, frames: int = 3, timeout_ms: int = 10_000) -> None:
    """Return once the page has not scrolled for `frames` animation frames in a row: a smooth
    scroll, a swipe, a landing on an anchor has ended."""
    page.evaluate("""([frames, timeout]) => new Promise((done, fail) => {
        const give_up = setTimeout(() => fail(new Error('still scrolling after ' + timeout + ' ms')), timeout);
        let last = scrollY, still = 0;
        const tick = () => {
            still = scrollY === last ? still + 1 : 0;
            last = scrollY;
            if (still >= frames) { clearTimeout(give_up); done(); } else requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick); })""", [frames, timeout_ms])


def styles_settled(page) -> None:
    """Return once a style change (a colour-scheme switch) has been drawn and every CSS
    transition it started has finished."""
    next_frames(page)
    page.wait_for_function("() => document.getAnimations().every(a => a.playState !== 'running')")


def idle(page, widget: str, timeout_ms: int = 15_000) -> None:
    """Wait until `widget`'s scheduler (widgets/runtime/scheduler.js) has nothing in flight,
    nothing waiting and no pause running: every request the reader's actions called for has
    left and been answered, so one that was never sent never will be."""
    page.wait_for_function(f"() => document.querySelector('{widget}').widget.scheduler.idle",
                           timeout=timeout_ms)


def holds(page, predicate: str, arg=None, timeout_ms: int = 10_000) -> bool:
    """Whether `predicate` (a function run in the page) comes to hold within `timeout_ms`. The
    test asserts on the values afterwards, so a failure shows what the page had instead."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(predicate, arg=arg, timeout=timeout_ms)
    except PlaywrightTimeout:
        return False
    return True


def started_without_plotly(page, url: str, widget: str) -> list:
    """Open `url` with plotly.js held back and return once the widget `widget` (a selector) has
    started and shows its values: the held requests, for the test to let go (`continue_()`)."""
    held = []
    page.route("**/plotly.min.js", lambda route: held.append(route))
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_function("""(sel) => { const w = document.querySelector(sel);
        return w && w.widget && w.querySelector('.tw-value dd'); }""", arg=widget, timeout=20_000)
    return held
