"""Validation rules of `Param` and `WidgetSpec`: what a client may send."""

from __future__ import annotations

import pytest

from backend.compute.spec import Depends, Limit, Output, Param, ParamError, WidgetSpec

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


# --- labels in messages, and ranges that follow other params (Depends) ---------------------

def test_a_ranges_ends_are_grouped_by_thousands_from_five_digits():
    """Issue 33 (readers' re-try): "must be from 1 to 131072" read as one long number. The ends
    are grouped as the book prints numbers (4096 stays whole); the reader's own value is echoed
    as typed. Failed before: "from 1 to 131072, got 200000"."""
    context = Param("t", "context", "int", default=8, min=1, max=131_072)
    with pytest.raises(ParamError) as info:
        context.validate(200_000)
    assert str(info.value) == "'context' must be from 1 to 131,072, got 200000"
    small = Param("n", "tokens", "int", default=64, min=16, max=4096)
    with pytest.raises(ParamError) as info:
        small.validate(5000)
    assert str(info.value) == "'tokens' must be from 16 to 4096, got 5000"
    assert Param("x", "x", "float", default=1.0, min=0.5, max=20_000.0).describe_range() == \
        "0.5 to 20,000"


def test_messages_name_the_control_by_its_label_not_its_code_name():
    with pytest.raises(ParamError, match="'temperature' must be from 0 to 2, got 5"):
        RATE.validate(5)
    with pytest.raises(ParamError, match="'sentence' must not be empty"):
        TEXT.validate(" ")


MODEL = Param("model", "model", "choice", default="book", options=("book", "minilm", "local"))
AVERAGE = Param("average", "average", "bool", default=True)
LAYER = Param("layer", "layer", "int", default=0, min=0, max=11,
              depends=(Depends("model", {"book": {"max": 3}, "minilm": {"max": 5}}),
                       Depends("average", {True: {"disabled": True}})))
N_HEADS = Param("n_heads", "heads", "int", default=4, min=1, max=8)
N_KV = Param("n_kv", "KV heads", "int", default=2, min=1, max=8, depends=(
    Depends("n_heads", {h: {"allowed": tuple(d for d in range(1, h + 1) if h % d == 0)}
                        for h in range(1, 9)}),))


def test_a_dependent_range_is_validated_with_the_real_range_named():
    spec = WidgetSpec("w", "W", (MODEL, AVERAGE, LAYER))
    assert spec.resolve({"layer": 3, "average": False})["layer"] == 3
    with pytest.raises(ParamError, match="'layer' must be from 0 to 3 when model is book, got 4"):
        spec.resolve({"layer": 4, "average": False})
    assert spec.resolve({"layer": 5, "average": False, "model": "minilm"})["layer"] == 5
    with pytest.raises(ParamError, match="from 0 to 5 when model is minilm"):
        spec.resolve({"layer": 6, "average": False, "model": "minilm"})
    # a disabled param is ignored (within its own static range), a model with no case keeps it
    assert spec.resolve({"layer": 9, "average": True})["layer"] == 9
    assert spec.resolve({"layer": 11, "average": False, "model": "local"})["layer"] == 11
    with pytest.raises(ParamError, match="from 0 to 11, got 12"):
        spec.resolve({"layer": 12, "average": True})


def test_allowed_values_express_divisibility():
    spec = WidgetSpec("w", "W", (N_HEADS, N_KV))
    assert spec.resolve({"n_heads": 6, "n_kv": 3})["n_kv"] == 3
    with pytest.raises(ParamError, match="'KV heads' must be one of 1, 2, 3, 6 when heads is 6, "
                                         "got 4"):
        spec.resolve({"n_heads": 6, "n_kv": 4})


def test_depends_goes_to_the_page_and_a_bad_rule_is_refused():
    j = LAYER.to_json()["depends"]
    assert j[0] == {"on": "model", "cases": [["book", {"max": 3}], ["minilm", {"max": 5}]]}
    assert j[1] == {"on": "average", "cases": [[True, {"disabled": True}]]}
    assert N_KV.to_json()["depends"][0]["cases"][3] == [4, {"allowed": [1, 2, 4]}]
    with pytest.raises(TypeError):
        Depends("model", {"book": {"maximum": 3}})
    with pytest.raises(TypeError, match="unknown param"):
        WidgetSpec("w", "W", (LAYER,))
    with pytest.raises(ParamError):  # defaults that break a rule: the spec contradicts itself
        WidgetSpec("w", "W", (MODEL, Param("average", "average", "bool", default=False),
                              Param("layer", "layer", "int", default=7, min=0, max=11,
                                    depends=LAYER.depends)))


def test_true_does_not_match_a_case_for_one():
    assert Depends("x", {1: {"max": 1}}).patch_for(True) == {}
    assert Depends("x", {True: {"max": 1}}).patch_for(1) == {}


def test_attention_map_ranges_are_the_models_real_sizes():
    """The numbers in attention_map's SPEC against the models' own config files."""
    import json
    from pathlib import Path

    from backend.compute import attention_map

    spec = attention_map.SPEC
    book = json.loads((Path(__file__).parents[2] / "backend/bookmodel/weights/config.json")
                      .read_text())
    sizes = {"book": (book["n_layers"], book["n_heads"])}
    try:
        mini = json.loads((attention_map.minilm_dir() / "config.json").read_text())
        sizes["minilm"] = (mini["num_hidden_layers"], mini["num_attention_heads"])
    except ParamError:
        pass
    for model, (n_layers, n_heads) in sizes.items():
        for name, n in (("layer", n_layers), ("head", n_heads)):
            eff = spec.param(name).effective({"model": model, "average": False})
            assert eff["max"] == n - 1, (model, name)
            assert spec.param(name).effective({"model": model, "average": True})["disabled"]


def test_widget_blocks_get_instance_keys_and_explicit_ids():
    from mkdocs.exceptions import PluginError

    from widgets.build import widget_blocks as hook

    seen: dict = {}
    keys = [hook.instance_key("attention_map", b, seen, "p.md")
            for b in ({}, {}, {"id": "second-look"})]
    assert keys == ["attention_map", "attention_map.2", "second-look"]
    for bad in ({"id": "attention_scaling"}, {"id": "has space"}, {"id": "second-look"}):
        with pytest.raises(PluginError):
            hook.instance_key("attention_map", bad, seen, "p.md")


def _limited():
    budget = Limit(1000, ((1, ("x", "x", "b", ("kind", {"small": 1, "big": 4}))),
                          (2, ("x", "b", ("d", -1)))), note="the budget")
    return WidgetSpec(name="lim", title="t", params=(
        Param("x", "x", "int", default=4, min=2, max=100, step=2, limits=(budget,)),
        Param("b", "b", "int", default=1, min=1, max=10, step=1),
        Param("d", "d", "int", default=2, min=1, max=4, step=1),
        Param("kind", "kind", "choice", default="small", options=("small", "big")),
    ))


def test_a_limit_caps_a_param_by_every_factor_at_once():
    spec = _limited()
    x = spec.param("x")
    labels = {p.name: p.label for p in spec.params}
    for b in range(1, 11):
        for d in range(1, 5):
            for kind, k in (("small", 1), ("big", 4)):
                setting = {"x": 2, "b": b, "d": d, "kind": kind}
                want = max([v for v in range(2, 101, 2) if v * v * b * k + 2 * v * b / d <= 1000],
                           default=2)  # on the grid; the min when nothing fits
                eff = x.effective(setting, labels)
                assert eff["max"] == want
                if want < 100:
                    assert eff["why"] == [f"at b = {b}, kind = {kind}, d = {d} (the budget)"]
                    with pytest.raises(ParamError, match="the budget"):
                        spec.resolve({**setting, "x": want + 2})
                spec.resolve({**setting, "x": want})
    listed = spec.to_json()["params"][0]["limits"][0]
    assert listed == {"budget": 1000, "note": "the budget", "terms": [
        [1, ["x", "x", "b", ["kind", [["small", 1], ["big", 4]]]]], [2, ["x", "b", ["d", -1]]]]}


def test_a_limit_on_a_float_tops_out_on_its_grid_written_round():
    """A float's limit (an input price at most the write price): the top is on the param's
    step grid from its min, written as the page writes it (7.77, not 7.7700000000000005), and a
    negative coefficient makes another param the bound."""
    price = Param("p", "price", "float", default=1.0, min=0.0, max=200.0, step=0.01,
                  limits=(Limit(0, ((1, ("p",)), (-1, ("w",)))),))
    spec = WidgetSpec(name="f", title="t", params=(
        price, Param("w", "write", "float", default=2.0, min=0.0, max=200.0, step=0.01)))
    for w, top in ((7.77, 7.77), (7.775, 7.77), (0.07, 0.07), (0.0, 0.0), (200.0, 200.0),
                   (12.5, 12.5), (0.3, 0.3)):
        assert price.effective({"p": 0.0, "w": w})["max"] == top
        spec.resolve({"p": top, "w": w})
        if top < 200:
            with pytest.raises(ParamError, match="at write = "):
                spec.resolve({"p": round(top + 0.01, 2), "w": w})


def test_a_limit_names_known_params_and_sits_on_a_number():
    budget = Limit(10, ((1, ("y",)),))
    with pytest.raises(TypeError):
        WidgetSpec(name="bad", title="t", params=(
            Param("x", "x", "int", default=1, min=1, max=9, step=1, limits=(budget,)),))
    with pytest.raises(TypeError):
        Limit(10, ((1, (("x", 0.5),)),))


def test_a_release_is_serialised_and_must_not_be_a_pinned_case():
    dep = Depends("preset", {"a": {"min": 3, "max": 3}}, release="custom")
    assert dep.to_json()["release"] == "custom"
    assert "release" not in Depends("preset", {"a": {"min": 3, "max": 3}}).to_json()
    with pytest.raises(TypeError):
        Depends("preset", {"custom": {"min": 3, "max": 3}}, release="custom")


def test_option_labels_are_one_per_option_and_travel_with_the_spec():
    card = Param("card", "card", "choice", default="80", options=("40", "80"),
                 option_labels=("A100 40 GB", "A100 80 GB"))
    assert card.to_json()["options"] == ["40", "80"]
    assert card.to_json()["option_labels"] == ["A100 40 GB", "A100 80 GB"]
    assert card.validate("80") == "80"                 # the key is what a client sends
    with pytest.raises(ParamError):
        card.validate("A100 80 GB")
    assert "option_labels" not in CHOICE.to_json()
    with pytest.raises(TypeError, match="one option label per option"):
        Param("card", "card", "choice", default="80", options=("40", "80"), option_labels=("x",))
    with pytest.raises(TypeError, match="one option label per option"):
        Param("n", "n", "int", default=1, min=1, max=2, option_labels=("one",))


def _hooked(calls: list) -> WidgetSpec:
    """A spec with all three hooks: a preset that fills `b`, a server ceiling on `a` that
    follows `b`, and a rule across both."""
    def prepare(body):
        calls.append("prepare")
        return {"b": 4, **body} if body.get("preset") == "four" else body

    def limits(values):
        """'a' is at most 3 × 'b' on this server."""
        calls.append("limits")
        return {"a": {"max": 3 * values["b"], "why": f"at b = {values['b']} (the server's own)"}}

    def check(values):
        """'a' and 'b' differ."""
        calls.append("check")
        if values["a"] == values["b"]:
            raise ParamError("'a' must differ from 'b'", "a")

    return WidgetSpec(name="hooked", title="t", params=(
        Param("preset", "preset", "choice", default="none", options=("none", "four")),
        Param("a", "a", "int", default=1, min=1, max=100,
              limits=(Limit(100, ((1, ("a", "b")),)),)),
        Param("b", "b", "int", default=2, min=1, max=10)),
        prepare=prepare, limits=limits, check=check)


def test_the_hooks_run_in_resolve_in_order_and_their_rules_are_in_words():
    calls = []
    spec = _hooked(calls)
    assert calls[0] == "prepare" and calls[-1] == "check"  # the defaults pass every rule
    calls.clear()
    assert spec.resolve({"preset": "four", "a": 12}) == {"preset": "four", "a": 12, "b": 4}
    assert calls[0] == "prepare" and "limits" in calls and calls[-1] == "check"
    # the server's limit speaks first, with its own words, though the param's max (100) is more
    with pytest.raises(ParamError) as info:
        spec.resolve({"preset": "four", "a": 50})
    assert str(info.value) == "'a' must be from 1 to 12 at b = 4 (the server's own), got 50"
    assert info.value.param == "a"
    with pytest.raises(ParamError, match="must differ"):
        spec.resolve({"a": 2, "b": 2})
    # a param's own range is still checked first: no limit or rule sees a value out of range
    calls.clear()
    with pytest.raises(ParamError, match="'b' must be from 1 to 10"):
        spec.resolve({"b": 11})
    assert "check" not in calls
    assert spec.rules() == ["'a' is at most 3 × 'b' on this server.", "'a' and 'b' differ."]
    assert spec.to_json()["rules"] == spec.rules()
    assert "rules" not in WidgetSpec(name="plain", title="t", params=(
        Param("x", "x", "int", default=1, min=0, max=2),)).to_json()
