"""No page of the book is wider than a small phone (issue 33; the fresh readers' re-try of the
UX review): every page of the built site, opened at 360 x 740 in Chromium, scrolls only up
and down, and no widget's controls run past its own card.

Before the fix, on the book as built then: /chapters/training/ was 467 px wide (its 6ND
table's KaTeX headers escaped the table's scroll box), /chapters/llama/ 393 px at 390 (the
parity widget's selects kept their longest option's width), cost and corrections 9-13 px too
wide (an inline formula in a list, a table), and sampling's and training_checkpoints' controls
ran past their cards (368 and 390 px)."""

from __future__ import annotations

import pytest

from tests.support.browser import new_page

pytestmark = pytest.mark.browser

SMALL_PHONE = {"viewport": {"width": 360, "height": 740}, "is_mobile": True, "has_touch": True,
               "device_scale_factor": 2}

# Every widget drawn (or showing that it has nothing to draw): a figure's width is in the count.
SETTLED = """() => [...document.querySelectorAll('.tw-widget[data-widget]')].every(w =>
    w.querySelector('.tw-plot .main-svg') || w.classList.contains('tw-nobaked'))"""

# A control or value of a widget whose right edge is past the widget's own (CSS px).
PAST_THE_CARD = """() => [...document.querySelectorAll('.tw-widget[data-widget]')].flatMap(w => {
    const right = w.getBoundingClientRect().right;
    return [...w.querySelectorAll('.tw-control, .tw-control > *, .tw-value, .tw-values')]
      .filter(e => e.getBoundingClientRect().width > 0
                   && e.getBoundingClientRect().right > right + 0.5)
      .map(e => `${w.dataset.widget}: ${e.className || e.tagName} ${e.getAttribute('name') || ''}`
                + ` ends at ${Math.round(e.getBoundingClientRect().right)}, card at ${Math.round(right)}`);
  })"""


def all_pages(site) -> list[str]:
    """Every page of the site but the print edition, which is laid out for paper: its figures
    are drawn 660 px wide for an A4 page (widgets/print/print.js), not for a screen."""
    out = []
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site).as_posix()
        if rel == "print" or rel.startswith("print/"):
            continue
        out.append("/" + (rel + "/" if rel != "." else ""))
    return out


def test_no_page_is_wider_than_a_360_px_phone(browser, server, built_site):
    pages = all_pages(built_site)
    assert len(pages) >= 30
    wide, past = {}, []
    with new_page(browser, **SMALL_PHONE) as page:
        for path in pages:
            page.goto(server + path, timeout=60_000)
            page.wait_for_function(SETTLED, timeout=60_000)
            page.evaluate("() => document.fonts.ready")  # KaTeX's fonts set formulas' widths
            # a mobile viewport widens itself to the page (innerWidth 467 for a 467 px page):
            # the page is measured against the phone's own 360 px
            over = page.evaluate("document.documentElement.scrollWidth") - 360
            if over > 0:
                wide[path] = over
            past += [f"{path} {p}" for p in page.evaluate(PAST_THE_CARD)]
    assert wide == {}, f"pages wider than 360 px (px too wide): {wide}"
    assert past == []
