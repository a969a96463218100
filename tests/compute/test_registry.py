"""Every registered widget honours the contract the API and the page rely on."""

from __future__ import annotations

import json

import pytest

from backend.compute import REGISTRY
from backend.compute.spec import ParamError, sweep

WIDGETS = sorted(REGISTRY)


@pytest.mark.parametrize("name", WIDGETS)
def test_spec_is_self_consistent(name):
    spec = REGISTRY[name].SPEC
    assert spec.name == name and spec.title
    names = [p.name for p in spec.params]
    assert len(names) == len(set(names))
    assert spec.resolve({}) == spec.defaults()
    json.dumps(spec.to_json())


@pytest.mark.parametrize("name", WIDGETS)
def test_compute_on_defaults_returns_every_declared_output(name):
    module = REGISTRY[name]
    out = module.compute(module.SPEC.defaults())
    assert {"values", "figure"} <= set(out) <= {"values", "figure", "summary", "table", "notice"}
    missing = {o.name for o in module.SPEC.outputs} - set(out["values"])
    assert not missing, f"{name} does not return declared outputs {missing}"
    assert out["figure"]["data"], "a figure with no traces"
    assert isinstance(out["figure"]["layout"], dict)
    # Plain JSON all the way down: no tensors or numpy scalars left for jsonify to choke on.
    json.loads(json.dumps(out, allow_nan=False))


@pytest.mark.parametrize("name", WIDGETS)
def test_extreme_settings_stay_valid(name):
    """The corners of every numeric range compute, or are refused with a clear message (a
    widget with a budget across several sliders may refuse the all-maximum corner): never an
    exception a client would see as a 500. Bounded work is the widget's job."""
    module = REGISTRY[name]
    spec = module.SPEC
    numeric = [p for p in spec.params if p.type in {"int", "float"}]
    for corner in ("min", "max"):
        corner_values = {p.name: getattr(p, corner) for p in numeric}
        try:
            params = spec.resolve({**spec.defaults(), **corner_values})
            out = module.compute(params)
        except ParamError as exc:
            assert str(exc), f"{name}: a refusal must say why"
            continue
        json.loads(json.dumps(out, allow_nan=False))


def test_sweep_respects_range_and_includes_default():
    p = REGISTRY["attention_scaling"].SPEC.param("d_k")
    values = sweep(p, 7)
    assert values[0] == p.min and values[-1] == p.max and p.default in values
    assert all(v & (v - 1) == 0 for v in values)  # log2 sliders stop at powers of two


def test_a_widget_is_measured_exactly_when_its_code_takes_timings():
    """`WidgetSpec.measured` is what the worker's warm-up, the notebook and the test lanes read,
    so it must say what the code does: a widget whose code uses `backend.compute.measure` (the
    host-wide timing lock), under any alias, directly or through another book module, has the
    flag, and one with the flag uses it. The imports are read as the notebook reads them."""
    from backend.app.notebook import carried

    uses = {n for n in WIDGETS
            if "backend/compute/measure.py" in {rel for rel, _text in carried(n).files}}
    flagged = {n for n in WIDGETS if REGISTRY[n].SPEC.measured}
    assert uses - flagged == set(), "these take timings: set measured=True in their SPEC"
    assert flagged - uses == set(), "these say measured but take no timings"
    assert flagged == {"sequential_vs_parallel", "attention_cost", "kv_decode",
                       "generation_steps"}
    assert all("measured" not in REGISTRY[n].SPEC.to_json() for n in flagged)  # server-side only
