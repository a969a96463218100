"""A real gunicorn serving the freshly built book, and the system Chromium driving it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The browser tests share their page helpers (widget_page.py); pytest runs with
# --import-mode=importlib, which puts no test folder on sys.path by itself.
sys.path.insert(0, str(Path(__file__).resolve().parent))
CHROMIUM = os.environ.get("BOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def gunicorn(site_dir: Path, workers: int = 2, env: dict | None = None,
             config: str = "backend/gunicorn_conf.py", start_s: float = 60):
    """`gunicorn -c backend/gunicorn_conf.py`, exactly as `make serve` runs it; yields its URL
    as soon as /api/health answers. `env`: variables set (or, with None, removed) for this
    server only; `config`: another gunicorn config file (relative to the repository root);
    `start_s`: how long it may take to answer (workers warm the widgets in the background)."""
    port = _free_port()
    env = {k: v for k, v in {**os.environ, "PORT": str(port), "BOOK_SITE_DIR": str(site_dir),
                             "WEB_CONCURRENCY": str(workers), **(env or {})}.items()
           if v is not None}
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", config],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + start_s
    try:
        while True:
            try:
                urllib.request.urlopen(base + "/api/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    proc.kill()
                    pytest.fail("gunicorn did not start:\n" + proc.stdout.read().decode()[-3000:])
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def start_gunicorn():
    """For tests that need fresh server processes of their own."""
    return gunicorn


@pytest.fixture(scope="session")
def server(built_site):
    with gunicorn(built_site) as base:
        yield base


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
    context = browser.new_context(viewport={"width": 1200, "height": 900}, bypass_csp=False)
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    context.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    context.close()


@pytest.fixture()
def phone(browser):
    """A page in a 390 px phone viewport (touch, mobile), closed after the test."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True)
    pg = context.new_page()
    pg.console_errors = []
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    context.close()


@pytest.fixture()
def fits_the_screen():
    """Check that a widget is drawn, no wider than the screen, with no sideways scroll."""
    def check(pg, widget: str) -> None:
        pg.wait_for_selector(f"{widget} .tw-plot .main-svg", timeout=20_000)
        width = pg.evaluate(f"document.querySelector('{widget}').getBoundingClientRect().width")
        overflow = pg.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert width <= pg.viewport_size["width"] and overflow <= 0
    return check
