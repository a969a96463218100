"""Each chapter's reading length (widgets/build/reading.py), measured at build time and shown on
the instructors' page."""

from __future__ import annotations

import re
from pathlib import Path

from widgets.build import reading


def test_the_reading_line_leaves_out_code_figures_and_notes():
    md = "\n".join([
        "# Title here",
        "One two three {{ value(\"w\", \"x\", fmt=\".2f\") }} four \\(a + b = c\\).",
        "```python",
        "not counted at all",
        "```",
        "```widget",
        "name: scaling",
        "```",
        '??? note "For instructors"',
        "",
        "    five six seven",
        "",
        "Back on the line: [eight](https://example.org/a/b) nine.",
    ])
    line, side = reading.split(md)
    # Title here / One two three N four M / Back on the line eight nine
    assert reading.words(line) == 2 + 6 + 6
    assert reading.words(side) == 3 + 3  # the title words "note", "For", "instructors" and 3
    assert "not counted" not in line + side and "scaling" not in line + side


def test_a_fence_closes_only_on_its_own_mark():
    line, _ = reading.split("a b\n````markdown\n```python\nx\n```\n````\nc d")
    assert reading.words(line) == 4


def test_the_instructors_page_shows_every_chapter_measured(built_site):
    html = (built_site / "instructors" / "index.html").read_text(encoding="utf-8")
    table = html.split('id="how-long-each-chapter-is"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<a href="\.\./chapters/([a-z-]+)/">[^<]*</a></td>\s*<td[^>]*>([\d,]+)</td>', table)
    docs = Path(__file__).resolve().parents[2] / "docs" / "chapters"  # recomputed from the sources
    assert len(rows) >= 18
    for slug, shown in rows:
        assert int(shown.replace(",", "")) == reading.measure(docs / f"{slug}.md")["line"], slug
