"""`make pdf`: the print edition (`site/print/`, built by widgets/build/print_edition.py) printed to a
PDF with the system Chromium, with page numbers in the footer (print.css's @page, as a browser's
own print has them) and the page each chapter starts on in the table of contents.

    .venv/bin/python widgets/build/print_pdf.py [--site site] [--out site/book.pdf]

The page is opened from the disk (it loads nothing but the site's own files) and printed once
all its figures are drawn. Chromium writes a named destination for each chapter (the target of
its line in the contents), which gives the page it starts on; those numbers are written into
the contents and the book printed again, until the numbers are the ones the PDF has (the second
print, unless filling them in moved a chapter).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

from pypdf import PdfReader

CHROMIUM = os.environ.get("BOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]
MARGIN = {"top": "16mm", "right": "16mm", "bottom": "18mm", "left": "16mm"}  # as print.css
READY_MS = 180_000  # drawing every figure of the book on a busy 2-core machine


class PrintError(RuntimeError):
    pass


def chapter_pages(pdf: bytes, chapters: list[str]) -> dict[str, int]:
    """Each chapter's first page (1-based), from the PDF's named destinations."""
    reader = PdfReader(io.BytesIO(pdf))
    named = reader.named_destinations
    out = {}
    for name in chapters:
        dest = named.get(name) or named.get("/" + name)
        if dest is None:
            raise PrintError(f"the PDF has no destination for chapter {name!r}")
        out[name] = reader.get_destination_page_number(dest) + 1
    return out


def open_print_page(browser, site: Path):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    url = (site / "print" / "index.html").resolve().as_uri()
    page.goto(url, wait_until="commit", timeout=READY_MS)
    page.wait_for_function("document.documentElement.hasAttribute('data-tw-print')",
                           timeout=READY_MS, polling=500)
    state = page.evaluate("[document.documentElement.getAttribute('data-tw-print'),"
                          " document.documentElement.getAttribute('data-tw-print-error')]")
    if state[0] != "ready" or errors:
        raise PrintError(f"the print page did not draw: {state[1] or ''} {' '.join(errors)}")
    return page


def print_book(page, earlier: bytes | None = None) -> tuple[bytes, dict[str, int]]:
    """The PDF, its contents' numbers filled in from a print of itself: printed with each
    chapter's first page as `earlier` (another print of the same page) has it, or blank, until
    the pages it says are the pages they are. Where `earlier` is right, that saves one print."""
    chapters = page.eval_on_selector_all(".tw-print-chapter", "els => els.map(e => e.id)")
    numbers = chapter_pages(earlier, chapters) if earlier else {}
    # the contents' note that a browser's print has no numbers there: this one has
    page.evaluate("document.querySelectorAll('.tw-print-toc-note').forEach(n => n.remove())")
    for _ in range(4):
        page.evaluate("""numbers => document.querySelectorAll('.tw-print-pageno').forEach(
                             n => { n.textContent = numbers[n.dataset.chapter] || ''; })""",
                      numbers)
        pdf = page.pdf(format="A4", margin=MARGIN, print_background=True, outline=True,
                       tagged=True)
        found = chapter_pages(pdf, chapters)
        if found == numbers:
            return pdf, numbers
        numbers = found
    raise PrintError("the contents' page numbers did not settle after four prints")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=Path("site"), help="the built book")
    parser.add_argument("--out", type=Path, default=None, help="default: <site>/book.pdf")
    args = parser.parse_args(argv)
    out = args.out or args.site / "book.pdf"
    if not (args.site / "print" / "index.html").is_file():
        print(f"{args.site}/print/index.html is missing: build the book first (make build)",
              file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    t0 = time.perf_counter()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = open_print_page(browser, args.site)
            pdf, numbers = print_book(page)
        except PrintError as exc:
            print(f"make pdf: {exc}", file=sys.stderr)
            return 1
        finally:
            browser.close()
    out.write_bytes(pdf)
    pages = len(PdfReader(io.BytesIO(pdf)).pages)
    print(f"{out}: {pages} pages, {len(numbers)} chapters, {len(pdf) / 1e6:.1f} MB "
          f"in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
