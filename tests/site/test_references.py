"""The book's references (widgets/build/references.py): one list, every entry cited, every
citation an entry, and a page's citation leading to the entry on the references page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from mkdocs.exceptions import PluginError

from widgets.build import macros, references

ROOT = Path(__file__).resolve().parents[2]


def _expand(text: str, where: str) -> str:
    references._PAGE["where"] = where
    return macros.expand(text, references.MACROS, where)


def test_a_citation_links_to_its_entry_from_any_depth():
    assert _expand('{{ cite("vaswani2017") }}', "chapters/scaling.md") == \
        "[Vaswani et al., 2017](../references.md#vaswani2017)"
    assert _expand('{{ cite("vaswani2017") }}', "index.md") == \
        "[Vaswani et al., 2017](references.md#vaswani2017)"
    with pytest.raises(PluginError, match="no reference 'nosuch2020'"):
        _expand('{{ cite("nosuch2020") }}', "index.md")


def test_the_list_and_the_pages_agree(tmp_path, monkeypatch, request):
    # a list of its own, so the check does not depend on what the book's list holds (the real
    # one has entries these made-up pages never cite); the cache is cleared after, so later
    # tests read the book's list again
    listed = tmp_path / "references.yml"
    listed.write_text(yaml.safe_dump({"vaswani2017": references.entries()["vaswani2017"]}))
    monkeypatch.setattr(references, "LIST", listed)
    request.addfinalizer(references.entries.cache_clear)
    docs = tmp_path / "docs"
    (docs / "chapters").mkdir(parents=True)
    (docs / "chapters" / "a.md").write_text('# A\n\nAs {{ cite("vaswani2017") }} showed.\n'
                                            '`{{ cite("incode2020") }}` is code, not a citation.\n')
    assert references.citations(docs) == {"vaswani2017": ["chapters/a.md"]}
    references.on_config({"docs_dir": str(docs)})  # every entry cited, every citation listed
    (docs / "chapters" / "a.md").write_text('# A\n\n{{ cite("vaswani2017", "nosuch2020") }}\n')
    with pytest.raises(PluginError, match="nosuch2020"):
        references.on_config({"docs_dir": str(docs)})
    (docs / "chapters" / "a.md").write_text("# A\n\nno citations\n")
    references.on_config({"docs_dir": str(docs)})  # a partial book, with no bibliography page
    (docs / "references.md").write_text("# References\n\n{{ bibliography() }}\n")
    with pytest.raises(PluginError, match="no page cites"):
        references.on_config({"docs_dir": str(docs)})


def test_every_entry_is_complete_and_every_key_cited_by_the_book():
    cited = references.citations()
    for key, entry in references.entries().items():
        assert entry["url"].startswith("https://"), key
        assert cited.get(key), f"{key} is never cited"


def test_chapters_cite_papers_rather_than_link_them_bare():
    """A paper's link in a chapter goes through cite(), so it is in the list with its authors
    and year; arXiv is the common case."""
    bare = []
    for path in sorted((ROOT / "docs").rglob("*.md")):
        for m in re.finditer(r"\]\((https://arxiv\.org/[^)]+)\)", path.read_text(encoding="utf-8")):
            bare.append(f"{path.relative_to(ROOT)}: {m.group(1)}")
    assert not bare, "cite these through docs/references.yml:\n" + "\n".join(bare)


def test_the_built_references_page_has_every_entry_and_links_back(built_site):
    html = (built_site / "references" / "index.html").read_text(encoding="utf-8")
    cited = references.citations()
    for key in references.entries():
        assert f'id="{key}"' in html, key
        for rel in cited[key]:
            back = "../" + rel.replace(".md", "/").replace("index/", "")
            assert f'href="{back}"' in html, (key, back)
    page = (built_site / "chapters" / "encoder-decoder" / "index.html").read_text(encoding="utf-8")
    assert 'href="../../references/#vaswani2017"' in page
