"""One name for each exercise (review P10): the navigation, the notebook's own heading
('Exercise: …') and the home page's list say the same title; the home page names no handout."""

from __future__ import annotations

import json
import re
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


def test_the_home_page_lists_every_chapter_in_the_navs_order():
    """The home page's numbered list of chapters is the nav's Parts, in order, numbered 1 to N
    (it once left out the training chapter, which the nav had)."""
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)["nav"]
    chapters = [path for item in nav if isinstance(item, dict)
                for section, entries in item.items() if section.startswith("Part ")
                for entry in entries for path in entry.values()]
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    listed = re.findall(r"^(\d+)\. \[[^\]]+\]\((chapters/[\w-]+\.md)\)", home, re.M)
    assert [path for _, path in listed] == chapters
    assert [int(n) for n, _ in listed] == list(range(1, len(chapters) + 1))
