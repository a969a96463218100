"""How long each chapter is to read, measured from its markdown when the book is built.

    {{ reading_lengths() }}   ->  a table: each chapter of the nav, the words of its reading
                                  line, the words in its notes and collapsibles, minutes to read

The *reading line* is what a student reads straight through: the prose, tables and headings,
outside code, figures and widgets (fenced blocks) and outside admonitions and collapsibles
(`!!!` / `???` blocks: instructors' notes, "Going further", answers). A computed number
(`{{ value(...) }}`) or an inline formula counts as one word. Minutes assume 200 words a
minute, a common figure for careful reading of technical text.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.exceptions import PluginError

from widgets.build import figures

WORDS_PER_MINUTE = 200
FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
ADMONITION = re.compile(r"^(!!!|\?\?\?\+?)[ \t]")
TITLE = re.compile(r"^# (.+)$", re.M)
_STRIP = (
    (re.compile(r"\{\{.*?\}\}", re.S), " N "),            # a computed value: one word
    (re.compile(r"\\\(.*?\\\)", re.S), " M "),            # inline maths: one word
    (re.compile(r"\\\[.*?\\\]", re.S), " "),              # display maths: read, not counted
    (re.compile(r"<!--.*?-->", re.S), " "),
    (re.compile(r"\]\([^)]*\)"), "]"),                    # a link's target
    (re.compile(r"\{[^}\n]*#[^}\n]*\}"), " "),             # attribute lists: { #id ... }
)
WORD = re.compile(r"[A-Za-z0-9][\w'’.,%-]*")


def split(markdown: str) -> tuple[str, str]:
    """(reading line, notes and collapsibles) of a chapter's markdown; fenced blocks in neither."""
    line, side = [], []
    lines = markdown.splitlines()
    i, in_note = 0, False
    while i < len(lines):
        text = lines[i]
        if in_note and (not text.strip() or text.startswith(("    ", "\t"))):
            side.append(text)
            i += 1
            continue
        in_note = False
        fence = FENCE.match(text)
        if fence:  # skip to the closing fence of the same kind and at least the same length
            mark = fence.group(1)
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(mark):
                i += 1
            i += 1
            continue
        if ADMONITION.match(text):
            in_note = True
            side.append(text)
        else:
            line.append(text)
        i += 1
    return "\n".join(line), "\n".join(side)


def words(markdown: str) -> int:
    for pattern, replacement in _STRIP:
        markdown = pattern.sub(replacement, markdown)
    return len(WORD.findall(markdown))


def measure(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    line, side = split(text)
    title = TITLE.search(text)
    return {"title": title.group(1).strip() if title else path.stem,
            "line": words(line), "side": words(side)}


def table(config) -> str:
    docs = Path(config["docs_dir"])
    rows = ["| chapter | reading line (words) | notes and collapsibles (words) | minutes |",
            "|---|---:|---:|---:|"]
    total = 0
    chapters = figures.chapter_files(config)
    if not chapters:
        raise PluginError("reading_lengths(): the nav has no chapters")
    for rel in chapters:
        m = measure(docs / rel)
        total += m["line"]
        link = Path(rel).relative_to("chapters").as_posix()
        rows.append(f"| [{m['title']}](chapters/{link}) | {m['line']:,} | {m['side']:,} | "
                    f"{m['line'] / WORDS_PER_MINUTE:.0f} |")
    rows.append(f"| **all {len(chapters)} chapters** | **{total:,}** | | "
                f"**{total / WORDS_PER_MINUTE / 60:.1f} h** |")
    return "\n".join(rows)


def macros(config) -> dict:
    def reading_lengths(call) -> str:
        if call.args or call.kwargs:
            raise PluginError("reading_lengths() takes no arguments")
        return table(config)

    return {"reading_lengths": reading_lengths}
