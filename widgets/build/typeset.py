"""The chapters' math, typeset at build time by the KaTeX the site ships.

`pymdownx.arithmatex` leaves each formula as TeX in a `<span class="arithmatex">\\(…\\)</span>`
(or a `<div>` with `\\[…\\]`). Typeset in the reader's browser, every chapter loaded KaTeX's
script (76 KB compressed, a tenth of a chapter's first load) and the text moved as each formula
was set. Here each one is set once, by the same `katex.min.js` file the site serves (run by
QuickJS, a JavaScript engine in the build's Python), into the HTML KaTeX itself would have
written in the page: the page then needs KaTeX's stylesheet and fonts only.

A formula KaTeX cannot parse stops the build, naming the page and the TeX (in the browser it
was a red error in the text). Executed notebooks keep their markdown's `$…$` math, which the
runtime typesets on the pages that have it (widgets/runtime/page.js `renderMath`).
"""

from __future__ import annotations

import html
import re
import threading
from functools import lru_cache

from mkdocs.exceptions import PluginError

from widgets.build import assets

MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)
DELIMITERS = {"span": (r"\(", r"\)"), "div": (r"\[", r"\]")}
_LOCK = threading.Lock()  # one QuickJS context, not safe to share between threads


@lru_cache(maxsize=1)
def _katex(source: bytes):
    import quickjs

    ctx = quickjs.Context()
    ctx.eval(source.decode())
    return ctx.eval("(function (tex, display) { return katex.renderToString(tex, "
                    "{displayMode: display, throwOnError: true}); })")


def typeset(tex: str, display: bool) -> str:
    """KaTeX's HTML for one formula (the TeX without its delimiters)."""
    render = _katex(assets.BUILT["katex"].files["katex.min.js"])
    with _LOCK:
        return render(tex, display)


def on_post_page(output: str, page, config) -> str:
    def one(m: re.Match) -> str:
        tag, text = m.group(1), html.unescape(m.group(2)).strip()
        left, right = DELIMITERS[tag]
        if not (text.startswith(left) and text.endswith(right)):
            raise PluginError(f"{page.file.src_uri}: math not in {left} {right}: {text[:80]!r}")
        try:
            out = typeset(text[len(left):-len(right)], tag == "div")
        except Exception as e:  # quickjs.JSException: KaTeX's ParseError, with its position
            raise PluginError(f"{page.file.src_uri}: KaTeX cannot set {text[:120]!r}: {e}") from e
        return f'<{tag} class="arithmatex">{out}</{tag}>'

    return MATH.sub(one, output)
