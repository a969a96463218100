"""The reading line between 960 and 1219 px (issue 33, UX review H8), in Chromium: Material
shows the navigation beside the text there but not the table of contents, and the text ran
the rest of the width (926 px at 1200 px, about 104 characters a line; 726 px, about 82, at
1000). A chapter's paragraphs keep about 70-80 characters a line, and
its widgets keep the column's full width: the figures do not shrink with the text.

Characters a line: a paragraph's width over the mean advance of its own characters in its own
font (canvas measureText), the median over the chapter's long paragraphs."""

from __future__ import annotations

import pytest

from tests.support.browser import new_page

pytestmark = pytest.mark.browser

CHAPTER = "/chapters/cost/"

MEASURE = """() => {
  const ctx = document.createElement('canvas').getContext('2d');
  const article = document.querySelector('.md-content__inner');
  const cs = getComputedStyle(article);
  const column = article.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  const lines = [...article.querySelectorAll(':scope > p')]
    .filter(p => p.textContent.trim().length > 300)
    .map(p => { const s = getComputedStyle(p);
      ctx.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
      const text = p.textContent.replace(/\\s+/g, ' ').trim();
      return p.clientWidth / (ctx.measureText(text).width / text.length); })
    .sort((a, b) => a - b);
  const text = Math.max(...[...article.querySelectorAll(':scope > p')].map(p => p.clientWidth));
  const widgets = [...article.querySelectorAll(':scope > .tw-widget')]
    .map(w => w.getBoundingClientRect().width);
  return {column, text, median: lines[Math.floor(lines.length / 2)], n: lines.length, widgets};
}"""


@pytest.mark.parametrize("width", [1000, 1200])
def test_a_chapter_reads_at_about_75_characters_a_line_and_its_figures_keep_the_column(
        browser, server, width):
    with new_page(browser, viewport={"width": width, "height": 900}) as page:
        page.goto(server + CHAPTER)
        page.evaluate("() => document.fonts.ready")
        got = page.evaluate(MEASURE)
    assert got["n"] >= 5, got
    assert 68 <= got["median"] <= 80, got
    assert got["widgets"], got
    # the widgets take the whole column, wider than the text
    assert all(abs(w - got["column"]) <= 1 for w in got["widgets"]), got
    assert got["column"] >= got["text"] + 50, got  # and wider than the capped text
