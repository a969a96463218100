"""MkDocs hook: the print edition, `/print/`, the whole book on one page in the nav's order.

After the build, each page of the nav is read back from the built site and its article is laid
into `site/print/index.html`, one `<article class="tw-print-chapter">` per page, behind a cover
and a table of contents. On the way:

- every id is prefixed with the page's slug (`chapters-scaling--intuition`), so anchors stay
  unique, and links between pages of the book point inside the print page;
- each widget becomes a static figure: its baked default result (the figure the page draws
  before the reader moves anything), its number, title and summary, and the setting it shows;
- each notebook figure's `Plotly.newPlot(...)` arguments are read as JSON, so both kinds of
  figure are drawn the same way, once, by `widgets/print/print.js` with Plotly's `staticPlot`;
- scripts, copy buttons and "jump to the interactive figure" links go; collapsed notes open.

`widgets/build/print_pdf.py` (`make pdf`) prints the page to `site/book.pdf` with the system Chromium.
It runs before `widget_blocks.py` (`hooks.py` sets the order), whose `on_post_build` gzips the page
with the rest.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

from bs4 import BeautifulSoup
from mkdocs.exceptions import PluginError
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

from widgets.build import assets

log = logging.getLogger("mkdocs.hooks.print_edition")

ROOT = Path(__file__).resolve().parents[2]
PRINT_URL = "print/"
ARTICLE = re.compile(r'<article class="md-content__inner md-typeset">(?P<body>.*?)</article>', re.S)
STYLE = re.compile(r"<style[^>]*>(?P<css>.*?)</style>", re.S)
REF_ATTRS = ("aria-labelledby", "aria-describedby", "aria-controls", "for")
URL_ATTRS = ("href", "src", "xlink:href")

_NAV: list[tuple[Page, str, str | None]] = []  # (page, nav title, the nav section it opens)


# ------------------------------------------------------------------------- MkDocs events

class _NavLink(logging.Filter):
    """The nav links to this page (mkdocs.yml), which is written after the build, so MkDocs
    finds no docs page there and warns (a failure under --strict): that one warning goes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"A reference to '{PRINT_URL}' is included in the 'nav'" not in record.getMessage()


def on_config(config):
    nav_log = logging.getLogger("mkdocs.structure.nav")
    if not any(isinstance(f, _NavLink) for f in nav_log.filters):
        nav_log.addFilter(_NavLink())
    return config


def on_nav(nav: Navigation, config, files) -> Navigation:
    """Remember the pages in the nav's order, each with its nav title (taken now: a notebook's
    page title later becomes its first heading) and the section it opens (its "part")."""
    _NAV.clear()
    current = None
    for page in nav.pages:
        section = page.parent.title if isinstance(page.parent, Section) else None
        _NAV.append((page, page.title, section if section != current else None))
        current = section
    # each page's link to its own place in this edition (widgets/theme/main.html)
    config.extra["tw_print_anchors"] = {page.url: slug(page.url) for page in nav.pages}
    return nav


def on_post_build(config) -> None:
    site = Path(config["site_dir"])
    out = site / PRINT_URL / "index.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    # a page the nav gives no title to has its own (its first heading) by now
    out.write_text(assemble(site, [(p.url, title or p.title, p.file.dest_uri, s) for p, title, s in _NAV],
                            config["site_name"], config.get("site_description") or ""),
                   encoding="utf-8")
    log.info("print edition: %d pages in %s", len(_NAV), out.relative_to(site))


# ------------------------------------------------------------------------------- assembly

def slug(url: str) -> str:
    """The prefix of a page's ids: 'chapters/scaling/' -> 'chapters-scaling', '' -> 'home'."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", url.strip("/")) or "home"


def assemble(site: Path, pages: list[tuple[str, str, str, str | None]], title: str,
             description: str) -> str:
    """The print page's HTML from the built `site`. `pages`: (url, nav title, built file,
    the nav section this page opens or None), in the nav's order."""
    known = {url: slug(url) for url, *_ in pages}
    styles: dict[str, str] = {}
    articles, toc = [], []
    for url, nav_title, dest, opens in pages:
        path = site / dest
        if not path.is_file():
            raise PluginError(f"print edition: {dest} was not built")
        text = path.read_text(encoding="utf-8")
        m = ARTICLE.search(text)
        if m is None:
            raise PluginError(f"print edition: no article in {dest}")
        body = m.group("body")
        for css in STYLE.findall(body):  # notebooks' styles: one copy each, in the head
            styles.setdefault(hashlib.sha256(css.encode()).hexdigest(), css)
        body = STYLE.sub("", body)
        name = known[url]
        if opens:
            toc.append(f'<li class="tw-print-toc-part">{html.escape(opens)}</li>')
        toc.append(f'<li><a href="#{name}">{html.escape(nav_title)}</a>'
                   f'<span class="tw-print-pageno" data-chapter="{name}"></span></li>')
        part = f'<p class="tw-print-part">{html.escape(opens)}</p>' if opens else ""
        articles.append(f'<article class="tw-print-chapter md-typeset" id="{name}" '
                        f'data-title="{html.escape(nav_title)}">{part}'
                        f'{rewrite(body, url, name, known)}</article>')
    head = head_links(site / "index.html")
    css = "".join(f"<style>{c}</style>" for c in styles.values())
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>{html.escape(title)} (print edition)</title>
{head}{css}
<link rel="stylesheet" href="../{assets.url("print", "print.css")}">
<script src="../{assets.url("plotly", "plotly.min.js")}" defer></script>
<script src="../{assets.url("katex", "katex.min.js")}" defer></script>
<script src="../{assets.url("katex", "contrib/auto-render.min.js")}" defer></script>
<script src="../{assets.url("print", "print.js")}" defer></script>
</head>
<body dir="ltr" class="tw-print" data-md-color-scheme="default"
      data-md-color-primary="indigo" data-md-color-accent="indigo">
<main class="tw-print-book">
<header class="tw-print-cover md-typeset">
<p class="tw-print-booktitle">{html.escape(title)}</p>
<p class="tw-print-subtitle">{html.escape(description)}</p>
<p class="tw-print-note">The print edition: every chapter, exercise and appendix on one page.
Each interactive figure is shown at the setting the book starts it from; the online book
lets you move it (<a href="../">the book's first page</a>).</p>
</header>
<nav class="tw-print-toc md-typeset" aria-labelledby="tw-print-contents">
<h2 id="tw-print-contents">Contents</h2>
<p class="tw-print-toc-note">Printed from a browser, this list gives no page numbers (a browser
cannot number the page a link leads to); every page's number is at its foot.</p>
<ol>{"".join(toc)}</ol>
</nav>
{"".join(articles)}
</main>
</body>
</html>
"""


def head_links(index: Path) -> str:
    """The built home page's stylesheets and theme data, as seen from /print/."""
    text = index.read_text(encoding="utf-8")
    head = text[: text.index("</head>")]
    out = []
    for m in re.finditer(r'<link rel="(?:stylesheet|icon)" href="(?P<href>[^"]+)"[^>]*>', head):
        out.append(m.group(0).replace(m.group("href"), relocate(m.group("href"), "")))
    theme = re.search(r'<script type="application/json" id="tw-theme">.*?</script>', head, re.S)
    if theme is None:
        raise PluginError("print edition: the home page has no tw-theme data (widgets/build/widget_blocks.py)")
    out.append(theme.group(0))
    return "\n".join(out)


def relocate(url: str, page_url: str) -> str:
    """A relative URL of the page at `page_url`, as the same target seen from /print/."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith(("#", "/", "mailto:", "data:")):
        return url
    target = posixpath.normpath(posixpath.join(page_url, parts.path)) if parts.path else page_url
    if target == ".":
        target = ""
    if parts.path.endswith("/") and target and not target.endswith("/"):
        target += "/"
    rel = posixpath.relpath(target or ".", PRINT_URL.rstrip("/"))
    if target.endswith("/") and not rel.endswith("/"):
        rel += "/"
    return rel + (f"?{parts.query}" if parts.query else "") + \
        (f"#{parts.fragment}" if parts.fragment else "")


def in_book(url: str, page_url: str, known: dict[str, str]) -> str | None:
    """`#<anchor in the print page>` when `url` leads to a page of the book, else None."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith(("/", "mailto:", "data:")):
        return None
    if parts.path:
        target = posixpath.normpath(posixpath.join(page_url, parts.path))
        target = "" if target == "." else target + "/"
    else:
        target = page_url
    if target not in known:
        return None
    name = known[target]
    return f"#{name}--{parts.fragment}" if parts.fragment else f"#{name}"


def rewrite(body: str, page_url: str, name: str, known: dict[str, str]) -> str:
    """One page's article, made part of the print page (see the module's docstring)."""
    soup = BeautifulSoup(body, "html.parser")
    for node in soup.select("p.tw-jump, p.tw-download, p.tw-print-link, clipboard-copy, "
                            ".clipboard-copy-txt, a.headerlink, a.anchor-link, .md-clipboard"):
        node.decompose()
    for widget in soup.select("div.tw-widget[data-widget]"):
        widget.replace_with(static_widget(soup, widget))
    for script in soup.find_all("script"):
        if "tw-notebook-figure" in (script.get("class") or []):
            notebook_figure(soup, script)
        elif "tw-print-data" not in (script.get("class") or []):
            script.decompose()
    for details in soup.find_all("details"):
        if "tw-alt" not in (details.get("class") or []):
            details["open"] = ""
    for tag in soup.find_all(True):
        if tag.get("id"):
            tag["id"] = f"{name}--{tag['id']}"
        for attr in REF_ATTRS:
            if tag.get(attr):
                tag[attr] = " ".join(f"{name}--{ref}" for ref in str(tag[attr]).split())
        for attr in URL_ATTRS:
            url = tag.get(attr)
            if url is None:
                continue
            if url.startswith("#"):
                tag[attr] = f"#{name}--{url[1:]}" if len(url) > 1 else f"#{name}"
            else:
                tag[attr] = in_book(url, page_url, known) or relocate(url, page_url)
        style = tag.get("style")
        if style and "url(#" in style:
            tag["style"] = style.replace("url(#", f"url(#{name}--")
        for attr in ("fill", "stroke", "marker-end", "marker-start", "clip-path", "mask", "filter"):
            value = tag.get(attr)
            if value and value.startswith("url(#"):
                tag[attr] = value.replace("url(#", f"url(#{name}--")
    return str(soup)


def setting_in_words(spec: dict, params: dict) -> str:
    """"head dim d_k = 64, positions = 8": the setting a static figure shows."""
    words = []
    for p in spec["params"]:
        if p["name"] not in params:
            continue
        value = params[p["name"]]
        if p.get("option_labels") and value in p.get("options", []):
            value = p["option_labels"][p["options"].index(value)]
        elif isinstance(value, bool):
            value = "on" if value else "off"
        elif p["type"] == "text":
            value = f"“{value}”"
        unit = f" {p['unit']}" if p.get("unit") else ""
        words.append(f"{p['label']} = {value}{unit}")
    return ", ".join(words)


def static_widget(soup: BeautifulSoup, widget) -> object:
    """A widget's `<div>` as a `<figure>` of its default result, drawn by print.js."""
    config = widget.find("script", class_="tw-config")
    if config is None:
        raise PluginError(f"print edition: widget {widget.get('data-widget')} has no config")
    data = json.loads(config.string)
    spec, result = data["spec"], data["baked"][0]
    fig = {"data": result["figure"]["data"], "layout": result["figure"]["layout"]}
    number = widget.get("data-fig", "")
    # Not `data-widget`: tools that look for live widgets in the built site (the runtime's
    # tests, the benchmarks' readers) must not find them here.
    figure = soup.new_tag("figure", attrs={"class": "tw-print-figure", "id": widget["id"],
                                           "data-print-widget": widget["data-widget"]})
    plot = soup.new_tag("div", attrs={"class": "tw-print-plot", "role": "img",
                                      "aria-label": result.get("summary") or spec["title"]})
    figure.append(plot)
    figure.append(data_script(soup, fig))
    caption = soup.new_tag("figcaption")
    if number:
        num = soup.new_tag("span", attrs={"class": "tw-fignum"})
        num.string = number
        caption.append(num)
        caption.append(" — ")
    strong = soup.new_tag("strong")
    strong.string = spec["title"]
    caption.append(strong)
    caption.append(f". {result['summary']}" if result.get("summary") else ".")
    setting = soup.new_tag("span", attrs={"class": "tw-print-setting"})
    setting.string = f" Shown at {setting_in_words(spec, result['params'])}."
    caption.append(setting)
    figure.append(caption)
    return figure


def data_script(soup: BeautifulSoup, fig: dict):
    node = soup.new_tag("script", attrs={"type": "application/json", "class": "tw-print-data"})
    node.string = json.dumps(fig, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return node


def notebook_figure(soup: BeautifulSoup, script) -> None:
    """An executed notebook's figure, as the build handed it to the runtime (its data block,
    widget_blocks.notebook_figure), replaced by the plot's data beside its `<div>`."""
    fig = json.loads(script.string or "null")
    div_id = script.get("data-div")
    div = soup.find(id=div_id) if div_id else None
    if div is None or not isinstance(fig, dict):
        raise PluginError(f"print edition: notebook figure {div_id} has no <div> or no data")
    div["class"] = (div.get("class") or []) + ["tw-print-plot"]
    div["style"] = ""
    del div["id"]
    holder = script.parent if script.parent is not None and script.parent.name == "template" else script
    holder.replace_with(data_script(soup, {"data": fig["data"], "layout": fig["layout"]}))
