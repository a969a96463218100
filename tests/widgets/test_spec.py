"""Validation rules of `Param` and `WidgetSpec`: what a client may send."""

from __future__ import annotations

import pytest

from backend.widgets.spec import Output, Param, ParamError, WidgetSpec

TEXT = Param("text", "sentence", "text", default="hello", max_length=20)
CHOICE = Param("model", "model", "choice", default="book", options=("book", "minilm"))
FLAG = Param("average", "average", "bool", default=False)
RATE = Param("t", "temperature", "float", default=1.0, min=0.0, max=2.0, step=0.1)


@pytest.mark.parametrize("value, message", [
    ("", "must not be empty"), ("   \n\t", "must not be empty"),
    ("a\x00b", "control characters"), ("x" * 21, "limit is 20"), (7, "must be a string"),
])
def test_text_rejections(value, message):
    with pytest.raises(ParamError, match=message):
        TEXT.validate(value)


@pytest.mark.parametrize("value", ["שלום עולם", "🙂 it", "<b>bold</b>", "line\nbreak"])
def test_text_accepts_real_unicode_and_markup_as_text(value):
    assert TEXT.validate(value) == value


def test_choice_bool_float():
    assert CHOICE.validate("minilm") == "minilm"
    with pytest.raises(ParamError, match="one of 'book', 'minilm'"):
        CHOICE.validate("gpt2")
    assert FLAG.validate(True) is True
    with pytest.raises(ParamError, match="true or false"):
        FLAG.validate("true")
    assert RATE.validate(1) == 1.0
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ParamError, match="finite"):
            RATE.validate(bad)


def test_a_spec_cannot_contradict_itself():
    with pytest.raises(ParamError):
        Param("d", "d", "int", default=0, min=1, max=4)
    with pytest.raises(TypeError):
        Param("m", "m", "choice", default="x", options=("a",))
    with pytest.raises(TypeError):
        Param("d", "d", "int", default=1)


def test_resolve_fills_defaults_and_rejects_unknown_names():
    spec = WidgetSpec("w", "W", (TEXT, FLAG), (Output("n", "n"),))
    assert spec.resolve({"average": True}) == {"text": "hello", "average": True}
    with pytest.raises(ParamError, match="unknown parameter 'colour'"):
        spec.resolve({"colour": 1})
    with pytest.raises(ParamError, match="JSON object"):
        spec.resolve([1])


def test_bake_points_start_with_defaults_and_have_no_duplicates():
    spec = WidgetSpec("w", "W", (RATE, FLAG, CHOICE))
    points = spec.bake_points()
    assert points[0] == spec.defaults()
    assert len({tuple(sorted(p.items())) for p in points}) == len(points)
    assert {p["model"] for p in points} == {"book", "minilm"}
