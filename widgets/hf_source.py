"""MkDocs hook: shows pieces of the *installed* `transformers`' Llama code at build time.

In a chapter's markdown, on a line of its own:

    {{ hf_source("LlamaMLP") }}
    {{ hf_source("LlamaAttention.forward") }}

becomes a Python code block holding that symbol's source, read with `inspect` from the
`modeling_llama.py` that is installed when the book is built (docstrings dropped, decorators
kept), followed by a line naming the package version, the file and line numbers, and the
file's Apache-2.0 licence. Nothing of Hugging Face's code is stored in this repository, so the
page always shows the code the parity widget actually ran against. A symbol that no longer
exists (renamed or removed in a later release) fails the build with a message naming it.
`{{ hf_info("version") }}` and `{{ hf_info("lines") }}` put the installed version and the
file's length into prose.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap
from functools import lru_cache
from pathlib import Path

from mkdocs.exceptions import PluginError

MODULE = "transformers.models.llama.modeling_llama"
# The symbols the book reads; tests check each still exists in the installed package.
SYMBOLS = ("LlamaRMSNorm", "LlamaDecoderLayer.forward", "LlamaAttention.forward",
           "eager_attention_forward", "repeat_kv", "LlamaMLP", "LlamaForCausalLM.forward")
LICENCE = "Apache License, Version 2.0"
LICENCE_URL = "https://www.apache.org/licenses/LICENSE-2.0"

HF_SOURCE_CALL = re.compile(r'^(?P<indent>[ \t]*)\{\{\s*hf_source\(\s*"(?P<symbol>[A-Za-z_][\w.]*)"\s*\)\s*\}\}[ \t]*$',
                            re.M)


@lru_cache(maxsize=None)
def module():
    return importlib.import_module(MODULE)


def version() -> str:
    import transformers

    return transformers.__version__


def resolve(symbol: str):
    """`LlamaAttention.forward` -> the function object (decorators unwrapped); PluginError if gone."""
    obj = module()
    for part in symbol.split("."):
        if not hasattr(obj, part):
            raise PluginError(
                f"hf_source: {symbol!r} is not in the installed transformers {version()} "
                f"({MODULE}); the chapter reads a symbol this release no longer has")
        obj = getattr(obj, part)
    return inspect.unwrap(obj)


def _docstring_lines(tree: ast.AST) -> set[int]:
    """1-based line numbers of every docstring in the parsed source."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


@lru_cache(maxsize=None)
def source(symbol: str) -> tuple[str, int, int]:
    """(code without docstrings, first line, last line) of `symbol` in the installed file."""
    obj = resolve(symbol)
    lines, start = inspect.getsourcelines(obj)
    code = textwrap.dedent("".join(lines))
    drop = _docstring_lines(ast.parse(code))
    kept = [line for i, line in enumerate(code.splitlines(), start=1) if i not in drop]
    return "\n".join(kept).rstrip() + "\n", start, start + len(lines) - 1


@lru_cache(maxsize=None)
def licence_header() -> str:
    """The installed file's copyright line; PluginError if the file no longer says Apache-2.0."""
    head = Path(module().__file__).read_text(encoding="utf-8")[:2000]
    if LICENCE not in head:
        raise PluginError(f"hf_source: {MODULE} no longer states the {LICENCE} in its header; "
                          "check its licence before the book shows it")
    match = re.search(r"^# (Copyright .*?)(?: All rights reserved\.)?$", head, re.M)
    return match.group(1).rstrip(".") if match else "Copyright the HuggingFace Inc. team"


def render(symbol: str, indent: str = "") -> str:
    code, first, last = source(symbol)
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", code)), default=0))
    title = f"transformers {version()} · modeling_llama.py · {symbol}"
    attribution = (f'<p class="hf-source-credit"><small>Read from the installed <code>transformers</code> '
                   f"{version()}, <code>models/llama/modeling_llama.py</code>, lines {first}–{last} "
                   f"(docstrings omitted). {licence_header()}; licensed under the "
                   f'<a href="{LICENCE_URL}">Apache License 2.0</a>.</small></p>')
    block = [f'{fence}python title="{title}"', *code.rstrip("\n").split("\n"), fence, "", attribution]
    return "\n".join(indent + line if line else line for line in block)


HF_INFO_CALL = re.compile(r'\{\{\s*hf_info\(\s*"(?P<key>\w+)"\s*\)\s*\}\}')


def info(key: str) -> str:
    """Inline facts about the installed file: `version` or `lines` (its length)."""
    if key == "version":
        return version()
    if key == "lines":
        return str(len(Path(module().__file__).read_text(encoding="utf-8").splitlines()))
    raise PluginError(f"hf_info: unknown key {key!r}; known: version, lines")


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = HF_SOURCE_CALL.sub(lambda m: render(m.group("symbol"), m.group("indent")), markdown)
    return HF_INFO_CALL.sub(lambda m: info(m.group("key")), markdown)
