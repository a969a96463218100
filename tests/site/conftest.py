"""A real gunicorn serving the freshly built book, and the system Chromium driving it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support.browser import DESKTOP, PHONE, new_page
from tests.support.server import serve
from widgets.build import snapshots

# The browser tests share their page helpers (widget_page.py); pytest runs with
# --import-mode=importlib, which puts no test folder on sys.path by itself.
sys.path.insert(0, str(Path(__file__).resolve().parent))
# The browser the build draws the opening figures' pictures with (widgets/build/snapshots.py),
# and its arguments; QUIC off besides, for the tests' throttled links.
CHROMIUM = snapshots.CHROMIUM
CHROMIUM_ARGS = [*snapshots.ARGS, "--disable-quic"]


@pytest.fixture(scope="session")
def start_gunicorn():
    """For tests that need fresh server processes of their own: `with start_gunicorn(site_dir,
    workers=..., env=..., config=...) as srv:` (tests.support.server.serve; `srv.base`)."""
    return serve


@pytest.fixture(scope="session")
def server(built_site):
    with serve(built_site, workers=2) as srv:
        yield srv.base


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} not found: `make test` installs Debian's chromium "
                    "(Playwright must not download a browser of its own: none can be fetched here)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield _TestBrowser(b)
        b.close()


class _TestBrowser:
    """The browser, whose contexts do not enforce the server's Content-Security-Policy by
    default: Playwright's own probes (`wait_for_function("...")`) evaluate their strings with
    eval inside the page, which the policy (rightly) forbids. The policy itself is tested where
    it is enforced: tests/site/test_csp_browser.py uses `strict_page` (bypass_csp=False) and
    runs every page and a live slider under it."""

    def __init__(self, browser):
        self._browser = browser

    def new_context(self, **kwargs):
        kwargs.setdefault("bypass_csp", True)
        return self._browser.new_context(**kwargs)

    def __getattr__(self, name):
        return getattr(self._browser, name)


@pytest.fixture()
def strict_page(browser):
    """A desktop page that enforces the Content-Security-Policy (no bypass)."""
    with new_page(browser, **DESKTOP, bypass_csp=False) as pg:
        yield pg


@pytest.fixture()
def page(browser):
    with new_page(browser, **DESKTOP) as pg:
        yield pg


@pytest.fixture()
def phone(browser):
    """A page in a 390 px phone viewport (touch, mobile, a 2x screen), closed after the test."""
    with new_page(browser, **PHONE) as pg:
        yield pg


@pytest.fixture()
def fits_the_screen():
    """Check that a widget is drawn, no wider than the screen, with no sideways scroll."""
    def check(pg, widget: str) -> None:
        pg.wait_for_selector(f"{widget} .tw-plot .main-svg", timeout=20_000)
        width = pg.evaluate(f"document.querySelector('{widget}').getBoundingClientRect().width")
        overflow = pg.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert width <= pg.viewport_size["width"] and overflow <= 0
    return check
