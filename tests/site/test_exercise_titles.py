"""One name for each exercise (review P10): the navigation, the notebook's own heading
('Exercise: …') and the home page's list say the same title; the home page names no handout."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _exercises() -> dict[str, str]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)  # !ENV and friends
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)["nav"]
    section = next(item["Exercises"] for item in nav if isinstance(item, dict) and "Exercises" in item)
    return {path: title for entry in section for title, path in entry.items()}


def _heading(path: str) -> str:
    nb = json.loads((ROOT / "docs" / path).read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    return "".join(cell["source"]).split("\n", 1)[0]


def _same(a: str, b: str) -> bool:  # a title may start a sentence or follow "Exercise: "
    return a[:1].lower() == b[:1].lower() and a[1:] == b[1:]


def test_every_exercise_has_one_title():
    exercises = _exercises()
    assert len(exercises) >= 15
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for path, title in exercises.items():
        heading = _heading(path)
        assert heading.startswith("# Exercise: ") and _same(heading[len("# Exercise: "):], title), \
            (path, heading, title)
        listed = re.search(r"- \[([^\]]+)\]\(" + re.escape(path) + r"\)", home)
        assert listed and listed.group(1) == title, (path, listed and listed.group(1), title)


def test_the_home_page_names_no_handout():
    assert "LLM-101" not in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")


def _chapters_in_nav() -> list[str]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)["nav"]
    return [path for item in nav if isinstance(item, dict)
            for section, entries in item.items() if section.startswith("Part ")
            for entry in entries for path in entry.values()]


# The home page's chapter lists as written: a Markdown list ("8. [Title](chapters/x.md)") for a
# Part that starts at 1, an HTML list (`<ol start="8" markdown>` of `<li markdown="span">`) for
# the others, since Python-Markdown renders every Markdown list from 1.
_LIST = re.compile(r'^(?:(?P<md>\d+)\. |<li markdown="span">)\[[^\]]+\]\((?P<path>chapters/[\w-]+\.md)\)'
                   r'|^<ol start="(?P<start>\d+)" markdown>', re.M)


def test_the_home_page_lists_every_chapter_in_the_navs_order():
    """The home page's numbered list of chapters is the nav's Parts, in order, numbered 1 to N
    (it once left out the training chapter, which the nav had)."""
    chapters = _chapters_in_nav()
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    listed, number = [], None
    for m in _LIST.finditer(home):
        if m["start"]:
            number = int(m["start"])
        elif m["md"]:
            listed.append((int(m["md"]), m["path"]))
        else:
            assert number is not None, f"{m['path']} is in no <ol start=...>"
            listed.append((number, m["path"]))
            number += 1
    assert [path for _, path in listed] == chapters
    assert [n for n, _ in listed] == list(range(1, len(chapters) + 1))


class _Lists(HTMLParser):
    """The chapter links of each `<ol>` of a page, with the number the browser shows beside
    each: the list's `start` (1 without one) plus the item's place."""

    def __init__(self):
        super().__init__()
        self.shown: list[tuple[int, str]] = []
        self._lists: list[list[int]] = []  # per open <ol>: [next number]

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "ol":
            self._lists.append([int(attrs.get("start") or 1)])
        elif tag == "li" and self._lists:
            self._lists[-1].append(self._lists[-1][0])
            self._lists[-1][0] += 1
        elif tag == "a" and self._lists and len(self._lists[-1]) > 1:
            href = attrs.get("href") or ""
            m = re.match(r"(chapters/[\w-]+)/$", href)
            if m and not any(p == m[1] + ".md" for _, p in self.shown):
                self.shown.append((self._lists[-1][-1], m[1] + ".md"))

    def handle_endtag(self, tag):
        if tag == "ol" and self._lists:
            self._lists.pop()


def test_the_built_home_page_numbers_its_chapters_1_to_n(built_site):
    """What the reader sees: each chapter's number in the rendered lists (an `<ol>`'s `start`
    and the item's place) runs 1 to N in the nav's order. Python-Markdown drops a Markdown
    list's first number, so Parts II and III once read 1, 2, 3 ... again."""
    page = _Lists()
    main = (built_site / "index.html").read_text(encoding="utf-8")
    page.feed(main[main.index('<article'):main.index('</article>')])
    chapters = _chapters_in_nav()
    assert page.shown == list(zip(range(1, len(chapters) + 1), chapters))
