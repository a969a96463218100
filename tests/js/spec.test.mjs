// The runtime's spec rules (widgets/runtime/spec.js) answer as backend/compute/spec.py does, on
// the cases Python wrote (tests/js/cases.py -> cases/spec.json): every widget's spec as the page
// gets it, a param's effective range under the other params (Param.effective), and the message
// for a value (Param.validate, then Param.validate_with; null when valid).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { check, effective, fromSlider, stops, toSlider } from "../../widgets/runtime/spec.js";

const { specs, settings } = JSON.parse(
  readFileSync(new URL("./cases/spec.json", import.meta.url), "utf8"));

function param(widget, name) {
  return specs[widget].params.find((p) => p.name === name);
}

// A param that is not a number has no min and max: spec.py says null, the page's JSON leaves
// them out (undefined). The same answer.
function plainEff(eff) {
  return Object.fromEntries(Object.entries(eff).filter(([k, v]) =>
    !((k === "min" || k === "max") && (v === null || v === undefined))));
}

function labels(widget) {
  return Object.fromEntries(specs[widget].params.map((p) => [p.name, p.label]));
}

test("the shared cases cover every widget, with rules between params", () => {
  assert.ok(Object.keys(specs).length >= 20);
  assert.ok(settings.some((s) => Object.keys(s.effective).length));
  assert.ok(settings.some((s) => s.checks.some((c) => c[2] === null)));
  assert.ok(settings.some((s) => s.checks.some((c) => c[2] !== null)));
});

test("effective agrees with spec.py's Param.effective", () => {
  const bad = [];
  for (const s of settings) {
    for (const [name, want] of Object.entries(s.effective)) {
      const got = effective(param(s.widget, name), s.params, labels(s.widget));
      try { assert.deepEqual(plainEff(got), plainEff(want)); } catch (e) {
        bad.push({ widget: s.widget, param: name, params: s.params, python: want, runtime: got });
      }
    }
  }
  assert.deepEqual(bad, []);
});

test("check words a refused value as spec.py does, and passes what it passes", () => {
  const bad = [];
  for (const s of settings) {
    for (const [name, v, want] of s.checks) {
      const got = check(param(s.widget, name), v, s.params, labels(s.widget));
      if (got !== want) bad.push({ widget: s.widget, param: name, v, python: want, runtime: got });
    }
  }
  assert.deepEqual(bad, []);
});

test("a slider's stops are allowed values, and each position maps back to its stop", () => {
  for (const s of settings) {
    for (const [name, eff] of Object.entries(s.effective)) {
      const p = param(s.widget, name);
      if (!(p.type === "int" || p.type === "float") || eff.disabled) continue;
      const list = stops(p, eff, []);
      if (!list) continue;
      for (const [i, v] of list.entries()) {
        assert.ok(v >= eff.min && v <= eff.max, `${s.widget}.${name}: stop ${v} out of range`);
        if (eff.allowed) assert.ok(eff.allowed.includes(v), `${s.widget}.${name}: stop ${v}`);
        assert.equal(toSlider(p, v, list), i);
        assert.equal(fromSlider(p, i, eff, list), v);
      }
    }
  }
});
