"""MkDocs hook: turns widget blocks into live widgets and computed numbers into prose.

In a chapter's markdown, a fence (pymdownx.superfences renders it; this hook registers it):

    ```widget
    name: attention_scaling
    params: {d_k: 128}          # optional: the values the page starts from
    id: scaling-demo            # optional: the instance's key in shared links
    ```

becomes a `<div data-widget>` carrying the widget's spec and results baked at build time
(the start values plus the spec's bake points), which the runtime (`widgets/runtime/`) mounts. And

    {{ value("attention_scaling", "var_unscaled", fmt=".1f", d_k=64) }}

is replaced by the number the widget computes for those parameters, so prose cannot drift
from code. This hook expands every macro of a page (widgets/build/macros.py reads them, outside
code; `hf_source`, `hf_info`, `fig` and `collected` are handled by their own modules), and
gzips the site's text files. The browser libraries and the runtime it loads are shipped by
widgets/build/assets.py.
"""

from __future__ import annotations

import gzip
import html
import json
import logging
import os
import re
import sys
from functools import cache
from pathlib import Path

import yaml
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
# Notebooks executed by the build (their kernels inherit this environment) draw their figures
# as HTML for the page's own plotly.js; run anywhere else they use plotly's own renderer.
os.environ.setdefault("BOOK_BUILD", "1")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from backend import settings  # noqa: E402
from backend.compute import REGISTRY  # noqa: E402  (needs the repo root on sys.path)
from backend.compute.serialize import finite  # noqa: E402
from backend.compute.spec import ParamError  # noqa: E402
from backend.compute.style import theme_payload  # noqa: E402
from widgets.build import assets, figures, hf_source, macros, questions, reading, references  # noqa: E402

log = logging.getLogger("mkdocs.hooks.widgets")

# The API the built pages call: `BOOK_API_URL` at build time (a site on a static host calling
# an API on another origin, e.g. https://api.example.edu/api), else /api on the same origin.
# Read and checked through the one settings table, like every other variable.
API_BASE = settings.get("BOOK_API_URL") or "/api"


# ---------------------------------------------------------------------------- computations

@cache
def _compute(name: str, params_json: str) -> dict:
    module, params = REGISTRY[name], json.loads(params_json)
    out = module.compute(params)
    facts = getattr(module, "facts", None)  # values only the prose quotes: the build's alone
    if facts is not None:
        out = {**out, "values": {**out["values"], **facts(params)}}
    return out


# Every (widget, resolved params) the pages use, in the order first met: written to
# `assets/book/settings.json` after the build, the list `make prewarm` warms (it reads it from
# the built site or from the server, so the image needs no docs/ and no copy of this parser).
SETTINGS_MANIFEST = "assets/book/settings.json"
USED: dict[str, tuple[str, dict]] = {}


def compute(name: str, params: dict) -> dict:
    """Validated, memoized compute: every page and value call shares one result per params."""
    module = REGISTRY.get(name)
    if module is None:
        raise PluginError(f"unknown widget {name!r}; known: {', '.join(sorted(REGISTRY))}")
    try:
        resolved = module.SPEC.resolve(params)
    except ParamError as exc:
        raise PluginError(f"widget {name!r}: {exc}") from None
    key = json.dumps(resolved, sort_keys=True)
    USED.setdefault(f"{name}:{key}", (name, resolved))
    return {"params": resolved, **_compute(name, key)}


def lookup(values: dict, path: str):
    """`top.0.weight` -> values["top"][0]["weight"]."""
    node = values
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def format_value(value, fmt: str) -> str:
    return format(value, fmt) if fmt else str(value)


# ------------------------------------------------------------------------------- markdown

def value_macro(call: macros.Call) -> str:
    """`{{ value("widget", "path", fmt=".1f", **params) }}`: the number, HTML-escaped."""
    if len(call.args) != 2 or not all(isinstance(a, str) for a in call.args):
        raise PluginError("value() takes a widget name and a value name")
    kwargs = dict(call.kwargs)
    fmt = kwargs.pop("fmt", "")
    name, path = call.args
    return html.escape(format_value(value_of(name, path, kwargs), fmt))


def value_of(name: str, path: str, params: dict):
    """One computed value, as `{{ value() }}` reads it (a checked question's answer)."""
    result = compute(name, params)
    try:
        return lookup(result["values"], path)
    except (KeyError, IndexError, ValueError, TypeError):
        raise PluginError(f"widget {name!r} has no value {path!r}") from None


def page_macros(config) -> dict[str, macros.Handler]:
    """Every macro a page may call, by name."""
    return {"value": value_macro, **hf_source.MACROS, **references.MACROS, **figures.macros(config),
            **reading.macros(config), **questions.MACROS}


INSTANCE_ID = re.compile(r"^[A-Za-z][\w-]{0,39}$")


def instance_key(name: str, block: dict, seen: dict, where: str) -> str:
    """The prefix of this instance's keys in the page URL. The first `attention_map` on a page
    owns `attention_map.<param>`, the second `attention_map.2.<param>`, unless the block names
    an explicit `id:`; two instances never share a key."""
    seen[name] = seen.get(name, 0) + 1
    key = block.get("id")
    if key is not None:
        if not isinstance(key, str) or not INSTANCE_ID.match(key) or key in REGISTRY:
            raise PluginError(f"{where}: widget id {key!r} must be a short name (letters, digits, "
                              "- or _) that is not a widget's name")
    else:
        key = name if seen[name] == 1 else f"{name}.{seen[name]}"
    if key in seen.setdefault("__keys__", set()):
        raise PluginError(f"{where}: two widgets on this page share the key {key!r}")
    seen["__keys__"].add(key)
    return key


def read_widget_block(body: str, where: str) -> dict:
    try:
        block = yaml.safe_load(body) or {}
    except yaml.YAMLError as exc:
        raise PluginError(f"{where}: widget block is not valid YAML: {exc}") from None
    if not isinstance(block, dict) or "name" not in block:
        raise PluginError(f"{where}: a widget block needs `name: <widget>`")
    unknown = set(block) - {"name", "params", "id"}
    if unknown:
        raise PluginError(f"{where}: unknown key(s) {sorted(unknown)} in a widget block")
    return block


def render_widget_block(body: str, where: str, instances: dict | None = None) -> str:
    """The `<div data-widget>` of one widget block (its YAML `body`), with its baked results.
    `instances`: the page's instance keys so far (see instance_key)."""
    block = read_widget_block(body, where)
    name = block["name"]
    start = block.get("params") or {}
    try:
        first = compute(name, start)
    except PluginError as exc:
        raise PluginError(f"{where}: {exc.message}") from None
    spec = REGISTRY[name].SPEC
    baked, seen = [first], {json.dumps(first["params"], sort_keys=True)}
    try:
        asked = [spec.resolve(p) for p in questions.settings_for(where, name)]
    except ParamError as exc:
        raise PluginError(f"{where}: a question asks for a setting {name} refuses: {exc}") from None
    for point in spec.bake_points() + asked:
        key = json.dumps(point, sort_keys=True)
        if key not in seen:
            seen.add(key)
            baked.append(compute(name, point))
            assets.check_traces(baked[-1].get("figure") or {}, f"{where}: widget {name!r}")
    key = instance_key(name, block, {} if instances is None else instances, where)
    payload = {"spec": spec.to_json(), "start": first["params"], "api": API_BASE,
               "key": key, "baked": baked}
    # `</` must not end the script element early; JSON allows the escaped form.
    data = json.dumps(finite(payload), separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    wide = " tw-wide" if wide_figure(first["figure"]) else ""
    return (f'<div class="tw-widget{wide}" data-widget="{html.escape(name)}" '
            f'id="{widget_id(key)}" data-key="{html.escape(key)}">'
            f'{data_block("tw-config", data)}'
            f'<noscript>This interactive figure needs JavaScript.</noscript></div>{LAND}')


# A link to a widget (#widget-key) opens the page on it as soon as the parser has it. The browser
# scrolls to a fragment only after the whole page is parsed and its scripts have run, seconds
# later on a slow machine; the reader saw the chapter's top until then, and the figure's picture
# waited. The runtime's landOnWidget (page.js) lands again once the figures above are drawn.
LAND = ('<script>(function (w) { if (location.hash === "#" + w.id && !window.scrollY) '
        'w.scrollIntoView({ block: "start" }); })(document.currentScript.previousElementSibling);'
        '</script>')


def wide_figure(figure: dict) -> bool:
    """Whether a widget's figure needs more than the text column: a heatmap (a cell per token
    or position pair) or panels side by side (two x-axes whose domains do not overlap). On a
    large screen such a widget takes the page's free width (`tw-wide`: runtime.css, Distill's
    l-page); the rule reads the widget's opening figure, so a widget added later is laid out
    by what it draws, with nothing to declare per chapter."""
    if any(trace.get("type") == "heatmap" for trace in figure.get("data", [])):
        return True
    layout = figure.get("layout") or {}
    domains = [axis["domain"] for key, axis in layout.items()
               if re.fullmatch(r"xaxis\d*", key) and isinstance(axis, dict) and axis.get("domain")]
    return any(a[1] <= b[0] or b[1] <= a[0] for i, a in enumerate(domains) for b in domains[i + 1:])


# The page being rendered: its fences are formatted by pymdownx.superfences, which hands the
# formatter the source and the page's own Markdown instance but not the page.
_PAGE = {"where": ""}


def widget_fence(source: str, language: str, class_name: str, options: dict, md, **kwargs) -> str:
    """pymdownx.superfences' formatter of a ```widget fence. The page's instance keys live on
    its Markdown instance (MkDocs makes one per page), so the second `mlp` is `mlp.2`."""
    if not hasattr(md, "tw_widget_keys"):
        md.tw_widget_keys = {}
    return render_widget_block(source, _PAGE["where"], md.tw_widget_keys)


# Registered in on_config (widgets/build/macros.py register_fences says why not in mkdocs.yml).
FENCES = [{"name": "widget", "class": "tw-widget", "format": widget_fence}]


def widget_id(key: str) -> str:
    """The element id of a widget instance: a link to `#widget-attention_map-2` lands on it."""
    return "widget-" + key.replace(".", "-")


# A chapter whose first widget starts later than this share of its text gets a link to it
# under its title, so a skimming reader finds the figure.
JUMP_AFTER = 0.25
TITLE = re.compile(r"^# [^\n]*\n", re.M)


def jump_link(markdown: str, where: str = "") -> str:
    """`markdown` with "Jump to the interactive figure" under its title, when its first widget
    sits far down: past JUMP_AFTER of the page's text with its diagrams drawn (a diagram takes
    the room of its figure, as it did when diagrams were drawn into the markdown)."""
    blocks = macros.fences(markdown)
    first = next((f for f in blocks if f.lang == "widget"), None)
    opening = TITLE.search(markdown)
    if not first or not opening:
        return markdown
    grown = {f.start: len(figures.render_diagram_block(f.body, where, set()))
             - len(markdown[f.start:f.end].rstrip("\r\n")) for f in blocks if f.lang == "diagram"}
    position = first.start + sum(d for start, d in grown.items() if start < first.start)
    if position <= JUMP_AFTER * (len(markdown) + sum(grown.values())):
        return markdown
    try:
        block = yaml.safe_load(first.body) or {}
    except yaml.YAMLError:
        return markdown  # widget_fence reports it
    name = block.get("name") if isinstance(block, dict) else None
    if name not in REGISTRY:
        return markdown  # widget_fence reports it
    key = instance_key(name, block, {}, "")
    title = REGISTRY[name].SPEC.title
    link = (f'\n<p class="tw-jump"><a href="#{widget_id(key)}">Jump to the interactive figure: '
            f'{html.escape(title)}</a></p>\n')
    return markdown[:opening.end()] + link + markdown[opening.end():]


def on_config(config):
    # What every page's <head> carries (the theme's `extrahead`, widgets/theme/main.html): the
    # figures' colours for both schemes.
    config.extra["tw_theme"] = json.dumps(theme_payload(), separators=(",", ":"))
    macros.register_fences(config, FENCES)
    return config


def on_page_markdown(markdown: str, page, config, files) -> str:
    where = _PAGE["where"] = page.file.src_uri
    if where.startswith("chapters/"):
        markdown = jump_link(markdown, where)
    return macros.expand(markdown, page_macros(config), where)


# ------------------------------------------------------------------ pages: theme, notebooks

# Material's instant navigation swaps a page's content in and then runs every `<script>` in it
# again as a plain script, whatever its type: a JSON block would run as code (a syntax error,
# refused by the Content-Security-Policy) and be gone. A `<template>`'s content is not part of
# the page, so the content's data blocks sit in one (the runtime reads them: dom.js dataBlocks).
def data_block(cls: str, text: str, attrs: str = "") -> str:
    """A JSON block (`text`, already escaped so `</` cannot end it) for the runtime."""
    return (f'<template class="tw-data"><script type="application/json" class="{cls}"{attrs}>'
            f"{text}</script></template>")


# An executed notebook draws each figure with an inline `Plotly.newPlot("id", data, layout,
# config)` script. The build reads its arguments as JSON and hands them to the runtime as data,
# which draws them once plotly.js is there (it arrives async, only where a figure is), also
# after instant navigation: no code of the notebook's runs, so every page has one policy.
NOTEBOOK_PLOT = re.compile(r'<script(?: type="text/javascript")?>(\s*window\.PLOTLYENV=.*?)</script>',
                           re.S)
NEW_PLOT = re.compile(r"Plotly\.newPlot\(\s*")
ARGUMENT_END = re.compile(r"\s*[,)]\s*")
# nbconvert's MathJax loader (an empty src: MathJax is not configured, the book typesets with
# KaTeX) and its configuration: neither ever did anything here, and instant navigation waits
# forever for an empty src to load.
NOTEBOOK_MATHJAX = re.compile(r'(?:<!-- Load mathjax -->\s*)?<script src="">\s*</script>\s*'
                              r'(?:<!-- MathJax configuration -->\s*)?'
                              r'(?:<script type="text/x-mathjax-config">.*?</script>)?', re.S)


def plotly_call(text: str) -> tuple[str, list, dict, dict]:
    """(the div's id, data, layout, config) of a notebook's `Plotly.newPlot(...)` script."""
    m = NEW_PLOT.search(text)
    if m is None:
        raise PluginError("a notebook figure script without Plotly.newPlot")
    decoder, pos, args = json.JSONDecoder(), m.end(), []
    try:
        for _ in range(4):
            value, pos = decoder.raw_decode(text, pos)
            args.append(value)
            pos = ARGUMENT_END.match(text, pos).end()
    except (json.JSONDecodeError, AttributeError):  # not JSON, or no `,`/`)` after an argument
        raise PluginError(f"a notebook figure script this build cannot read: {text[:120]!r}") from None
    div_id, data, layout, config = args
    if not isinstance(div_id, str) or not isinstance(data, list) or not isinstance(layout, dict):
        raise PluginError(f"a notebook figure script this build cannot read: {text[:120]!r}")
    return div_id, data, layout, config if isinstance(config, dict) else {}


def notebook_figure(match: re.Match, where: str = "") -> str:
    div_id, data, layout, config = plotly_call(match.group(1))
    fig = {"data": data, "layout": layout, "config": config}
    assets.check_traces(fig, f"{where}: a notebook figure")
    text = json.dumps(fig, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return data_block("tw-notebook-figure", text, f' data-div="{html.escape(div_id)}"')

# mkdocs-jupyter's inline scripts in each notebook page: the copy button's element, its
# "Copied!" notice, and a Mermaid loader that imports mermaid from cdnjs where a cell has a
# diagram. Dropped: the runtime defines the copy button (widgets/runtime/clipboard.js), no
# notebook of the book draws Mermaid, and nothing loads from a CDN. A script of mkdocs-jupyter's
# this list does not know stops the build (test_build.py holds every page to its own scripts).
NOTEBOOK_SCRIPTS = {"the copy button's element": "global.ClipboardCopyElement = factory()",
                    "its notice": "document.addEventListener('clipboard-copy'",
                    "the Mermaid loader": 'document.querySelectorAll(".jp-Mermaid > pre.mermaid")'}
INLINE_SCRIPT = re.compile(r"<script(?: type=\"module\")?>(.*?)</script>\s*", re.S)


def drop_notebook_scripts(output: str, where: str) -> str:
    if re.search(r'class="[^"]*\bjp-Mermaid\b', output):
        raise PluginError(f"{where}: a Mermaid diagram in a notebook (the book ships no Mermaid)")

    def one(m: re.Match) -> str:
        return "" if any(mark in m.group(1) for mark in NOTEBOOK_SCRIPTS.values()) else m.group(0)

    return INLINE_SCRIPT.sub(one, output)


def on_page_content(output: str, page, config, files) -> str:
    if page.file.src_uri.endswith(".ipynb"):
        output = NOTEBOOK_PLOT.sub(lambda m: notebook_figure(m, page.file.src_uri), output)
        output = NOTEBOOK_MATHJAX.sub("", output)
        output = drop_notebook_scripts(output, page.file.src_uri)
    return output


# ------------------------------------------------------------------------------------ gzip

COMPRESSIBLE = {".html", ".js", ".css", ".json", ".svg", ".xml", ".txt", ".map"}


def on_pre_build(config) -> None:
    USED.clear()  # `mkdocs serve` rebuilds in one process: list this build's settings only
    questions.start(Path(config["docs_dir"]), value_of)


def on_post_build(config) -> None:
    """Write the settings manifest, then `<file>.gz` beside each text asset; the Flask app
    serves it to gzip clients."""
    site = Path(config["site_dir"])
    manifest = site / SETTINGS_MANIFEST
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"settings": [[n, p] for n, p in USED.values()]},
                                   separators=(",", ":"), sort_keys=True), encoding="utf-8")
    saved = 0
    for path in site.rglob("*"):
        if path.relative_to(site).as_posix() == "sitemap.xml":
            continue  # served rewritten per request (site_url.py), never as the file is
        if path.suffix in COMPRESSIBLE and path.is_file() and path.stat().st_size > 1024:
            raw = path.read_bytes()
            packed = gzip.compress(raw, compresslevel=9, mtime=0)
            path.with_name(path.name + ".gz").write_bytes(packed)
            saved += len(raw) - len(packed)
    log.info("gzip: %.1f MB saved for gzip clients", saved / 1e6)
