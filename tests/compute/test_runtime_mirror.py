"""The runtime mirrors the spec's rules: its `effective`, `check` and slider stops
(widgets/runtime/spec.js), run under node on the very spec JSON the page gets, agree with
Python's for many settings (the combined attention-cost ceiling, the parity budget, head
divisibility, the int step grid)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from backend.compute import attention_cost, kv_cache, model_params, parity, positions_rope, rmsnorm
from backend.compute.spec import ParamError

SPEC_JS = Path(__file__).resolve().parents[2] / "widgets" / "runtime" / "spec.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

# spec.js is a pure ES module: node imports it as the page does, then each case runs through it.
HARNESS = """
const bw = await import(process.argv[1]);
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(cases.map(function (c) {
  if (c.op === "effective") return bw.effective(c.p, c.params, c.labels);
  if (c.op === "check") return bw.check(c.p, c.v, c.params, c.labels);
  if (c.op === "stops") return bw.stops(c.p, c.eff, c.extra);
  if (c.op === "fromSlider") return bw.fromSlider(c.p, c.s, c.eff, null);
  if (c.op === "optionLabels") return c.p.options.map(function (o, i) { return bw.optionLabel(c.p, i); });
})));
"""


def run_js(cases: list[dict]) -> list:
    out = subprocess.run([NODE, "--input-type=module", "-e",
                          'import { createRequire } from "node:module";\n'
                          "const require = createRequire(import.meta.url);\n" + HARNESS,
                          SPEC_JS.as_uri()], input=json.dumps(cases),
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def _py_effective(spec, name, setting):
    labels = {p.name: p.label for p in spec.params}
    eff = spec.param(name).effective(setting, labels)
    return {**eff, "allowed": list(eff["allowed"]) if eff["allowed"] is not None else None}


def _case(spec, name, setting):
    labels = {p.name: p.label for p in spec.params}
    p = next(q for q in spec.to_json()["params"] if q["name"] == name)
    return {"op": "effective", "p": p, "params": setting, "labels": labels}


def test_the_combined_ceiling_agrees_with_python():
    spec, rng = attention_cost.SPEC, random.Random(4)
    settings = [{**spec.defaults(), "n_heads": 20, "batch": 10, "head_dim": 160,
                 "dtype": "bfloat16"}]
    for _ in range(300):
        settings.append({**spec.defaults(), "n_heads": rng.randint(1, 32),
                         "batch": rng.randint(1, 16), "head_dim": rng.choice(range(16, 257, 16)),
                         "dtype": rng.choice(list(attention_cost.DTYPES))})
    js = run_js([_case(spec, "context_len", s) for s in settings])
    for s, got in zip(settings, js):
        assert got == _py_effective(spec, "context_len", s), s
        assert got["max"] == attention_cost.check_limit(s)  # the same ceiling compute checks
    # the reviewer's setting: 20 heads x batch 10 x 160 in bfloat16
    assert js[0]["max"] == 64 and "this device's ceiling" in js[0]["why"][0]


def test_the_parity_budget_agrees_with_python():
    spec, rng = parity.SPEC, random.Random(5)
    cases, settings = [], []
    for _ in range(80):
        s = {**spec.defaults(), "n_layers": rng.randint(1, 4),
             "d_model": rng.choice(range(16, 257, 16)), "d_ff": rng.choice(range(8, 1025, 4)),
             "vocab": rng.choice(range(16, 4097, 16)), "tied": rng.random() < 0.5}
        s["n_heads"] = rng.choice(parity.head_counts(s["d_model"]))
        s["n_kv"] = rng.choice(parity.kv_counts(s["n_heads"]))
        for name in ("n_layers", "d_model", "n_heads", "n_kv", "d_ff", "vocab"):
            cases.append(_case(spec, name, s))
            settings.append((name, s))
    for (name, s), got in zip(settings, run_js(cases)):
        assert got == _py_effective(spec, name, s), (name, s)


def test_head_divisibility_and_preset_pins_agree_with_python():
    cases, settings = [], []
    for spec in (model_params.SPEC, kv_cache.SPEC):
        for preset in ("custom", "llama-2-7b", "llama-3-8b"):
            if preset not in spec.param("preset").options:
                continue
            for h in (1, 3, 8, 12, 32, 40, 64, 128):
                s = {**spec.defaults(), "preset": preset, "n_heads": h}
                for name in ("n_heads", "n_kv"):
                    cases.append(_case(spec, name, s))
                    settings.append((spec, name, s))
    for (spec, name, s), got in zip(settings, run_js(cases)):
        assert got == _py_effective(spec, name, s), (spec.name, name, s)


@pytest.mark.parametrize("spec,name,value", [
    (model_params.SPEC, "d_model", 4100), (model_params.SPEC, "d_ff", 11010),
    (kv_cache.SPEC, "head_dim", 100), (parity.SPEC, "vocab", 100), (parity.SPEC, "d_ff", 10),
    (attention_cost.SPEC, "head_dim", 24),
])
def test_the_int_step_grid_is_checked_in_the_same_words(spec, name, value):
    """Code review F11: the browser's pre-check ignored an int's step grid."""
    labels = {p.name: p.label for p in spec.params}
    p = next(q for q in spec.to_json()["params"] if q["name"] == name)
    setting = spec.defaults()
    with pytest.raises(ParamError) as err:
        spec.param(name).validate(value)
    js = run_js([{"op": "check", "p": p, "v": value, "params": setting, "labels": labels}])[0]
    assert js == str(err.value)


def test_log_float_sliders_stop_on_round_values():
    """θ and the rmsnorm scale: 1-2-5 per decade, the ends and the default, no float noise."""
    cases = []
    for spec, name in ((positions_rope.SPEC, "rope_theta"), (rmsnorm.SPEC, "scale")):
        p = next(q for q in spec.to_json()["params"] if q["name"] == name)
        eff = {"min": p["min"], "max": p["max"], "allowed": None}
        cases.append({"op": "stops", "p": p, "eff": eff, "extra": [500000.0, 0.0681292]})
    theta, scale = run_js(cases)
    assert theta[:4] == [78.125, 100, 200, 500] and theta[-2:] == [10_000_000, 10_240_000]
    assert 10000 in theta and 500000 in theta and 20000 in theta
    assert all(v == float(f"{v:.6g}") for v in theta + scale)
    assert scale[:3] == [0.01, 0.02, 0.05] and 1 in scale and scale[-1] == 1000
    assert 0.0681292 not in scale  # a baked value that is not round is no stop
    # a linear float slider gives its step grid, no 0.30000000000000004
    p = next(q for q in rmsnorm.SPEC.to_json()["params"] if q["name"] == "offset")
    got = run_js([{"op": "fromSlider", "p": p, "s": 0.1 + 0.2 - 400 + 0.5 * 3,
                   "eff": {"min": -400, "max": 400}}])[0]
    assert got == -398.0


def test_a_choice_shows_its_option_labels_and_sends_its_keys():
    """The accelerator menus show card names ('H200 141 GB'), while the value sent stays the
    key the API takes ('141'); a choice without labels shows its options."""
    from backend.compute import decode_roofline
    cases, want = [], []
    for spec, name in ((decode_roofline.SPEC, "card"), (kv_cache.SPEC, "memory"),
                       (kv_cache.SPEC, "preset")):
        p = next(q for q in spec.to_json()["params"] if q["name"] == name)
        cases.append({"op": "optionLabels", "p": p})
        want.append(list(spec.param(name).option_labels or spec.param(name).options))
    got = run_js(cases)
    assert got == want
    assert dict(zip(decode_roofline.SPEC.param("card").options, got[0]))["141"] == "H200 141 GB"
    assert dict(zip(kv_cache.SPEC.param("memory").options, got[1]))["24"] == "24 GB card"
    assert got[2] == list(kv_cache.SPEC.param("preset").options)
