"""The print edition (issue 23): `/print/` holds every page of the nav in its order, a static
figure for every widget and every notebook figure, each drawn; `make pdf`'s script prints it to
a PDF whose contents give the page each chapter starts on.

The nav comes from mkdocs.yml and the widgets from the built chapter pages themselves, not from
the hook that assembled the print page. One Chromium load of the page serves both the drawing
checks and the print (printing the book twice takes minutes on a 2-core machine)."""

from __future__ import annotations

import importlib.util
import io
import re
import unicodedata
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from tests.support.pdf import page_texts

ROOT = Path(__file__).resolve().parents[2]


def nav_pages() -> list[tuple[str, str]]:
    """(nav title, page URL) of every page of mkdocs.yml's nav, in its order (not the nav's
    link to the print edition itself)."""
    out: list[tuple[str, str]] = []

    def walk(items):
        for item in items:
            for title, value in item.items():
                if isinstance(value, list):
                    walk(value)
                elif value != "print/":
                    url = re.sub(r"(index)?\.(md|ipynb)$", "", value)
                    out.append((title, url + "/" if url and not url.endswith("/") else url))
    walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    return out


def slug(url: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", url.strip("/")) or "home"


def norm(text: str) -> str:
    """Text as compared across HTML and the PDF: ligatures and subscripts folded, no spaces."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def h1(node) -> str:
    heading = node.find("h1")
    for link in heading.select("a.headerlink, a.anchor-link"):
        link.decompose()
    return heading.get_text(" ", strip=True)


@pytest.fixture(scope="module")
def book(built_site):
    return soup(built_site / "print" / "index.html")


@pytest.fixture(scope="module")
def sources(built_site):
    """Each nav page's built article, keyed by URL."""
    return {url: soup(built_site / url / "index.html").find("article") for _, url in nav_pages()}


def test_every_page_of_the_nav_in_order(book, sources):
    articles = book.select("article.tw-print-chapter")
    assert [(a["data-title"], a["id"]) for a in articles] == \
        [(title, slug(url)) for title, url in nav_pages()]
    for article, (_, url) in zip(articles, nav_pages()):
        assert h1(article) == h1(sources[url])
    ids = [tag["id"] for tag in book.find_all(id=True)]
    assert len(ids) == len(set(ids)), "ids repeat in the print page"


def test_a_static_figure_for_every_widget_and_notebook_figure(book, sources):
    total = 0
    for _, url in nav_pages():
        article = book.find("article", id=slug(url))
        widgets = [w["id"] for w in sources[url].select("div.tw-widget[data-widget]")]
        figures = article.select("figure.tw-print-figure")
        assert [f["id"] for f in figures] == [f"{slug(url)}--{w}" for w in widgets], url
        for figure, widget in zip(figures, sources[url].select("div.tw-widget[data-widget]")):
            assert figure.find("figcaption").get_text().startswith(widget["data-fig"] + " — ")
        # in their templates (widget_blocks.data_block), which CSS selectors do not enter
        notebook = sources[url].find_all("script", class_="tw-notebook-figure")
        assert len(article.select(".tw-print-plot")) == len(widgets) + len(notebook), url
        total += len(widgets)
    assert total >= 17  # a widget a chapter at least: the book's figures were found at all
    # Nothing on the page runs but the site's own scripts: no controls, no API, no inline code.
    for script in book.find_all("script"):
        assert script.get("src") or script.get("type") == "application/json", script
    assert not book.select("input, button, select, textarea")


def test_links_inside_the_book_stay_on_the_print_page(book):
    ids = {tag["id"] for tag in book.find_all(id=True)}
    for link in book.find_all("a", href=True):
        href = link["href"]
        if href.startswith("#"):
            assert href[1:] in ids, href
        else:  # a file of the site (a notebook to download, the online book) or the web
            assert not re.match(r"^(\.\./)*(chapters|exercises|glossary|instructors)/[^.]*$",
                                href), href


@pytest.fixture(scope="module")
def printer():
    spec = importlib.util.spec_from_file_location("print_pdf", ROOT / "widgets/build/print_pdf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def print_page(browser, built_site, printer):
    page = printer.open_print_page(browser, built_site)
    yield page
    page.close()


def test_every_figure_is_drawn(print_page):
    """No blank figure: each plot's SVG holds drawn marks (a path with a shape, or a heatmap's
    image) inside its plotting area, and the math is typeset."""
    drawn = print_page.evaluate("""() => [...document.querySelectorAll('.tw-print-plot')].map(box => {
        const marks = [...box.querySelectorAll('.main-svg .trace path, .main-svg image')]
          .filter(m => { const r = m.getBoundingClientRect(); return r.width > 0 || r.height > 0; })
          .filter(m => m.tagName === 'image' || (m.getAttribute('d') || '').length > 2);
        return [box.closest('[id]').id, marks.length];
    })""")
    assert drawn and all(count > 0 for _, count in drawn), [d for d in drawn if not d[1]]
    assert print_page.evaluate("document.querySelectorAll('.katex').length") > 100
    assert print_page.evaluate("document.querySelectorAll('.katex-error').length") == 0


@pytest.fixture(scope="module")
def browser_pdf_file(print_page) -> bytes:
    """The print edition as a browser's own print makes it (Ctrl+P, the page's @page size and
    margins, no header or footer of the browser's). Taken before test_the_pdf, which fills the
    contents' numbers in."""
    return print_page.pdf(prefer_css_page_size=True, print_background=True)


@pytest.fixture(scope="module")
def browser_pdf(browser_pdf_file):
    """Its pages."""
    from pypdf import PdfReader

    return PdfReader(io.BytesIO(browser_pdf_file)).pages


@pytest.fixture(scope="module")
def browser_print(browser_pdf_file):
    """Each page's text, of that print."""
    return page_texts(browser_pdf_file)


def text_heights(pdf_page) -> list[tuple[str, float]]:
    """Each piece of text on a PDF page and its height on the page (points from the bottom),
    the footer's page number left out (it sits in the 18 mm bottom margin: under 51 pt)."""
    out: list[tuple[str, float]] = []

    def visit(text, cm, tm, *_):
        y = cm[1] * tm[4] + cm[3] * tm[5] + cm[5]
        if text.strip() and y > 18 / 25.4 * 72:
            out.append((text.strip(), y))
    pdf_page.extract_text(visitor_text=visit)
    return out


def test_the_browsers_own_print_numbers_its_pages(browser_print):
    """Page numbers come from print.css's @page margin box, which Chromium draws (131 and
    later), not only from `make pdf`. The contents' page numbers cannot: Chromium draws no
    target-counter() (it parses, and the whole `content` is then dropped), so there the list
    says that it has none, instead of showing an empty column (the review's H3)."""
    n = len(browser_print)
    for i, text in enumerate(browser_print, start=1):
        assert f"{i} / {n}" in text.splitlines(), (i, text[-200:])
    contents = norm("".join(browser_print[:5]))
    assert norm("this list gives no page numbers") in contents


def test_no_near_empty_page_around_the_sources_notes(browser_print, browser_pdf, book):
    """Each chapter's "Notes on the sources" breaks between its table's rows: its heading
    shares a page with the table's first row, and when it opens a page, the page before is at
    least half full. Before, the notes were kept whole (Material's details, print.css's
    tables): the heading was left alone on a page (p. 62 of this book's print held nothing
    else), or the whole block went to the next page, leaving the one before it up to nine
    tenths empty (the review's pp. 59/60 and 89)."""
    heading = "Notes on the sources (for instructors)"
    notes = [d for d in book.find_all("details")
             if d.summary and d.summary.get_text(strip=True) == heading]
    assert len(notes) >= 15
    pages = [norm(text) for text in browser_print]
    at = [i for i, text in enumerate(pages) for _ in range(text.count(norm(heading)))]
    assert len(at) == len(notes)
    for i, note in zip(at, notes):
        # the table's first cell, or the note's first paragraph where it has no table
        first = norm((note.find("td") or note.find(["p", "li"])).get_text())[:12]
        assert first in pages[i], (i + 1, first)
        here = text_heights(browser_pdf[i])
        if max(y for t, y in here if t.startswith("Notes on the sources")) >= max(y for _, y in here) - 1:
            # it opens page i + 1: page i is filled at least down to its middle
            lowest = min(y for _, y in text_heights(browser_pdf[i - 1]))
            assert lowest < browser_pdf[i - 1].mediabox.height / 2, (i, lowest)


def test_the_pdf(print_page, printer, book, sources, browser_pdf_file):
    # the chapters' pages in the browser's own print to start from: `make pdf`'s second print,
    # where they are the same (print_book still prints until they hold)
    pdf, numbers = printer.print_book(print_page, browser_pdf_file)
    texts = page_texts(pdf)
    pages = [norm(text) for text in texts]
    chapters = nav_pages()
    assert len(pages) > len(chapters)
    contents = {norm(line) for text in texts[:5] for line in text.splitlines()}
    for title, url in chapters:
        # The contents list the chapter with the page number the PDF itself says ...
        number = numbers[slug(url)]
        assert norm(title) + str(number) in contents, (title, number)
        # ... and that page starts the chapter: its title is there.
        assert norm(h1(sources[url])) in pages[number - 1], (title, number)
    # Page numbers in the footer (print.css's @page): "n / N" on every page, a line of its own.
    for i, text in enumerate(texts, start=1):
        assert f"{i} / {len(pages)}" in text.splitlines(), (i, text[-200:])
    # Every widget's figure number and title are printed.
    text = "".join(pages)
    for caption in book.select("figure.tw-print-figure figcaption"):
        assert norm(caption.find("strong").get_text()) in text
