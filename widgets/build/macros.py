"""The book's one reader of `{{ name(args) }}` macros, and of where fenced code lies.

A chapter writes computed facts into its prose with macro calls:

    {{ value("attention_scaling", "var_unscaled", fmt=".1f", d_k=64) }}   widgets/build/widget_blocks.py
    {{ hf_source("LlamaMLP") }}   {{ hf_info("version") }}              widgets/build/hf_source.py
    {{ fig("map") }}   {{ collected("sources") }}                         widgets/build/figures.py

`expand()` finds every call outside fenced code blocks (``` and ~~~ fences, at any indent, so
inside admonitions and lists too) and outside inline code spans, reads its arguments once as
Python literals, and hands it to the handler registered under its name. So a page can show the
syntax itself: `{{ value("x", "y") }}` in backticks, or a widget fence inside a ````markdown
fence, reaches the reader as written. An unknown name, arguments that are not literals, or a
handler's refusal stops the build with a message naming the page and the call.

`fences()` lists a page's outermost fenced blocks with their language and body, by the rules
pymdownx.superfences renders them by (the closing fence repeats the opening one exactly, at the
same indent), for the hooks that need to know where a widget block sits before it is rendered.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from mkdocs.exceptions import PluginError
from pymdownx.superfences import SuperFencesException

# A fence opens with 3+ backticks or tildes after any indent (and blockquote markers); a
# backtick fence's info string holds no backtick.
FENCE_OPEN = re.compile(r"^(?P<ws>[ \t>]*)(?P<fence>`{3,}(?=[^`]*$)|~{3,})[ \t]*(?P<info>.*?)[ \t]*$")
# Inline code as Python-Markdown reads it: a run of backticks closed by a run of the same
# length, within one paragraph (no blank line between); an escaped backtick opens nothing.
CODE_SPAN = re.compile(r"(?<![\\`])(?P<ticks>`+)(?!`)(?:(?!\n[ \t>]*\n).)+?(?<!`)(?P=ticks)(?!`)",
                       re.S)
# A macro call; `args` is read by the Python parser, not by this pattern.
CALL = re.compile(r"\{\{\s*(?P<name>[A-Za-z_]\w*)\s*\((?P<args>.*?)\)\s*\}\}", re.S)
# What starts a call: text like this that CALL does not match is a broken call, not prose.
CALL_START = re.compile(r"\{\{\s*[A-Za-z_]\w*\s*\(")
# How deep the output of a macro is read for macros again (an appendix gathers chapter text
# that quotes values); more than this is a macro that includes itself.
MAX_DEPTH = 3


@dataclass(frozen=True)
class Fence:
    """One outermost fenced block: `start`/`end` are offsets of its first line and just past
    its closing line; `body` is its content with the opening line's indent taken off."""

    start: int
    end: int
    indent: str
    lang: str
    body: str


@dataclass(frozen=True)
class Call:
    """One macro call: `text` as written; `alone` when it is the only thing on its line, with
    that line's `indent`."""

    name: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    text: str = ""
    alone: bool = False
    indent: str = ""


def fences(markdown: str) -> list[Fence]:
    """The outermost fenced code blocks of `markdown`, in order. A fence never closed runs to
    the end of the text (it holds no macros: better shown raw than expanded by mistake)."""
    out, pos, lines = [], 0, markdown.splitlines(keepends=True)
    opened = None  # (start, ws, fence, lang, body lines)
    for line in lines:
        text = line.rstrip("\r\n")
        if opened is None:
            m = FENCE_OPEN.match(text)
            if m:
                lang = re.match(r"\.?([\w#.+-]*)", m.group("info")).group(1)
                opened = (pos, m.group("ws"), m.group("fence"), lang, [])
        else:
            start, ws, fence, lang, body = opened
            if re.fullmatch(re.escape(ws) + re.escape(fence) + r"[ \t]*", text):
                out.append(Fence(start, pos + len(line), ws, lang, "".join(body)))
                opened = None
            else:
                body.append(line[len(ws):] if line.startswith(ws) else line.lstrip(" \t>"))
        pos += len(line)
    if opened is not None:
        start, ws, fence, lang, body = opened
        out.append(Fence(start, len(markdown), ws, lang, "".join(body)))
    return out


def _prose(markdown: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each stretch of `markdown` that is neither fenced nor inline code."""
    pos = 0
    for block in fences(markdown):
        yield from _outside_spans(markdown, pos, block.start)
        pos = block.end
    yield from _outside_spans(markdown, pos, len(markdown))


def _outside_spans(markdown: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    pos = start
    for m in CODE_SPAN.finditer(markdown, start, end):
        yield pos, m.start()
        pos = m.end()
    yield pos, end


def parse(text: str, where: str = "") -> Call:
    """The call `{{ name(args) }}` in `text` (one macro call, as written), its arguments read
    as Python literals. PluginError naming `where` and the call if they are not."""
    m = CALL.fullmatch(text.strip())
    prefix = f"{where}: " if where else ""
    if m is None:
        raise PluginError(f"{prefix}cannot read {text!r}: not a macro call {{{{ name(args) }}}}")
    try:
        call = ast.parse(f"f({m.group('args')})", mode="eval").body
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "f"):
            raise SyntaxError("the arguments close the call early")
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            raise ValueError("* and ** arguments are not literals")
        args = tuple(ast.literal_eval(a) for a in call.args)
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (SyntaxError, ValueError) as exc:
        raise PluginError(f"{prefix}cannot read {text!r}: {exc}") from None
    return Call(m.group("name"), args, kwargs, text)


def calls(markdown: str, where: str = "") -> Iterator[tuple[int, int, Call]]:
    """(start, end, call) for each macro call outside code in `markdown`, in order."""
    for start, end in _prose(markdown):
        pos = start
        while True:
            opening = CALL_START.search(markdown, pos, end)
            if opening is None:
                break
            m = CALL.match(markdown, opening.start(), end)
            if m is None:
                line = markdown[opening.start():end].split("\n", 1)[0]
                raise PluginError(f"{where}: cannot read {line!r}: a macro call "
                                  "{{ name(args) }} that is not closed")
            call = parse(m.group(0), where)
            line_start = markdown.rfind("\n", 0, m.start()) + 1
            line_end = markdown.find("\n", m.end())
            line_end = len(markdown) if line_end < 0 else line_end
            before = markdown[line_start:m.start()]
            alone = not before.strip() and not markdown[m.end():line_end].strip()
            yield m.start(), m.end(), Call(call.name, call.args, call.kwargs, call.text,
                                           alone, before if alone else "")
            pos = m.end()


Handler = Callable[[Call], str]


def expand(markdown: str, handlers: Mapping[str, Handler], where: str, depth: int = 0) -> str:
    """`markdown` with each macro call outside code replaced by its handler's text (itself
    read for macros). A handler refuses a call by raising PluginError; the message gets the
    page and the call in front of it."""
    out, pos = [], 0
    for start, end, call in calls(markdown, where):
        handler = handlers.get(call.name)
        if handler is None:
            raise PluginError(f"{where}: unknown macro {call.name!r} in {call.text!r}; "
                              f"known: {', '.join(sorted(handlers))}")
        try:
            text = handler(call)
        except PluginError as exc:
            raise PluginError(f"{where}: {call.text}: {exc}") from None
        if "{{" in text:
            if depth >= MAX_DEPTH:
                raise PluginError(f"{where}: {call.text} writes macros {MAX_DEPTH} levels deep")
            text = expand(text, handlers, where, depth + 1)
        out += [markdown[pos:start], text]
        pos = end
    out.append(markdown[pos:])
    return "".join(out)


def arguments(call: Call, count: int, usage: str, keywords: tuple[str, ...] = ()) -> tuple:
    """`call`'s positional arguments, exactly `count` strings, and no keywords outside
    `keywords`; PluginError quoting `usage` otherwise."""
    if (len(call.args) != count or not all(isinstance(a, str) for a in call.args)
            or set(call.kwargs) - set(keywords)):
        raise PluginError(f"{call.name}() takes {usage}")
    return call.args


class FenceError(PluginError, SuperFencesException):
    """A custom fence's refusal. pymdownx.superfences lets only a SuperFencesException out of
    a formatter (any other error leaves the block on the page as plain text); MkDocs reports a
    PluginError as a build error, with its message and no traceback."""


def _block(fmt: Callable) -> Callable:
    """`fmt`, its errors made to stop the build, its HTML ended by a newline as a raw HTML
    block's is (a block written into the markdown before it was a fence: the same page)."""
    @functools.wraps(fmt)
    def format(*args, **kwargs):
        try:
            return fmt(*args, **kwargs) + "\n"
        except FenceError:
            raise
        except PluginError as exc:
            raise FenceError(exc.message) from None
        except Exception as exc:
            raise FenceError(f"{fmt.__name__} failed: {type(exc).__name__}: {exc}") from exc
    return format


def custom_fences(fences: list[dict]) -> list[dict]:
    """pymdownx.superfences' `custom_fences` for `fences`, their formatters wrapped by _block."""
    return [{**fence, "format": _block(fence["format"])} for fence in fences]


def register_fences(config, fences: list[dict]) -> None:
    """Add custom fences (`{"name", "class", "format"}`) to pymdownx.superfences' options, each
    formatter's errors made to stop the build. Done by the hooks in on_config, not in
    mkdocs.yml: a `!!python/name:` there is resolved when the YAML is read, before MkDocs puts
    widgets/ on sys.path to load the hooks."""
    if "pymdownx.superfences" not in config["markdown_extensions"]:
        raise PluginError("mkdocs.yml must enable pymdownx.superfences: the widget and diagram "
                          "blocks are its custom fences")
    options = config["mdx_configs"].setdefault("pymdownx.superfences", {})
    custom = options.setdefault("custom_fences", [])
    names = {fence["name"] for fence in custom}
    custom.extend(custom_fences([fence for fence in fences if fence["name"] not in names]))
