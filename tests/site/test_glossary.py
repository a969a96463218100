"""The glossary hook: first mentions link to entries that exist, and never inside code or math."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "widgets"))

import glossary  # noqa: E402

TERMS = glossary.parse((ROOT / "docs" / "glossary.md").read_text(encoding="utf-8"))


def test_every_entry_has_an_id_and_the_aliases_resolve_to_entries():
    text = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    ids = set(re.findall(r"^### .+ \{#([\w-]+)\}$", text, re.M))
    assert len(ids) >= 20
    assert {ident for _, ident in TERMS} <= ids


def test_only_the_first_mention_links_and_code_math_links_are_untouched():
    md = ("A softmax here, and a softmax again.\n"
          "`softmax` in code, \\(\\text{softmax}\\) in math, [softmax](x.md) linked.\n"
          "```python\nsoftmax = 1\n```\n"
          "# A softmax heading\n")
    out = glossary.link_first_mentions(md, TERMS, "../glossary.md")
    assert out.count("](../glossary.md#softmax)") == 1
    assert out.startswith("A [softmax](../glossary.md#softmax) here, and a softmax again.")
    assert "`softmax` in code, \\(\\text{softmax}\\) in math, [softmax](x.md) linked." in out
    assert "softmax = 1" in out and "# A softmax heading" in out


def test_formulas_that_span_lines_are_not_linked_into():
    md = "The width \\(h \\cdot\nd_k\\) and the KV cache.\n"
    out = glossary.link_first_mentions(md, [("d_k", "x"), ("KV cache", "kv-cache")], "g.md")
    assert "\\(h \\cdot\nd_k\\)" in out and "[KV cache](g.md#kv-cache)" in out


def test_built_chapters_link_to_glossary_entries_that_exist(built_site):
    glossary_html = (built_site / "glossary" / "index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="([\w-]+)"', glossary_html))
    linked = 0
    for page in (built_site / "chapters").glob("*/index.html"):
        for ident in re.findall(r'href="\.\./\.\./glossary/#([\w-]+)"', page.read_text(encoding="utf-8")):
            assert ident in ids, f"{page.parent.name} links to a missing glossary entry {ident}"
            linked += 1
    assert linked >= 20
