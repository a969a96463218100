"""The site's plotly.js is built from plotly.js's source with only the trace types the book
draws (widgets/build/plotly_bundle.mjs: 0.37 MB compressed against the cartesian bundle's 0.50).
Held to plotly.js's own full build of the same release (`plotly.js/dist/plotly.min.js`, as
plotly.js publishes it): every figure the built book holds, each widget's baked answers and
each notebook's figures, draws the same SVG in Chromium with either."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from tests.support.browser import new_page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "node_modules/plotly.js/dist/plotly.min.js"
BLOCK = re.compile(r'<script type="application/json" class="(tw-config|tw-notebook-figure)"'
                   r'[^>]*>(.*?)</script>', re.S)

# Draws one figure at a fixed size and returns its markup with plotly.js's random ids (the
# plot's uid in clip-path ids, each trace's uid in class names) replaced by their order.
DRAW = """async fig => {
  const gd = document.getElementById('g');
  await Plotly.newPlot(gd, fig.data, {...fig.layout, width: 720, height: 480},
                       {...(fig.config || {}), responsive: false});
  let out = gd.innerHTML;
  const ids = [gd._fullLayout._uid, ...gd._fullData.map(t => t.uid)].filter(Boolean);
  ids.forEach((id, i) => { out = out.split(id).join('UID' + i); });
  Plotly.purge(gd);
  return out;
}"""


def figures(site: Path) -> dict[str, dict]:
    """The figures of the built book's pages, by where they are: `page#widget:setting` or
    `page#notebookN` (the print edition's are the same figures again)."""
    found = {}
    for page in sorted(site.rglob("index.html")):
        where = page.parent.relative_to(site).as_posix()
        if where.startswith("print"):
            continue
        for cls, raw in BLOCK.findall(page.read_text(encoding="utf-8")):
            block = json.loads(html.unescape(raw) if "&quot;" in raw else raw)
            if cls == "tw-notebook-figure":
                found[f"{where}#notebook{len(found)}"] = block
                continue
            for answer in block["baked"][:1] + block["baked"][1:][-1:]:
                if answer.get("figure"):
                    setting = json.dumps(answer["params"], sort_keys=True)
                    found.setdefault(f"{where}#{block['key']}:{setting}", answer["figure"])
    return found


def draw_all(browser, script: Path, figs: dict[str, dict]) -> dict[str, str]:
    with new_page(browser, viewport={"width": 800, "height": 600}) as pg:
        pg.set_content('<div id="g"></div>')
        pg.add_script_tag(path=str(script))
        out = {key: pg.evaluate(DRAW, fig) for key, fig in figs.items()}
        assert pg.console_errors == []
        return out


def test_every_figure_draws_as_plotly_js_own_full_build_draws_it(built_site, browser):
    assert REFERENCE.is_file(), "plotly.js's own build: `npm ci` installs it"
    figs = figures(built_site)
    assert sum("#notebook" in k for k in figs) >= 10 and len(figs) >= 60, len(figs)
    shipped = next(built_site.glob("assets/vendor/plotly-*/plotly.min.js"))
    assert shipped.stat().st_size < 0.8 * REFERENCE.stat().st_size  # the partial build is shipped
    ours, theirs = draw_all(browser, shipped, figs), draw_all(browser, REFERENCE, figs)
    differ = [k for k in figs if ours[k] != theirs[k]]
    assert differ == [], differ[:10]
    assert all("<svg" in v for v in ours.values())
