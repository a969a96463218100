"""The chapters' math is set at build time (widgets/build/typeset.py, the site's own katex.min.js
run by QuickJS), so a chapter loads no KaTeX script (76 KB compressed of its first load) and its
text never moves as formulas are set. Held to something independent: Chromium's own engine
running the same katex.min.js sets every formula of the chapters with the most math to the same
markup. An executed notebook's markdown math is still set in the browser, by KaTeX fetched on
that page only."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

# the chapters with the most inline and display math
CHAPTERS = ["/chapters/scaling/", "/chapters/positions/", "/chapters/heads/", "/chapters/self-attention/"]
KATEX_JS = re.compile(r"/assets/vendor/katex-[0-9a-f]+/(katex\.min|contrib/auto-render\.min)\.js$")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_browsers_katex_sets_every_formula_as_the_build_did(server, page, chapter):
    scripts = []
    page.on("request", lambda req: scripts.append(req.url) if KATEX_JS.search(req.url) else None)
    page.goto(server + chapter, wait_until="networkidle")
    assert scripts == []  # nothing of KaTeX's code: the page is idle and its math is set
    n = page.evaluate("() => document.querySelectorAll('.arithmatex').length")
    assert n > 20
    src = page.evaluate("""() => new URL(document.querySelector('link[href*="katex.min.css"]')
                                         .getAttribute('href'), location.href).href
                                 .replace('katex.min.css', 'katex.min.js')""")
    page.add_script_tag(url=src)
    differ = page.evaluate("""() => Array.from(document.querySelectorAll('.arithmatex'))
      .map(node => {
        const tex = node.querySelector('annotation[encoding="application/x-tex"]');
        if (!tex) return node.outerHTML.slice(0, 200);
        const mine = document.createElement('template');
        mine.innerHTML = katex.renderToString(tex.textContent,
                                              {displayMode: node.tagName === 'DIV'});
        return mine.innerHTML === node.innerHTML ? null : tex.textContent;
      }).filter(x => x !== null)""")
    assert differ == [], differ[:5]


def test_a_notebooks_markdown_math_is_set_by_katex_fetched_on_its_page(server, page):
    scripts = []
    page.on("request", lambda req: scripts.append(req.url) if KATEX_JS.search(req.url) else None)
    page.goto(server + "/exercises/01-variance/")
    page.wait_for_selector(".jp-RenderedMarkdown .katex", timeout=15_000)
    assert page.evaluate("() => document.querySelectorAll('.katex-error').length") == 0
    assert len(scripts) == 2, scripts  # katex.min.js, then its auto-render, once each
