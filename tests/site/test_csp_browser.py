"""The built book under its Content-Security-Policy, in Chromium: every chapter and an exercise
load with no CSP violation, KaTeX typesets, plotly draws, and a slider still reaches the live
API; no page allows 'unsafe-eval' or inline script other than by hash, and an exercise's notebook
figures draw (the runtime runs them as script elements its page allows by hash)."""

from __future__ import annotations

import urllib.request

import pytest

pytestmark = pytest.mark.browser

COLLECT = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e =>
  window.__csp.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' ' +
                    (e.sourceFile || '') + ':' + (e.lineNumber || '')));
"""


def _pages(site):
    chapters = sorted(p.parent.name for p in (site / "chapters").glob("*/index.html"))
    return ["/"] + [f"/chapters/{c}/" for c in chapters] + ["/exercises/01-variance/"]


def test_every_page_runs_under_the_policy(server, built_site, strict_page):
    strict_page.add_init_script(COLLECT)
    for path in _pages(built_site):
        resp = strict_page.goto(server + path, wait_until="load")
        csp = resp.headers["content-security-policy"]
        assert "'unsafe-inline'" not in csp.split("script-src", 1)[1].split(";", 1)[0]
        assert "'unsafe-eval'" not in csp, path
        if strict_page.locator("[data-widget]").count():
            strict_page.wait_for_selector("[data-widget] .tw-plot .main-svg", timeout=30_000)
        if path.startswith("/exercises/"):
            strict_page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        if strict_page.locator(".arithmatex").count():
            strict_page.wait_for_selector(".katex", timeout=15_000)
        # the page has started: every widget has its server's spec, the fonts are in
        strict_page.wait_for_function("""() => document.fonts.status === 'loaded' && [...document
            .querySelectorAll('[data-widget]')].every(w => w.dataset.spec)""", timeout=30_000)
        # A violation is reported by an event queued after what was blocked, and nothing
        # announces that none is coming: a bounded while for late ones.
        strict_page.wait_for_timeout(300)
        assert strict_page.evaluate("window.__csp") == [], path
    assert strict_page.console_errors == []


def test_a_slider_reaches_the_api_under_the_policy(server, strict_page):
    strict_page.add_init_script(COLLECT)
    strict_page.goto(server + "/chapters/scaling/")
    widget = strict_page.locator('[data-widget="attention_scaling"]').first
    strict_page.wait_for_selector('[data-widget="attention_scaling"] .tw-plot .main-svg')
    slider = widget.locator("input[type=range][name=d_k]")
    slider.evaluate("(el) => { el.value = 300; el.dispatchEvent(new Event('input', "
                    "{bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); }")
    strict_page.wait_for_function(
        """() => document.querySelector('[data-widget="attention_scaling"]').dataset.source
                 === 'live'""", timeout=20_000)
    assert strict_page.evaluate("window.__csp") == []


def test_the_api_answers_carry_the_same_headers(server):
    with urllib.request.urlopen(server + "/api/health") as resp:
        assert "default-src 'self'" in resp.headers["Content-Security-Policy"]
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
