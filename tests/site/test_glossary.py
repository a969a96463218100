"""The glossary hook: first mentions link to entries that exist, and never inside code or math."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

from widgets.build import glossary  # noqa: E402

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


# ---------------------------------------------------------------- coverage (review part3 K11)

CHAPTERS = ROOT / "docs" / "chapters"
GLOSSARY_TEXT = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")


def _entries() -> dict[str, str]:
    """id -> the entry's text (heading to the next heading)."""
    parts = re.split(r"^(?=#{2,3} )", GLOSSARY_TEXT, flags=re.M)
    out = {}
    for part in parts:
        m = re.match(r"^### .+ \{#([\w-]+)\}\s*$", part.splitlines()[0]) if part else None
        if m:
            out[m.group(1)] = part
    return out


def _anchors(page: Path) -> set[str]:
    """The ids MkDocs gives a chapter's headings (Python-Markdown's toc slugify)."""
    from markdown.extensions.toc import slugify

    text = re.sub(r"^(`{3,}|~{3,}).*?^\1", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {slugify(re.sub(r"`", "", h), "-") for h in re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)}


# Terms a reader of Part III meets, and the id whose entry must define them.
PART_III = {"prefill": "prefill", "decode": "decode", "memory-bound": "memory-bound",
            "compute-bound": "memory-bound", "arithmetic intensity": "arithmetic-intensity",
            "FlashAttention": "flashattention", "prefix caching": "prefix-caching",
            "paged attention": "paged-attention", "PagedAttention": "paged-attention",
            "KV cache": "kv-cache", "continuous batching": "continuous-batching",
            "memory bandwidth": "memory-bandwidth", "fused kernel": "fused-kernel",
            "RAG": "rag", "GiB": "gib", "FLOPs": "flop", "tensor parallelism": "tensor-parallelism"}


@pytest.mark.parametrize("term, ident", sorted(PART_III.items()))
def test_part_three_terms_have_entries(term, ident):
    assert (term, ident) in TERMS or (term.lower(), ident) in {(f.lower(), i) for f, i in TERMS}


def test_every_entry_links_to_a_chapter_section_that_exists():
    """Each definition sends the reader to the chapter that teaches it; a renamed heading fails
    here rather than leaving a link that lands at the top of a page."""
    entries = _entries()
    assert len(entries) >= 60
    for ident, text in entries.items():
        links = re.findall(r"\]\((chapters/[\w.-]+\.md)(?:#([\w-]+))?\)", text)
        assert links, f"glossary entry {ident} links to no chapter"
        for target, anchor in links:
            page = ROOT / "docs" / target
            assert page.is_file(), f"{ident}: {target} does not exist"
            if anchor:
                assert anchor in _anchors(page), f"{ident}: no heading #{anchor} in {target}"


def test_kv_cache_entry_points_at_the_kv_cache_chapter():
    assert "(chapters/kv-cache.md)" in _entries()["kv-cache"]


@pytest.mark.parametrize("chapter, idents", [
    ("kv-cache.md", {"kv-cache", "prefill", "decode", "memory-bound", "arithmetic-intensity"}),
    ("cost.md", {"flashattention", "fused-kernel", "flop"}),
    ("decode-time.md", {"ridge-point", "ttft", "tpot", "chunked-prefill", "speculative-decoding",
                         "continuous-batching", "arithmetic-intensity", "memory-bound",
                         "memory-bandwidth", "decode", "prefill"}),
    ("serving.md", {"prefix-caching", "rag", "gib", "memory-bandwidth", "fragmentation",
                    "decode", "prefill"}),
    ("paged-kv.md", {"block-table", "copy-on-write", "sliding-window-attention",
                     "latent-attention", "fragmentation", "paged-attention"}),
    ("families.md", {"paged-attention", "next-token-prediction", "masked-language-modelling",
                     "pipeline-parallelism", "sequence-parallelism"}),
    ("model.md", {"tensor-parallelism", "greedy-decoding", "embedding", "tokenizer"}),
])
def test_the_hook_links_the_new_terms_in_the_chapters_that_use_them(chapter, idents):
    """Run on the chapter's own source, as the build does: each term's first mention links."""
    md = (CHAPTERS / chapter).read_text(encoding="utf-8")
    out = glossary.link_first_mentions(md, TERMS, "../glossary.md")
    linked = set(re.findall(r"\]\(\.\./glossary\.md#([\w-]+)\)", out))
    assert idents <= linked, f"{chapter}: not linked: {sorted(idents - linked)}"
    assert len(re.findall(r"\]\(\.\./glossary\.md#", out)) == len(linked)  # once per page


def test_batching_in_the_rnn_chapter_is_not_linked_to_continuous_batching():
    """'Batching' there means running sequences side by side, not the serving technique."""
    md = (CHAPTERS / "recurrence.md").read_text(encoding="utf-8")
    assert "continuous-batching" not in glossary.link_first_mentions(md, TERMS, "g.md")
