"""Chromium pages for the browser tests: one way to open a page in its own context, and the
phone every test that asks "does it fit a phone?" uses."""

from __future__ import annotations

from contextlib import contextmanager

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
