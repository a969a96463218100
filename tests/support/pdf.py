"""The text of a printed PDF, page by page, read with PDFium (pypdfium2).

The print edition prints to about 410 pages, and pypdf's pure-Python extraction took 46 s to
read them on the 2-core machine, twice per run of tests/site/test_print.py; PDFium reads them in
2.5 s. (pypdf still reads what is cheap: named destinations, a few pages' text positions.)"""

from __future__ import annotations

import pypdfium2 as pdfium


def page_texts(pdf: bytes) -> list[str]:
    """Each page's text, its lines separated by newlines."""
    doc = pdfium.PdfDocument(pdf)
    try:
        out = []
        for page in doc:
            textpage = page.get_textpage()
            # PDFium reads the book's hyphens in "encoder-decoder" as U+FFFE, a noncharacter
            out.append(textpage.get_text_range().replace("\r\n", "\n").replace("\ufffe", "-"))
            textpage.close()
            page.close()
        return out
    finally:
        doc.close()
