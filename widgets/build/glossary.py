"""MkDocs hook: the first mention of a glossary term on each page links to its entry.

The glossary (`docs/glossary.md`) is the one list of terms: each entry is a `### Term {#id}`
heading, optionally followed by an `aliases: a, b` line naming other spellings. This hook reads
it once per build and, on every other markdown page, turns the first mention of each term in
running prose into a link to `glossary.md#id`. Code, math, links, headings, admonition titles,
HTML and `{{ value(...) }}` calls are never touched. On the glossary page itself the aliases
line is shown as "Also: ...".
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

GLOSSARY = "glossary.md"
ENTRY = re.compile(r"^### (?P<term>.+?) \{#(?P<id>[\w-]+)\}\s*$")
ALIASES = re.compile(r"^aliases:\s*(?P<names>.+)$")
# Spans a link must never be put inside (one line at a time).
PROTECTED = re.compile(
    r"(`[^`]*`"                      # inline code
    r"|\\\(.*?\\\)|\\\[.*?\\\]"      # inline and one-line display math
    r"|\$[^$]*\$"                    # notebook-style math
    r"|!?\[[^\]]*\]\([^)]*\)"        # links and images
    r"|\[[^\]]*\]"                   # reference links, footnote marks
    r"|\{\{.*?\}\}"                  # computed numbers
    r"|<[^>]+>"                      # HTML tags
    r"|https?://\S+"                 # bare URLs
    r"|\{[^}]*\})"                   # attribute lists, ids
)

_terms: list[tuple[str, str]] = []  # (surface form, id), longest first


def parse(text: str) -> list[tuple[str, str]]:
    """(surface form, id) pairs from the glossary's markdown, longest forms first."""
    found, current = [], None
    for line in text.splitlines():
        m = ENTRY.match(line)
        if m:
            current = m["id"]
            # A heading like "Query, key, value" is a title, not a phrase prose uses.
            if "," not in m["term"]:
                found.append((m["term"], current))
            continue
        a = ALIASES.match(line)
        if a and current:
            found += [(name.strip(), current) for name in a["names"].split(",") if name.strip()]
    return sorted(set(found), key=lambda t: -len(t[0]))


def _pattern(form: str) -> re.Pattern:
    # Acronyms and names with capitals match as written; plain words in any case.
    flags = 0 if any(c.isupper() for c in form[1:]) or form.isupper() else re.I
    return re.compile(rf"(?<![\w-]){re.escape(form)}(?![\w-])", flags)


def link_first_mentions(markdown: str, terms: list[tuple[str, str]], href: str) -> str:
    patterns = [(ident, _pattern(form)) for form, ident in terms]
    done: set[str] = set()

    def link(segment: str) -> str:
        """Link the earliest not-yet-linked term in free text, then keep scanning after it."""
        out, pos = "", 0
        while True:
            best = None
            for ident, pat in patterns:
                if ident in done:
                    continue
                m = pat.search(segment, pos)
                if m and (best is None or m.start() < best[0].start()):
                    best = (m, ident)  # ties keep the longer form: patterns are longest first
            if best is None:
                return out + segment[pos:]
            m, ident = best
            out += segment[pos:m.start()] + f"[{m.group(0)}]({href}#{ident})"
            pos = m.end()
            done.add(ident)

    out, fence, display_math, inline_math = [], None, False, False
    for line in markdown.splitlines(keepends=True):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if fence:
            if marker and stripped.startswith(fence):
                fence = None
        elif marker:
            fence = marker.group(1)
        elif display_math:
            display_math = "\\]" not in stripped
        elif stripped.startswith("\\["):
            display_math = "\\]" not in stripped
        elif stripped.strip() and not stripped.startswith(
                ("#", "!!!", "???", "--8<--", "<", "aliases:", "*Also:*")):
            head = ""
            if inline_math:  # inside \( ... \) that began on an earlier line
                end = line.find("\\)")
                if end < 0:
                    out.append(line)
                    continue
                head, line, inline_math = line[:end + 2], line[end + 2:], False
            tail = ""
            pieces = PROTECTED.split(line)
            last = pieces[-1]
            if "\\(" in last:  # an inline formula that goes on to the next line
                cut = last.index("\\(")
                pieces[-1], tail, inline_math = last[:cut], last[cut:], True
            pieces[0::2] = [link(p) for p in pieces[0::2]]  # even pieces are free text
            line = head + "".join(pieces) + tail
        out.append(line)
    return "".join(out)


def on_config(config):
    global _terms
    path = Path(config["docs_dir"]) / GLOSSARY
    _terms = parse(path.read_text(encoding="utf-8")) if path.is_file() else []
    return config


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    if src == GLOSSARY:
        return re.sub(r"^aliases:\s*(.+)$", r"*Also:* \1<br>", markdown, flags=re.M)
    if not src.endswith(".md") or not _terms:
        return markdown
    href = posixpath.relpath(GLOSSARY, posixpath.dirname(src) or ".")
    return link_first_mentions(markdown, _terms, href)
