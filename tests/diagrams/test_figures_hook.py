"""The build hook that places diagrams, numbers figures and gathers the appendices."""

from __future__ import annotations

from types import SimpleNamespace

import markdown as md_lib
import pytest
from mkdocs.exceptions import PluginError

from tests.support.build import stops_the_build
from widgets.build import figures, macros

NAV = [{"Home": "index.md"},
       {"Part I": [{"One": "chapters/one.md"}, {"Two": "chapters/two.md"}]},
       {"Appendices": [{"A": "chapters/corrections.md"}]}]


def page(src: str, url: str):
    return SimpleNamespace(file=SimpleNamespace(src_uri=src), url=url)


class Files:
    def __init__(self, *paths):
        self.urls = {p: (p[:-3] + "/" if p != "index.md" else "") for p in paths}

    def get_file_from_path(self, path):
        return SimpleNamespace(url=self.urls[path]) if path in self.urls else None


def to_html(markdown: str, p, config) -> str:
    """The page's markdown as MkDocs renders it: the macros, then Markdown with the diagram
    fence (a fresh Markdown instance per page, as MkDocs makes)."""
    text = figures.on_page_markdown(markdown, p, config, None)
    text = macros.expand(text, figures.macros(config), p.file.src_uri)
    return md_lib.Markdown(extensions=["pymdownx.superfences"], extension_configs={
        "pymdownx.superfences": {"custom_fences": macros.custom_fences(figures.FENCES)}}).convert(text)


def render(markdown: str, src="chapters/two.md", url="chapters/two/", docs_dir="docs"):
    config = {"nav": NAV, "docs_dir": docs_dir}
    p = page(src, url)
    md = to_html(markdown, p, config)
    files = Files("index.md", "chapters/one.md", "chapters/two.md", "chapters/model.md",
                  "chapters/block.md", "chapters/self-attention.md", "chapters/masks.md",
                  "chapters/scaling.md", "chapters/positions.md", "chapters/kv-cache.md",
                  "chapters/heads.md")
    return figures.on_page_content(md, p, config, files)


WIDGET = '<div class="tw-widget" data-widget="mlp" id="widget-mlp" data-key="mlp"></div>'
BLOCK = "```diagram\nname: model_map\nconfig: {preset: %s}\nid: %s\ncaption: The `model`.\n```\n"


def test_figures_are_numbered_in_page_order_with_the_chapters_number():
    out = render(BLOCK % ("book", "a") + "\n" + WIDGET + "\n\n" + BLOCK % ("llama-3-8b", "b")
                 + '\nSee {{ fig("b") }} and {{ fig("mlp") }}.')
    assert '<span class="tw-fignum">Figure 2.1</span> The <code>model</code>.' in out
    assert 'id="widget-mlp" data-fig="Figure 2.2"' in out
    assert '<span class="tw-fignum">Figure 2.3</span>' in out
    assert '<a class="tw-figref" href="#fig-b">Figure 2.3</a>' in out
    assert '<a class="tw-figref" href="#widget-mlp">Figure 2.2</a>' in out


def test_a_wide_widget_is_numbered_like_any_other():
    """A widget with a class beside tw-widget (tw-wide, on a heatmap) lost its number."""
    wide = WIDGET.replace('class="tw-widget"', 'class="tw-widget tw-wide"')
    out = render(BLOCK % ("book", "a") + "\n" + wide + '\nSee {{ fig("mlp") }}.')
    assert 'id="widget-mlp" data-fig="Figure 2.2"' in out
    assert '<a class="tw-figref" href="#widget-mlp">Figure 2.2</a>' in out


def test_pages_outside_the_chapters_number_from_one():
    out = render(BLOCK % ("book", "map"), src="index.md", url="")
    assert '<span class="tw-fignum">Figure 1</span>' in out
    assert 'href="chapters/block/#from-layernorm-to-rmsnorm"' in out   # doc: links, from the root


def test_doc_links_are_relative_to_the_page():
    out = render(BLOCK % ("book", "map"))
    assert 'href="../block/#from-layernorm-to-rmsnorm"' in out
    assert 'href="../masks/"' in out and "doc:" not in out


def test_the_figure_has_an_accessible_name_and_a_text_description():
    out = render(BLOCK % ("book", "map"))
    # the map has links: a group, not an image, so that a screen reader reaches them
    assert 'role="group"' in out and 'aria-labelledby="fig-map-title"' in out
    assert '<desc id="fig-map-desc">The decoder-only model' in out
    assert "<summary>Text description</summary>" in out


@pytest.mark.parametrize("markdown, message", [
    ("```diagram\nname: nope\ncaption: x\n```\n", "no diagram 'nope'"),
    ("```diagram\nname: model_map\n```\n", "needs `name:` and `caption:`"),
    ("```diagram\nname: model_map\ncaption: x\ncolour: red\n```\n", "unknown key"),
    ("```diagram\nname: model_map\nconfig: {layers: 3}\ncaption: x\n```\n", "does not take"),
    (BLOCK % ("book", "a") + BLOCK % ("book", "a"), "share the id"),
    ('{{ fig("nothing") }}', "names no figure"),
    ('{{ fig("a b") }}', "takes one figure id"),
    ('{{ collected("everything") }}', "takes one of 'sources', 'compute'"),
    ("```diagram\nname: [unclosed\n```\n", "not valid YAML"),
])
def test_mistakes_stop_the_build_with_a_reason(markdown, message):
    stops_the_build(render, markdown, message, "chapters/two.md")


def test_a_link_to_a_page_that_is_not_there_stops_the_build():
    class Nowhere(Files):
        def get_file_from_path(self, path):
            return None
    config = {"nav": NAV, "docs_dir": "docs"}
    p = page("chapters/two.md", "chapters/two/")
    md = to_html(BLOCK % ("book", "a"), p, config)
    with pytest.raises(PluginError, match="not a page of the book"):
        figures.on_page_content(md, p, config, Nowhere())


def test_the_appendices_gather_each_chapters_notes_and_machinery(tmp_path):
    docs = tmp_path / "docs"
    (docs / "chapters/_compute").mkdir(parents=True)
    (docs / "chapters/one.md").write_text(
        "# Chapter one\n\nText.\n\n??? note \"Notes on the sources (for instructors)\"\n"
        "    | Source | It says | What is true |\n    |---|---|---|\n    | h | 3 | 4 |\n\n"
        "    See [the section](#the-math).\n\nAfter the note.\n")
    (docs / "chapters/two.md").write_text("# Chapter two\n\nNo notes.\n")
    (docs / "chapters/_compute/two.md").write_text("### Timing\n\nFastest of 7 runs.\n")
    config = {"nav": NAV, "docs_dir": str(docs)}
    sources = figures.collected("sources", config)
    assert sources.startswith("## [Chapter one](one.md)\n\n| Source | It says | What is true |")
    assert "[the section](one.md#the-math)" in sources
    assert "After the note" not in sources and "Chapter two" not in sources
    compute = figures.collected("compute", config)
    assert compute.startswith("## [Chapter two](two.md)\n\n### Timing")


def test_two_source_notes_in_one_chapter_are_refused(tmp_path):
    docs = tmp_path / "docs"
    (docs / "chapters").mkdir(parents=True)
    note = '??? note "Notes on the sources"\n    x\n\n'
    (docs / "chapters/one.md").write_text("# One\n\n" + note + note)
    (docs / "chapters/two.md").write_text("# Two\n")
    with pytest.raises(PluginError, match="more than one"):
        figures.collected("sources", {"nav": NAV, "docs_dir": str(docs)})


def test_a_diagram_block_shown_as_code_is_not_drawn():
    shown = "````markdown\n" + BLOCK % ("book", "a") + "````\n\nIn prose: `{{ fig(\"a\") }}`.\n"
    out = render(shown)
    assert "<figure" not in out and "```diagram" in out and 'tw-figref' not in out
    assert '<code>{{ fig("a") }}</code>' in out


def test_the_gathered_appendix_reads_the_chapters_macros(tmp_path):
    """What collected() gathers is itself read for macros (the appendix quotes values)."""
    docs = tmp_path / "docs"
    (docs / "chapters/_compute").mkdir(parents=True)
    (docs / "chapters/one.md").write_text("# One\n")
    (docs / "chapters/two.md").write_text("# Two\n")
    (docs / "chapters/_compute/two.md").write_text('See {{ fig("x") }}, not `{{ fig("y") }}`.\n')
    handlers = figures.macros({"nav": NAV, "docs_dir": str(docs)})
    out = macros.expand('{{ collected("compute") }}', handlers, "chapters/how.md")
    assert '<a class="tw-figref" data-ref="x"></a>' in out and '`{{ fig("y") }}`' in out
