"""The book's macro reader (widgets/build/macros.py) and its widget fence, without a build: macros
are read outside code only, their arguments once, and every mistake names the page and call;
a widget block is a pymdownx.superfences fence, so a page can show one as code."""

from __future__ import annotations

import markdown as md_lib
import pytest
from mkdocs.exceptions import PluginError

from tests.support.build import stops_the_build
from widgets.build import macros
from widgets.build.widget_blocks import LAND

CALL = '{{ value("attention_scaling", "var_unscaled", fmt=".1f", d_k=64) }}'


def echo(call: macros.Call) -> str:
    return f"<{call.name}:{','.join(map(str, call.args))}>"


def expand(text: str, **handlers) -> str:
    return macros.expand(text, handlers or {"value": echo}, "chapters/p.md")


# ------------------------------------------------------------------------------ the reader

def test_a_call_in_prose_is_read_once_with_its_arguments():
    [(start, end, call)] = list(macros.calls(f"Before {CALL} after.", "p.md"))
    assert (call.name, call.args) == ("value", ("attention_scaling", "var_unscaled"))
    assert call.kwargs == {"fmt": ".1f", "d_k": 64} and call.text == CALL
    assert (start, end) == (7, 7 + len(CALL)) and not call.alone


def test_a_call_over_several_lines_and_one_alone_on_its_line():
    text = 'x\n    {{ value("w", "v",\n             d_k=8) }}\ny'
    [(_, _, call)] = list(macros.calls(text, "p.md"))
    assert call.kwargs == {"d_k": 8} and call.alone and call.indent == "    "
    assert expand(text) == "x\n    <value:w,v>\ny"


@pytest.mark.parametrize("shown", [
    f"```\n{CALL}\n```\n",                                   # a fence
    f"~~~text\n{CALL}\n~~~\n",                               # a tilde fence with a language
    f'!!! note\n\n    ```markdown\n    {CALL}\n    ```\n',    # a fence inside a note
    f"````markdown\n```\n{CALL}\n```\n````\n",               # a fence shown inside a longer one
    f"Inline `{CALL}` code.",                                # a code span
    f"Inline ``a ` then {CALL}`` code.",                     # a span of two backticks
    f"A span `over\n{CALL}` two lines of a paragraph.",
])
def test_code_is_never_read(shown):
    assert expand(shown) == shown


@pytest.mark.parametrize("text, expected", [
    (f"```\ncode\n```\n\n{CALL}\n", "```\ncode\n```\n\n<value:attention_scaling,var_unscaled>\n"),
    (f"`a` {CALL} `b`", "`a` <value:attention_scaling,var_unscaled> `b`"),
    (f"\\`not code {CALL}", "\\`not code <value:attention_scaling,var_unscaled>"),
    # a backtick left open in one paragraph opens no span in the next
    (f"A lone ` here.\n\n{CALL} `x`", "A lone ` here.\n\n<value:attention_scaling,var_unscaled> `x`"),
    # a longer fence is not closed by a shorter one inside it
    (f"````\n```\n````\n{CALL}", "````\n```\n````\n<value:attention_scaling,var_unscaled>"),
])
def test_prose_around_code_is_read(text, expected):
    assert expand(text) == expected


def test_a_fence_never_closed_holds_no_macros():
    text = f"```\n{CALL}\n"
    assert expand(text) == text


def test_fences_lists_the_outermost_blocks_with_their_bodies():
    text = ("# T\n\n!!! note\n\n    ```widget\n    name: mlp\n    id: a\n    ```\n\n"
            "````markdown\n```widget\nname: shown\n```\n````\n")
    found = macros.fences(text)
    assert [(f.lang, f.indent) for f in found] == [("widget", "    "), ("markdown", "")]
    assert found[0].body == "name: mlp\nid: a\n"
    assert text[found[0].start:found[0].end].startswith("    ```widget")
    assert found[1].body == "```widget\nname: shown\n```\n"


@pytest.mark.parametrize("text, message", [
    ('{{ value("a", b) }}', r"cannot read '\{\{ value\(\"a\", b\) \}\}'"),
    ('{{ value("a", *xs) }}', "cannot read"),
    ('{{ value("a"), value("b") }}', "cannot read"),
    ('{{ value("a", "b" }} and more', "not closed"),
    ('{{ nope("a") }}', "unknown macro 'nope'.*known: value"),
])
def test_mistakes_stop_the_build_naming_the_page_and_the_call(text, message):
    stops_the_build(expand, text, message, "chapters/p.md")


def test_a_handlers_refusal_is_prefixed_with_the_page_and_the_call():
    def refuse(call):
        raise PluginError("no such value")
    with pytest.raises(PluginError, match=r"^chapters/p.md: \{\{ value\(\"a\", \"b\"\) \}\}: "
                                          "no such value$"):
        expand('{{ value("a", "b") }}', value=refuse)


def test_what_a_macro_writes_is_read_again_but_not_forever():
    out = expand('{{ outer() }}', outer=lambda c: 'in {{ value("w", "v") }}, not `{{ x() }}`',
                 value=echo)
    assert out == "in <value:w,v>, not `{{ x() }}`"
    with pytest.raises(PluginError, match="levels deep"):
        expand("{{ again() }}", again=lambda c: "{{ again() }}")


def test_prose_braces_that_open_no_call_are_left_alone():
    text = r"\(x^{{2}}\) and {{ not a call }}"
    assert expand(text) == text


# ---------------------------------------------------------------------- the widget fence

@pytest.fixture
def hook(monkeypatch):
    """widgets/build/widget_blocks.py with its compute stubbed: the fence, the keys and the payload are real."""
    from widgets.build import widget_blocks as hook

    monkeypatch.setattr(hook, "_compute", lambda name, params_json: {
        "values": {"var_unscaled": 64.04}, "figure": {"data": [], "layout": {}}})
    return hook


def render(hook, text: str) -> str:
    """`text` as MkDocs renders a page: one Markdown instance, the hooks' fences."""
    hook._PAGE["where"] = "chapters/p.md"  # as on_page_markdown sets it
    fences = macros.custom_fences(hook.FENCES)
    md = md_lib.Markdown(extensions=["pymdownx.superfences", "admonition", "md_in_html"],
                         extension_configs={"pymdownx.superfences": {"custom_fences": fences}})
    return md.convert(text)


def test_a_widget_fence_becomes_the_widget(hook):
    out = render(hook, "Text.\n\n```widget\nname: attention_scaling\nparams: {d_k: 128}\n```\n")
    assert out.startswith('<p>Text.</p>\n<div class="tw-widget" data-widget="attention_scaling" '
                          'id="widget-attention_scaling" data-key="attention_scaling">'
                          '<template class="tw-data"><script type="application/json" '
                          'class="tw-config">')
    assert out.endswith("<noscript>This interactive figure needs JavaScript.</noscript></div>"
                        + LAND)
    assert '"start":{"d_k":128,' in out


def test_instances_of_one_widget_on_a_page_get_their_own_keys(hook):
    block = "```widget\nname: attention_scaling\n```\n\n"
    out = render(hook, block + "!!! note\n\n    " + block.replace("\n", "\n    "))
    assert 'data-key="attention_scaling"' in out
    assert 'id="widget-attention_scaling-2" data-key="attention_scaling.2"' in out
    assert render(hook, block).count('data-key="attention_scaling"') == 1  # a new page: anew


def test_a_widget_fence_shown_inside_a_longer_fence_is_shown(hook):
    out = render(hook, "````markdown\n```widget\nname: attention_scaling\n```\n````\n")
    assert "data-widget" not in out and "```widget" in out and "name: attention_scaling" in out


@pytest.mark.parametrize("body, message", [
    ("name: nope", "unknown widget 'nope'"),
    ("name: attention_scaling\ncolour: red", "unknown key"),
    ("params: {d_k: 64}", "needs `name: <widget>`"),
    ("name: attention_scaling\nparams: {d_k: 100000}", "must be from 1 to 1024"),
])
def test_a_broken_widget_block_stops_the_build(hook, body, message):
    """Not left on the page as code: superfences hides a formatter's other errors."""
    stops_the_build(lambda text: render(hook, text), f"```widget\n{body}\n```\n", message,
                    "chapters/p.md")


def test_the_page_hook_expands_values_but_not_the_ones_it_shows(hook):
    from types import SimpleNamespace

    page = SimpleNamespace(file=SimpleNamespace(src_uri="instructors.md"))
    text = f"It reads {CALL}; written `{CALL}`.\n\n```markdown\n{CALL}\n```\n"
    out = hook.on_page_markdown(text, page, {"nav": [], "docs_dir": "docs"}, None)
    assert out == f"It reads 64.0; written `{CALL}`.\n\n```markdown\n{CALL}\n```\n"
