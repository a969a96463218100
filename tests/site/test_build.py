"""The built book: strict build, offline assets, baked widgets, and prose numbers that come
from the code."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from backend.compute import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
EXTERNAL = re.compile(r"^(https?:)?//", re.I)


class Sources(HTMLParser):
    """Collects every URL the browser would *load* (not links the reader may click)."""

    def __init__(self):
        super().__init__()
        self.loaded: list[str] = []
        self.configs: list[str] = []
        self._in_config = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "audio", "video", "source", "embed") and a.get("src"):
            self.loaded.append(a["src"])
        if tag == "link" and a.get("href") and set((a.get("rel") or "").split()) & {
                "stylesheet", "preload", "icon", "modulepreload", "manifest", "prefetch"}:
            self.loaded.append(a["href"])
        self._in_config = tag == "script" and "tw-config" in (a.get("class") or "")

    def handle_data(self, data):
        if self._in_config:
            self.configs.append(data)
            self._in_config = False


def parse(path: Path) -> Sources:
    p = Sources()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_every_page_loads_only_its_own_files(built_site):
    pages = list(built_site.rglob("*.html"))
    assert len(pages) >= 4
    for page in pages:
        external = [u for u in parse(page).loaded if EXTERNAL.match(u)]
        assert not external, f"{page.relative_to(built_site)} loads {external}"
    for css in built_site.rglob("*.css"):
        urls = re.findall(r"url\(\s*['\"]?([^)'\"]+)", css.read_text(encoding="utf-8"))
        assert not [u for u in urls if EXTERNAL.match(u)], f"{css} imports from outside"
        assert "@import url(http" not in css.read_text(encoding="utf-8")


def test_referenced_local_assets_exist(built_site):
    for page in built_site.rglob("*.html"):
        for url in parse(page).loaded:
            if url.startswith(("data:", "#")):
                continue
            path = url.split("?")[0]
            target = (built_site / path.lstrip("/") if path.startswith("/")
                      else page.parent / path).resolve()
            assert target.is_file(), f"{page.relative_to(built_site)} loads missing {url}"
    (katex_css,) = built_site.glob("assets/vendor/katex-*/katex.min.css")
    fonts = re.findall(r"url\((fonts/[^)]+\.woff2)\)", katex_css.read_text())
    assert fonts and all((katex_css.parent / f).is_file() for f in fonts)


def widget_configs(page: Path) -> list[dict]:
    return [json.loads(c) for c in parse(page).configs]


def test_widgets_are_baked_with_results_the_code_reproduces(built_site):
    configs = widget_configs(built_site / "chapters/scaling/index.html")
    assert [c["spec"]["name"] for c in configs] == ["attention_scaling"]
    config = configs[0]
    module = REGISTRY["attention_scaling"]
    assert config["spec"] == module.SPEC.to_json()
    assert config["start"] == module.SPEC.defaults()
    assert len(config["baked"]) >= 15
    assert {b["params"]["d_k"] for b in config["baked"]} >= {2 ** i for i in range(11)}
    for baked in config["baked"][:3]:
        fresh = {**module.compute(baked["params"])["values"], **module.facts(baked["params"])}
        assert baked["values"] == pytest.approx(fresh)


def test_prose_numbers_are_computed(built_site):
    html = (built_site / "chapters/scaling/index.html").read_text(encoding="utf-8")
    v64 = REGISTRY["attention_scaling"].compute({"d_k": 64, "n_positions": 8, "seed": 0})["values"]
    v512 = REGISTRY["attention_scaling"].compute({"d_k": 512, "n_positions": 8, "seed": 0})["values"]
    assert f"<strong>{v64['var_unscaled']:.2f}</strong>" in html
    assert f"<strong>{v64['var_scaled']:.3f}</strong>" in html
    assert f"{v512['var_unscaled']:.1f}" in html
    assert f"<td>{v64['max_prob_unscaled']:.3f}</td>" in html
    assert f"<td>{v64['saturated_unscaled']:.0%}</td>" in html
    assert "{{" not in html, "an unexpanded value() call reached the page"


def test_chapters_include_the_real_source(built_site):
    html = (built_site / "chapters/scaling/index.html").read_text(encoding="utf-8")
    source = (ROOT / "backend/reference/scaling.py").read_text(encoding="utf-8")
    assert "def dot_product_variance" in source
    assert "dot_product_variance" in html and "--8&lt;--" not in html and "--8<--" not in html


def test_the_exercise_notebook_ran_and_kept_its_figures(built_site):
    html = (built_site / "exercises/01-variance/index.html").read_text(encoding="utf-8")
    assert "Var(q.k / sqrt(d_k))" in html               # a printed output: the cell ran
    assert html.count('class="tw-notebook-figure"') >= 1  # the figure survived nbconvert
    # mkdocs-jupyter's template leaves an empty MathJax <script src=""> (the build takes it
    # out: it loads nothing), and the page's KaTeX renders the notebook's math instead.
    loaded = parse(built_site / "exercises/01-variance/index.html").loaded
    assert not [u for u in loaded if "mathjax" in u.lower() or "plot.ly" in u]
    assert (built_site / "exercises/01-variance/01-variance.ipynb").is_file()


def test_text_assets_are_precompressed(built_site):
    assert list(built_site.glob("assets/vendor/plotly-*/plotly.min.js.gz"))
    assert (built_site / "chapters/scaling/index.html.gz").is_file()


def test_no_page_loads_plotly_up_front(built_site):
    """plotly.js is fetched by the runtime, async, only where a figure is (issue 8, item 9)."""
    for page in built_site.rglob("*.html"):
        if page.relative_to(built_site).as_posix() == "print/index.html":
            continue  # the print edition draws every figure at once, static (test_print.py)
        html = page.read_text(encoding="utf-8")
        assert not re.search(r"<script[^>]*src=\"[^\"]*plotly", html), page.relative_to(built_site)
        # the runtime is a module script: deferred, like every module, so it never holds up
        # the text's first paint
        entry = re.search(r'<script src="([^"]*runtime-[0-9a-f]+/main\.js)" type="module">', html)
        assert entry and "defer" not in entry.group(0) and "async" not in entry.group(0), page
        if page.name != "404.html":  # MkDocs renders 404 without page hooks; it has no figure
            head = html.split("</head>")[0]
            assert '<script type="application/json" id="tw-theme">' in head
            # every module of the runtime is fetched at once, not one import level at a time
            preloaded = re.findall(r'<link rel="modulepreload" href="([^"]*)">', head)
            assert sorted(Path(h).name for h in preloaded) == \
                sorted(f.name for f in (ROOT / "widgets/runtime").glob("*.js")), page
            assert all((page.parent / h).resolve().is_file() for h in preloaded), page
            assert (page.parent / entry.group(1)).resolve().is_file(), page
        # a low-priority head start for plotly.js, only on pages that draw a figure
        has_figure = 'data-widget="' in html or "tw-notebook-figure" in html
        preload = re.search(r'<link rel="preload" as="script" href="([^"]*plotly\.min\.js)" '
                            r'fetchpriority="low">', html)
        assert bool(preload) == has_figure, page
        if preload:
            assert (page.parent / preload.group(1)).resolve().is_file()


def test_notebook_figures_are_handed_to_the_runtime(built_site):
    """As data (their `Plotly.newPlot` call's arguments), in a template instant navigation
    leaves alone: no notebook code runs, before plotly.js or after (widget_blocks.py)."""
    html = (built_site / "exercises/01-variance/index.html").read_text(encoding="utf-8")
    (block,) = re.findall(r'<template class="tw-data"><script type="application/json" '
                          r'class="tw-notebook-figure" data-div="([^"]+)">(.*?)</script></template>',
                          html, re.S)
    div, fig = block
    assert f'id="{div}"' in html
    assert {"data", "layout", "config"} <= set(json.loads(fig)) and json.loads(fig)["data"]
    assert "PLOTLYENV" not in html and "Plotly.newPlot" not in html
    assert re.search(r'<a href="01-variance\.ipynb" download>', html)


MATERIAL_TAB_ANCHOR = ('var target=document.getElementById(location.hash.slice(1));target&&'
                       'target.name&&(target.checked=target.name.startsWith("__tabbed_"))')


def test_what_instant_navigation_runs_again_is_code(built_site):
    """Material's instant navigation swaps a page's content in, then runs every `<script>` of it
    again as a plain script, its type dropped, and waits for each src to load. So the content's
    data blocks (widgets' configs, notebooks' figures) sit in templates, which it leaves alone;
    what it does run is JavaScript, allowed by the one policy every page has (security.py); and
    no script has an empty src (nbconvert's MathJax loader), whose load never comes. The one
    inline scripts left in any page's content are Material's tab anchor and the one after each
    widget that lands a link to it (widget_blocks.LAND): mkdocs-jupyter's three
    (the copy button, its notice, a Mermaid loader importing from cdnjs) are dropped by the build
    and the runtime defines the copy button."""
    from bs4 import BeautifulSoup

    from backend.app.security import JS_TYPES, inline_script_hashes, site_script_hashes
    from widgets.build.widget_blocks import LAND

    LAND_SCRIPT = LAND.removeprefix("<script>").removesuffix("</script>")

    allowed = set(site_script_hashes(built_site))
    checked = 0
    for path in sorted(built_site.rglob("*.html")):
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        container = soup.select_one("[data-md-component=container]")
        if container is None:
            continue
        for script in container.find_all("script"):
            if script.find_parent("template"):
                continue
            where = path.relative_to(built_site).as_posix()
            assert (script.get("type") or "").lower() in JS_TYPES, (where, script.attrs)
            if script.has_attr("src"):
                assert script["src"].strip(), where
            else:
                assert inline_script_hashes(str(script)) <= allowed, where
                assert script.string.strip() in (MATERIAL_TAB_ANCHOR, LAND_SCRIPT), (
                    where, script.string[:120])
            checked += 1
    assert checked > 40  # Material's own anchor script on every page at least


def test_what_the_runtime_reads_from_the_head_is_the_same_on_every_page(built_site):
    """Instant navigation keeps the first page's head (it swaps the content and a few of
    Material's parts): the data blocks the runtime reads there, the figures' colours and the
    questions' manifest (theme.js, quiz.js), must be the book's, the same on every page."""
    blocks: dict[str, set[str]] = {"tw-theme": set(), "tw-questions": set()}
    for path in built_site.rglob("*.html"):
        head = path.read_text(encoding="utf-8").split("</head>", 1)[0]
        for name, seen in blocks.items():
            seen.update(re.findall(rf'<script type="application/json" id="{name}">(.*?)</script>',
                                   head, re.S))
    assert all(len(seen) == 1 for seen in blocks.values()), {k: len(v) for k, v in blocks.items()}


def test_each_widget_instance_owns_its_url_keys(built_site):
    configs = widget_configs(built_site / "chapters/attention-maps/index.html")
    assert [c["key"] for c in configs] == ["attention_map", "attention_map.2", "attention_sink",
                                          "induction_lab", "head_roles"]
    assert widget_configs(built_site / "chapters/scaling/index.html")[0]["key"] == "attention_scaling"


def test_every_baked_config_is_strict_json(built_site):
    """The browser's JSON.parse rejects Infinity/NaN: one such number would stop a page's widgets."""
    import json
    import re

    def refuse(token):
        raise ValueError(f"{token} is not JSON")

    configs = 0
    for page in built_site.rglob("index.html"):
        for raw in re.findall(r'<script type="application/json" class="tw-config">(.*?)</script>',
                              page.read_text(encoding="utf-8"), re.S):
            json.loads(raw, parse_constant=refuse)
            configs += 1
    assert configs >= 10


def test_no_page_shows_a_warning_from_the_build(built_site):
    """An executed notebook's stderr (a library's warning with the build host's paths) never
    reaches a reader (UX review W9: tqdm's IProgress warning on the Llama exercise)."""
    leaks = [p.relative_to(built_site).as_posix() for p in built_site.rglob("*.html")
             if re.search(r"Warning: |site-packages/", p.read_text(encoding="utf-8"))]
    assert leaks == []


def test_chapters_with_a_far_widget_link_to_it_under_the_title(built_site):
    """The "jump to the interactive figure" link (issue 17 item 10) sits under the chapter's
    title and points at the chapter's first widget; a chapter whose figure comes late (scaling,
    at the end of its text) has one."""
    linked = []
    for page in sorted((built_site / "chapters").glob("*/index.html")):
        html = page.read_text(encoding="utf-8")
        jump = re.search(r'<p class="tw-jump"><a href="#([^"]+)"', html)
        if not jump:
            continue
        linked.append(page.parent.name)
        first = re.search(r'<div class="tw-widget(?: [^"]*)?" data-widget="[^"]+" id="([^"]+)"', html)
        assert first and first.group(1) == jump.group(1), page
        assert html.index("<h1") < jump.start() < first.start(), page
    assert "scaling" in linked


def test_the_book_shows_its_own_syntax(built_site):
    """The instructors' page shows a widget block and a value() call as code, and the same call
    in its prose as the number: widgets/build/macros.py and the widget fence never read code."""
    page = (built_site / "instructors/index.html").read_text(encoding="utf-8")
    shown = html.unescape(re.sub(r"<[^>]+>", "", page))
    call = '{{ value("attention_scaling", "var_unscaled", fmt=".1f", d_k=64) }}'
    assert f"<code>{call}</code>" in page
    assert "```widget\nname: attention_scaling\nparams: {d_k: 128}" in shown
    assert '{{ hf_source("LlamaMLP") }}' in shown and '{{ fig("norm-placement") }}' in shown
    assert "```diagram\nname: norm_placement\nconfig: {n_blocks: 1}" in shown
    assert "data-widget=" not in page
    v = REGISTRY["attention_scaling"].compute({"d_k": 64, "n_positions": 8, "seed": 0})["values"]
    assert f"reads\n{v['var_unscaled']:.1f}." in page


def test_no_macro_call_is_left_outside_code(built_site):
    """Every {{ name(...) }} in prose was expanded; the only ones a reader sees are in code."""
    left = []
    for path in sorted(built_site.rglob("*.html")):
        text = re.sub(r"<(script|style|pre|code)\b.*?</\1>", "", path.read_text(encoding="utf-8"),
                      flags=re.S)
        if re.search(r"\{\{\s*\w+\s*\(", text):
            left.append(path.relative_to(built_site).as_posix())
    assert left == []


@pytest.mark.parametrize("script", ['Plotly.newPlot("a", [1,], {})', 'Plotly.newPlot("a" [] {} {})'])
def test_a_notebook_figure_the_build_cannot_read_stops_it_with_a_reason(script):
    """Not JSON, or no `,` between arguments: a PluginError naming the script, no traceback."""
    from mkdocs.exceptions import PluginError

    from widgets.build.widget_blocks import plotly_call

    with pytest.raises(PluginError, match="cannot read"):
        plotly_call(script)


def test_the_chapters_math_is_set_and_no_page_loads_katex_up_front(built_site):
    """widgets/build/typeset.py: every formula of every page is KaTeX's markup, no TeX left for
    the browser, and no page but the print edition names KaTeX's script (a notebook's page
    fetches it through the runtime, test_typeset_browser.py)."""
    formulas = 0
    for page in built_site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        if page.relative_to(built_site).as_posix() != "print/index.html":
            assert not re.search(r"<script[^>]*src=\"[^\"]*katex", html), page
        for m in re.finditer(r'<(span|div) class="arithmatex">(.{0,40})', html):
            formulas += 1
            assert m.group(2).startswith('<span class="katex'), (page, m.group(0))
    assert formulas > 3000


@pytest.mark.parametrize("tex", [r"\frac{1}{", r"\notacommand x"])
def test_a_formula_katex_cannot_set_stops_the_build_naming_it(tex):
    from types import SimpleNamespace

    from mkdocs.exceptions import PluginError

    from widgets.build import assets, typeset

    assets.BUILT.setdefault("katex", assets.bundles()["katex"])
    page = SimpleNamespace(file=SimpleNamespace(src_uri="chapters/x.md"))
    ok = typeset.on_post_page(r'<p><span class="arithmatex">\(a &lt; b\)</span></p>', page, None)
    assert 'class="katex"' in ok and "a &lt; b" not in ok.split("<annotation")[0] and \
        "<annotation encoding=\"application/x-tex\">a &lt; b</annotation>" in ok
    with pytest.raises(PluginError, match=r"chapters/x\.md: KaTeX cannot set"):
        typeset.on_post_page(f'<span class="arithmatex">\\({tex}\\)</span>', page, None)
