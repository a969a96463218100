"""MkDocs hook: diagrams drawn by code, numbered figures, and the appendices gathered from the
chapters.

In a chapter's markdown, a fence (pymdownx.superfences renders it; this hook registers it):

    ```diagram
    name: model_map                 # a module in backend/diagrams/
    config: {preset: book}          # optional: its draw()'s keyword arguments
    id: map                         # optional: the figure's anchor, #fig-map (default: name)
    caption: The whole model, drawn from the book's configuration.
    ```

becomes a `<figure>` holding the SVG the module draws, its caption and a text description. Every
figure of a page, diagrams and widgets alike, is numbered in page order: "Figure 4.2" is the
second figure of the fourth chapter (the nav's order); pages outside the chapters number
"Figure 1", "Figure 2". `{{ fig("map") }}` in the text becomes a link reading "Figure 4.2"
(a diagram's id, or a widget's key).

Two appendix pages are gathered from the chapters, so each correction and each account of how
a widget measures is written once, beside what it concerns:

    {{ collected("sources") }}    every chapter's `??? note "Notes on the sources…"` block
    {{ collected("compute") }}    every docs/chapters/_compute/<chapter>.md

`fig` and `collected` are macros (`macros()`): `widgets/build/widget_blocks.py` expands them with the page's
others, through `widgets/build/macros.py`, and reads what `collected` gathers for macros in turn, so
`{{ value(...) }}` inside gathered text is filled in.
"""

from __future__ import annotations

import html
import posixpath
import re
import sys
from pathlib import Path

import yaml
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from backend.diagrams import palette, registry  # noqa: E402
from widgets.build.macros import register_fences  # noqa: E402

FIG_REF = re.compile(r"[\w.-]+")
COLLECTED = ("sources", "compute")
FIG_ID = re.compile(r"^[A-Za-z][\w-]{0,39}$")
SOURCES_NOTE = re.compile(r'^\?\?\?\+? note "Notes on the sources[^"\n]*"[ \t]*\n'
                          r"(?P<body>(?:(?:    |\t)[^\n]*\n|[ \t]*\n)*)", re.M)
CSS_PATH = "assets/book/diagrams.css"

_DIAGRAMS = None


def diagrams() -> dict:
    global _DIAGRAMS
    if _DIAGRAMS is None:
        _DIAGRAMS = registry()
    return _DIAGRAMS


def _inline(text: str) -> str:
    """A caption: HTML-escaped, with `code` spans kept."""
    parts = re.split(r"(`[^`]+`)", text)
    return "".join(f"<code>{html.escape(p[1:-1])}</code>" if p.startswith("`") and p.endswith("`")
                   else html.escape(p) for p in parts)


def render_diagram(name: str, config: dict | None, fig_id: str, caption: str) -> str:
    """The `<figure>` (one line of HTML) for diagram `name` drawn at `config`."""
    modules = diagrams()
    if name not in modules:
        raise PluginError(f"no diagram {name!r}; there are {sorted(modules)}")
    try:
        canvas = modules[name].draw(**(config or {}))
    except TypeError as exc:
        raise PluginError(f"diagram {name!r} does not take {config!r}: {exc}") from None
    svg = canvas.render(fig_id)
    return (f'<figure class="tw-diagram" id="{fig_id}" data-diagram="{html.escape(name)}">{svg}'
            f'<figcaption><span class="tw-fignum" data-for="{fig_id}"></span> {_inline(caption)}'
            f'</figcaption><details class="tw-alt"><summary>Text description</summary>'
            f'<p>{html.escape(canvas.desc)}</p></details></figure>')


def render_diagram_block(body: str, where: str, seen: set) -> str:
    """The `<figure>` of one diagram block (its YAML `body`); `seen`: the page's figure ids."""
    try:
        block = yaml.safe_load(body) or {}
    except yaml.YAMLError as exc:
        raise PluginError(f"{where}: diagram block is not valid YAML: {exc}") from None
    if not isinstance(block, dict) or "name" not in block or "caption" not in block:
        raise PluginError(f"{where}: a diagram block needs `name:` and `caption:`")
    unknown = set(block) - {"name", "config", "id", "caption"}
    if unknown:
        raise PluginError(f"{where}: unknown key(s) {sorted(unknown)} in a diagram block")
    ident = str(block.get("id") or block["name"]).replace("_", "-")
    if not FIG_ID.match(ident):
        raise PluginError(f"{where}: diagram id {ident!r} must be a short name")
    fig_id = f"fig-{ident}"
    if fig_id in seen:
        raise PluginError(f"{where}: two diagrams on this page share the id {ident!r}: give one an `id:`")
    seen.add(fig_id)
    try:
        return render_diagram(block["name"], block.get("config"), fig_id, str(block["caption"]))
    except PluginError as exc:
        raise PluginError(f"{where}: {exc.message}") from None


# The page being rendered (pymdownx.superfences hands a formatter its page's Markdown
# instance, not the page).
_PAGE = {"where": ""}


def diagram_fence(source: str, language: str, class_name: str, options: dict, md, **kwargs) -> str:
    """pymdownx.superfences' formatter of a ```diagram fence; the page's figure ids live on its
    Markdown instance (MkDocs makes one per page)."""
    if not hasattr(md, "tw_figure_ids"):
        md.tw_figure_ids = set()
    return render_diagram_block(source, _PAGE["where"], md.tw_figure_ids)


# Registered in on_config (widgets/build/macros.py register_fences says why not in mkdocs.yml).
FENCES = [{"name": "diagram", "class": "tw-diagram", "format": diagram_fence}]


# ------------------------------------------------------------------------------ chapters

def chapter_files(config) -> list[str]:
    """The chapters' source paths (docs-relative) in the nav's order."""
    out: list[str] = []

    def walk(items):
        for item in items or []:
            if isinstance(item, dict):
                for value in item.values():
                    walk(value if isinstance(value, list) else [value])
            elif isinstance(item, str) and item.startswith("chapters/") and item.endswith(".md"):
                if "/_" not in item and item not in APPENDICES:
                    out.append(item)
            elif isinstance(item, list):
                walk(item)
    walk(config["nav"])
    return out


APPENDICES = {"chapters/corrections.md", "chapters/how-widgets-compute.md"}


def chapter_number(src_uri: str, config) -> int | None:
    chapters = chapter_files(config)
    return chapters.index(src_uri) + 1 if src_uri in chapters else None


def _title(text: str, fallback: str) -> str:
    m = re.search(r"^# (.+)$", text, re.M)
    return m.group(1).strip() if m else fallback


def _relink(body: str, chapter: str) -> str:
    """Same-page anchors of a chapter's text, pointed at the chapter from the appendix."""
    return re.sub(r"\]\(#", f"]({chapter}#", body)


def collected(what: str, config) -> str:
    docs = Path(config["docs_dir"])
    out = []
    for rel in chapter_files(config):
        path = docs / rel
        text = path.read_text(encoding="utf-8")
        name = Path(rel).name
        title = _title(text, name)
        if what == "sources":
            notes = list(SOURCES_NOTE.finditer(text))
            if len(notes) > 1:
                raise PluginError(f"{rel}: more than one 'Notes on the sources' note")
            if not notes:
                continue
            body = re.sub(r"^(?:    |\t)", "", notes[0].group("body"), flags=re.M)
        else:
            part = docs / "chapters/_compute" / name
            if not part.is_file():
                continue
            body = part.read_text(encoding="utf-8")
        out.append(f"## [{title}]({name})\n\n{_relink(body.strip(), name)}\n")
    if not out:
        return "*Nothing gathered yet.*\n"
    return "\n".join(out)  # its macros are expanded by the caller, widgets/build/macros.py


def macros(config) -> dict:
    """The macros this module serves (widgets/build/macros.py `Call` in, markdown out)."""

    def fig(call) -> str:
        if len(call.args) != 1 or not isinstance(call.args[0], str) or call.kwargs \
                or not FIG_REF.fullmatch(call.args[0]):
            raise PluginError("fig() takes one figure id: a diagram's id or a widget's key")
        return f'<a class="tw-figref" data-ref="{call.args[0]}"></a>'

    def gathered(call) -> str:
        if len(call.args) != 1 or call.args[0] not in COLLECTED or call.kwargs:
            raise PluginError(f"collected() takes one of {', '.join(map(repr, COLLECTED))}")
        return collected(call.args[0], config)

    return {"fig": fig, "collected": gathered}


# --------------------------------------------------------------------------- MkDocs events

def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, CSS_PATH, content=palette.stylesheet()))
    return files


def on_config(config):
    register_fences(config, FENCES)
    return config


def on_page_markdown(markdown: str, page, config, files) -> str:
    _PAGE["where"] = page.file.src_uri  # for diagram_fence's messages
    return markdown


FIGURE_START = re.compile(
    r'<figure class="tw-diagram" id="(?P<fig>[^"]+)"|'
    r'<div class="tw-widget(?: [^"]*)?" data-widget="[^"]*" id="(?P<widget>[^"]+)"')


def on_page_content(output: str, page, config, files) -> str:
    """Number the page's figures in order; fill in the references to them."""
    chapter = chapter_number(page.file.src_uri, config)
    numbers: dict[str, str] = {}
    for i, m in enumerate(FIGURE_START.finditer(output), start=1):
        ident = m.group("fig") or m.group("widget")
        numbers[ident] = f"Figure {chapter}.{i}" if chapter else f"Figure {i}"

    def number_widget(m: re.Match) -> str:
        if m.group("widget"):
            return m.group(0) + f' data-fig="{numbers[m.group("widget")]}"'
        return m.group(0)

    output = FIGURE_START.sub(number_widget, output)
    output = re.sub(r'<span class="tw-fignum" data-for="([^"]+)"></span>',
                    lambda m: f'<span class="tw-fignum">{numbers[m.group(1)]}</span>', output)

    def ref(m: re.Match) -> str:
        name = m.group(1)
        for ident in (f"fig-{name.replace('_', '-')}", f"widget-{name.replace('.', '-')}"):
            if ident in numbers:
                return f'<a class="tw-figref" href="#{ident}">{numbers[ident]}</a>'
        raise PluginError(f"{page.file.src_uri}: {{{{ fig({name!r}) }}}} names no figure on the "
                          f"page (there are {sorted(numbers)})")

    output = re.sub(r'<a class="tw-figref" data-ref="([^"]+)"></a>', ref, output)
    return DOC_LINK.sub(lambda m: doc_link(m, page, files), output)


DOC_LINK = re.compile(r'href="doc:(?P<path>[^"#]+)(?P<anchor>#[^"]*)?"')


def doc_link(m: re.Match, page, files) -> str:
    """A diagram's `doc:chapters/x.md#a` as a link from this page (strict: the page exists)."""
    target = files.get_file_from_path(m.group("path"))
    if target is None:
        raise PluginError(f"{page.file.src_uri}: a diagram links to {m.group('path')!r}, "
                          "which is not a page of the book")
    here = posixpath.dirname(page.url.rstrip("/") + "/x") if page.url else ""
    url = posixpath.relpath(target.url or ".", here or ".")
    if target.url.endswith("/") and not url.endswith("/"):
        url += "/"
    return f'href="{html.escape(url + (m.group("anchor") or ""), quote=True)}"'

