"""The hf_source hook: each symbol the chapter reads exists in the installed transformers, is shown
with its version and licence, and none of its code is stored in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
from widgets.build import hf_source  # noqa: E402

from widgets.build import macros  # noqa: E402
from tests.support.build import stops_the_build  # noqa: E402

CHAPTER = (ROOT / "docs/chapters/llama.md").read_text(encoding="utf-8")


def test_chapter_reads_exactly_the_declared_symbols():
    used = [call.args[0] for _, _, call in macros.calls(CHAPTER, "llama.md")
            if call.name == "hf_source"]
    assert sorted(used) == sorted(hf_source.SYMBOLS)


@pytest.mark.parametrize("symbol", hf_source.SYMBOLS)
def test_symbol_exists_and_renders(symbol):
    import transformers

    out = hf_source.render(symbol)
    assert out.startswith("```python")
    assert transformers.__version__ in out and "Apache License 2.0" in out
    name = symbol.split(".")[-1]
    assert re.search(rf"^(class|def) {name}\b", out, re.M)  # the symbol's own definition line
    assert '"""' not in out  # docstrings dropped


def test_missing_symbol_fails_the_build():
    with pytest.raises(PluginError, match="LlamaFluxCapacitor"):
        hf_source.render("LlamaFluxCapacitor")
    with pytest.raises(PluginError, match="LlamaMLP.no_such_method"):
        hf_source.render("LlamaMLP.no_such_method")


def test_expansion_and_info():
    md = 'text\n\n{{ hf_source("repeat_kv") }}\n\n{{ hf_info("version") }} {{ hf_info("lines") }}'
    out = macros.expand(md, hf_source.MACROS, "p.md")
    assert "def repeat_kv" in out and "{{" not in out
    with pytest.raises(PluginError):
        hf_source.info("nope")


def test_a_block_in_a_note_keeps_the_notes_indent():
    out = macros.expand('!!! note\n\n    {{ hf_source("repeat_kv") }}\n', hf_source.MACROS, "p.md")
    lines = out.split("\n")
    assert lines[2].startswith("    ```python") and all(not line or line.startswith("    ")
                                                       for line in lines[2:])


@pytest.mark.parametrize("markdown, message", [
    ('Inline {{ hf_source("repeat_kv") }} here', "on a line of its own"),
    ('{{ hf_source("repeat_kv", "x") }}', "takes one symbol"),
    ('{{ hf_info("nope") }}', "unknown key 'nope'"),
    ('{{ hf_info(version) }}', "cannot read"),
])
def test_mistakes_name_the_page_and_the_call(markdown, message):
    stops_the_build(lambda text: macros.expand(text, hf_source.MACROS, "chapters/llama.md"),
                    markdown, message, "chapters/llama.md")


def test_nothing_of_hugging_face_pasted_into_the_repository():
    """Distinctive lines of the installed code appear in no markdown or Python file of the book."""
    lines = {line.strip() for s in hf_source.SYMBOLS for line in hf_source.source(s)[0].splitlines()
             if len(line.strip()) > 50}
    assert lines
    for path in [*ROOT.glob("docs/**/*.md"), *ROOT.glob("backend/**/*.py")]:
        text = path.read_text(encoding="utf-8")
        pasted = [line for line in lines if line in text]
        assert not pasted, f"{path.relative_to(ROOT)} contains Hugging Face code: {pasted[:2]}"


def test_every_info_key_renders_from_the_installed_package():
    for key in hf_source.INFO:
        out = hf_source.info(key)
        assert out and "{{" not in out
    assert hf_source.package_lines() > int(hf_source.info("lines"))  # the package holds the file
