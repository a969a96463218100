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
