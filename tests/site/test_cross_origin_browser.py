"""Site and API apart: the book on a plain static server, its widgets calling gunicorn on another
loopback port, named at build time by BOOK_API_URL and allowed there by BOOK_CORS_ORIGINS.

The site is a small build of its own (one chapter, `INHERIT`ing the book's mkdocs.yml with
BOOK_API_URL set), not the session's full build: the hook reads BOOK_API_URL as it bakes, so
this tests the real path, in ~10 s of CPU instead of the whole book's build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.browser import computes
from tests.support.server import free_port

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
WIDGET = '[data-widget="attention_scaling"]'
CHAPTER = "/chapters/scaling/"


def _small_build(out: Path, api_url: str) -> Path:
    docs = out / "docs"
    (docs / "chapters").mkdir(parents=True)
    (docs / "chapters" / "_questions").mkdir()
    # the glossary hook reads its page; the chapter shows its checked questions
    for rel in ["chapters/scaling.md", "glossary.md", "chapters/_questions/scaling.yml"]:
        (docs / rel).write_text((ROOT / "docs" / rel).read_text())
    (docs / "index.md").write_text("# Home\n")  # the print edition reads the home page's head
    config = out / "mkdocs.yml"
    config.write_text(f"""INHERIT: {ROOT / 'mkdocs.yml'}
docs_dir: {docs}
strict: false
theme:
  custom_dir: {ROOT / 'widgets' / 'theme'}
hooks:
  - {ROOT / 'widgets' / 'build' / 'hooks.py'}
plugins:
  - search
validation:
  links: {{not_found: ignore, anchors: ignore, unrecognized_links: ignore}}
  nav: {{omitted_files: ignore, not_found: ignore}}
nav:
  - chapters/scaling.md
""")
    site = out / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "BOOK_API_URL": api_url}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-f", str(config),
                           "--site-dir", str(site)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"small mkdocs build failed:\n{proc.stderr[-4000:]}")
    return site


class StaticServer:
    """`python -m http.server`: a static host that knows nothing of the API."""

    def __init__(self, root: Path, port: int):
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                                      "127.0.0.1", "--directory", str(root)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                urllib.request.urlopen(self.url + "/", timeout=2)
                return
            except OSError:
                if time.time() > deadline:
                    self.stop()
                    pytest.fail("http.server did not start")
                time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def apart(tmp_path_factory, start_gunicorn):
    """(site URL allowed by CORS, the same site on an origin not allowed, API base URL)."""
    site_port, other_port = free_port(), free_port()
    allowed = f"http://127.0.0.1:{site_port}"
    old = os.environ.get("BOOK_CORS_ORIGINS")
    os.environ["BOOK_CORS_ORIGINS"] = allowed
    try:
        # the API serves no site at all: an empty folder
        with start_gunicorn(tmp_path_factory.mktemp("no-site"), workers=1) as api_server:
            api = api_server.base
            os.environ.pop("BOOK_CORS_ORIGINS")
            site = _small_build(tmp_path_factory.mktemp("apart"), api + "/api")
            first, second = StaticServer(site, site_port), StaticServer(site, other_port)
            try:
                yield first.url, second.url, api
            finally:
                first.stop()
                second.stop()
    finally:
        if old is None:
            os.environ.pop("BOOK_CORS_ORIGINS", None)
        else:
            os.environ["BOOK_CORS_ORIGINS"] = old


def _type_seed(page, seed: int):
    box = page.locator(f"{WIDGET} input[name=seed-value]")
    box.fill(str(seed))
    box.dispatch_event("change")


def test_the_built_page_names_the_other_origin(apart):
    site, _, api = apart
    html = urllib.request.urlopen(site + CHAPTER, timeout=10).read().decode()
    assert f'"api":"{api}/api"' in html


def test_a_widget_recomputes_live_across_origins(apart, page):
    site, _, api = apart
    posts = []
    page.on("request", lambda r: computes(r) and posts.append(r.url))
    page.goto(site + CHAPTER)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=30_000)
    before = page.inner_text(f"{WIDGET} .tw-value[data-name=var_unscaled] dd")
    _type_seed(page, 4321)  # a seed no bake point has: only the API can answer it
    page.wait_for_function(f"document.querySelector('{WIDGET}').dataset.source === 'live'",
                           timeout=20_000)
    page.wait_for_function(
        f"document.querySelector('{WIDGET} .tw-value[data-name=var_unscaled] dd').innerText"
        f" !== {json.dumps(before)}", timeout=10_000)
    assert posts and all(url.startswith(api + "/api/widgets/attention_scaling") for url in posts)
    assert not page.console_errors


def test_across_origins_an_answer_from_the_browsers_cache_is_called_so(apart, page):
    """The API names the page's origin in Timing-Allow-Origin, so the runtime can read the
    Resource Timing sizes that tell its browser's cached answers from fresh ones."""
    site, _, api = apart
    page.goto(site + CHAPTER)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=30_000)
    status = page.locator(f"{WIDGET} .tw-status")
    for seed in (4321, 4322, 4321):
        _type_seed(page, seed)
        page.wait_for_function(f"""() => document.querySelector('{WIDGET}').dataset.source === 'live'
            && location.search.includes('seed={seed}')""", timeout=20_000)
        if seed == 4322:
            assert "browser's cache" not in status.inner_text()
    assert "your browser's cache" in status.inner_text(), status.inner_text()
    assert not page.console_errors


def test_an_origin_not_allowed_gets_no_cors_header_and_the_page_falls_back(apart, page):
    _, other, api = apart
    req = urllib.request.Request(api + "/api/widgets/attention_scaling", data=b"{}",
                                 method="POST", headers={"Content-Type": "application/json",
                                                         "Origin": other})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200 and resp.headers.get("Access-Control-Allow-Origin") is None
    pre = urllib.request.Request(api + "/api/widgets/attention_scaling", method="OPTIONS",
                                 headers={"Origin": other, "Access-Control-Request-Method": "POST",
                                          "Access-Control-Request-Headers": "content-type"})
    with urllib.request.urlopen(pre, timeout=10) as resp:
        assert resp.headers.get("Access-Control-Allow-Origin") is None
    # The browser refuses the answer, so the page draws the nearest baked result, as with no API.
    failed = []
    page.on("requestfailed", lambda r: r.url.startswith(api) and failed.append(r.url))
    page.goto(other + CHAPTER)
    page.wait_for_selector(f"{WIDGET} .tw-plot .main-svg", timeout=30_000)
    _type_seed(page, 4321)
    if not failed:  # the spec request on load may have failed already; else the seed's will
        page.wait_for_event("requestfailed", lambda r: r.url.startswith(api), timeout=20_000)
    page.wait_for_function(
        f"document.querySelector('{WIDGET}').dataset.source === 'precomputed'", timeout=20_000)
