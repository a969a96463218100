"""A param capped by two rules with one note (attention_cost's memory and work ceilings on this
device) is refused in one clause: the note reads once, and every factor of both rules is named
(ux review P6: "(this device's ceiling on cpu)" appeared twice in one sentence)."""

from __future__ import annotations

from backend.compute import REGISTRY
from backend.compute.rules import Limit
from backend.compute.spec import Param, ParamError


def test_two_rules_with_one_note_make_one_clause():
    memory = Limit(1000, ((1, ("t", "t", "b")),), note="the ceiling")
    work = Limit(1000, ((1, ("t", "t", "d")),), note="the ceiling")
    t = Param("t", "length", "int", default=1, min=1, max=100, limits=(memory, work))
    eff = t.effective({"b": 4, "d": 40}, {"b": "batch", "d": "head size"})
    assert eff["max"] == 5  # 5 * 5 * 40 = 1000 (the work rule is the tighter)
    assert eff["why"] == ["at batch = 4, head size = 40 (the ceiling)"]


def test_rules_with_different_notes_stay_apart():
    a = Limit(1000, ((1, ("t", "t", "b")),), note="one")
    b = Limit(1000, ((1, ("t", "t", "d")),), note="two")
    t = Param("t", "length", "int", default=1, min=1, max=100, limits=(a, b))
    eff = t.effective({"b": 4, "d": 40})
    assert eff["why"] == ["at b = 4 (one)", "at d = 40 (two)"]


def test_attention_cost_refusal_says_the_device_ceiling_once():
    spec = REGISTRY["attention_cost"].SPEC
    setting = {p.name: p.default for p in spec.params} | {"batch": 8, "n_heads": 32}
    t = next(p for p in spec.params if p.name == "context_len")
    labels = {p.name: p.label for p in spec.params}
    eff = t.effective(setting, labels)
    assert len(eff["why"]) == 1, eff["why"]
    try:
        t.validate_with(eff["max"] + 1, setting, labels)
    except ParamError as e:
        message = str(e)
    else:
        raise AssertionError("a context above the ceiling was accepted")
    assert message.count("this device's ceiling") == 1, message
    for label in (labels["batch"], labels["n_heads"], labels["dtype"], labels["head_dim"]):
        assert label in message, (label, message)
