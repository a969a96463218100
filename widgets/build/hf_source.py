"""Macros that show pieces of the *installed* `transformers`' Llama code at build time.

In a chapter's markdown, on a line of its own:

    {{ hf_source("LlamaMLP") }}
    {{ hf_source("LlamaAttention.forward") }}

becomes a Python code block holding that symbol's source, read with `inspect` from the
`modeling_llama.py` that is installed when the book is built (docstrings dropped, decorators
kept), followed by a line naming the package version, the file and line numbers, and the
file's Apache-2.0 licence. Nothing of Hugging Face's code is stored in this repository, so the
page always shows the code the parity widget actually ran against. A symbol that no longer
exists (renamed or removed in a later release) fails the build with a message naming it.
`{{ hf_info("version") }}`, `{{ hf_info("lines") }}` and the other keys of `INFO` put facts
about the installed package into prose (its version, the file's and the package's length, the
attention kernels it registers, the default kernel, the dtype of the mask each kernel is given).
`widgets/build/widget_blocks.py` expands both on every page (`MACROS`), through `widgets/build/macros.py`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap
from functools import cache
from pathlib import Path

from mkdocs.exceptions import PluginError

MODULE = "transformers.models.llama.modeling_llama"
# The symbols the book reads; tests check each still exists in the installed package.
SYMBOLS = ("LlamaRMSNorm", "LlamaDecoderLayer.forward", "LlamaAttention.forward",
           "eager_attention_forward", "repeat_kv", "LlamaMLP", "LlamaForCausalLM.forward",
           "rotate_half", "apply_rotary_pos_emb", "LlamaModel.forward")
LICENCE = "Apache License, Version 2.0"
LICENCE_URL = "https://www.apache.org/licenses/LICENSE-2.0"

SYMBOL = re.compile(r"[A-Za-z_][\w.]*")


@cache
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


@cache
def source(symbol: str) -> tuple[str, int, int]:
    """(code without docstrings, first line, last line) of `symbol` in the installed file."""
    obj = resolve(symbol)
    lines, start = inspect.getsourcelines(obj)
    code = textwrap.dedent("".join(lines))
    drop = _docstring_lines(ast.parse(code))
    kept = [line for i, line in enumerate(code.splitlines(), start=1) if i not in drop]
    return "\n".join(kept).rstrip() + "\n", start, start + len(lines) - 1


@cache
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


@cache
def package_lines() -> int:
    """Lines of Python in the whole installed `transformers` package."""
    import transformers

    root = Path(transformers.__file__).parent
    return sum(len(f.read_text(encoding="utf-8", errors="replace").splitlines())
               for f in root.rglob("*.py"))


def attention_kernels() -> list[str]:
    """The keys of the installed attention dispatch table (besides the built-in "eager")."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    return list(ALL_ATTENTION_FUNCTIONS.keys())


def default_attention() -> str:
    """What a freshly built LlamaForCausalLM (no checkpoint, no argument) reports as its kernel."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=8, hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2)
    return LlamaForCausalLM(cfg).config._attn_implementation


def mask_dtype(impl: str, padded: bool = True) -> str:
    """The dtype `create_causal_mask` returns for a (2, 5) batch under kernel `impl` ("None" if none)."""
    import torch
    from transformers import LlamaConfig
    from transformers.masking_utils import create_causal_mask

    cfg = LlamaConfig(vocab_size=8, hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2)
    cfg._attn_implementation = impl
    mask = torch.ones(2, 5, dtype=torch.long)
    if padded:
        mask[1, :2] = 0
    out = create_causal_mask(config=cfg, inputs_embeds=torch.zeros(2, 5, 8), attention_mask=mask,
                             cache=None, position_ids=torch.arange(5).expand(2, 5))
    return "None" if out is None else str(out.dtype)


INFO = {
    "version": version,
    "lines": lambda: str(len(Path(module().__file__).read_text(encoding="utf-8").splitlines())),
    "package_lines": lambda: f"{package_lines():,}",
    "attention_kernels": lambda: ", ".join(f"`{k}`" for k in attention_kernels()),
    "default_attention": lambda: f"`{default_attention()}`",
    "mask_sdpa": lambda: f"`{mask_dtype('sdpa')}`",
    "mask_sdpa_unpadded": lambda: f"`{mask_dtype('sdpa', padded=False)}`",
    "mask_eager": lambda: f"`{mask_dtype('eager')}`",
}


def info(key: str) -> str:
    """Inline facts about the installed package: see INFO for the keys."""
    if key not in INFO:
        raise PluginError(f"hf_info: unknown key {key!r}; known: {', '.join(INFO)}")
    return INFO[key]()


def source_macro(call) -> str:
    """`{{ hf_source("Symbol") }}`, on a line of its own: the symbol's code block."""
    if len(call.args) != 1 or not isinstance(call.args[0], str) or call.kwargs \
            or not SYMBOL.fullmatch(call.args[0]):
        raise PluginError('hf_source() takes one symbol of modeling_llama, e.g. "LlamaMLP"')
    if not call.alone:
        raise PluginError("hf_source() writes a code block: put it on a line of its own")
    # the call's indent is already in front of it: the block's first line keeps that one
    return render(call.args[0], call.indent)[len(call.indent):]


def info_macro(call) -> str:
    """`{{ hf_info("key") }}`: a fact about the installed package (see INFO)."""
    if len(call.args) != 1 or not isinstance(call.args[0], str) or call.kwargs:
        raise PluginError(f"hf_info() takes one key: {', '.join(INFO)}")
    return info(call.args[0])


# The macros this module serves (widgets/build/macros.py `Call` in, markdown out).
MACROS = {"hf_source": source_macro, "hf_info": info_macro}
