// Two rules with one note that both cap a param (attention_cost's memory and work ceilings on
// this device) are said in one clause, the note once, as backend/compute/spec.py says it
// (tests/compute/test_limit_clauses.py): ux review P6.
import assert from "node:assert/strict";
import { test } from "node:test";

import { check, effective } from "../../widgets/runtime/spec.js";

const memory = { budget: 1000, terms: [[1, ["t", "t", "b"]]], note: "the ceiling" };
const work = { budget: 1000, terms: [[1, ["t", "t", "d"]]], note: "the ceiling" };
const labels = { b: "batch", d: "head size", t: "length" };

function param(limits) {
  return { name: "t", label: "length", type: "int", min: 1, max: 100, step: 1, limits };
}

test("two binding rules with one note make one clause", () => {
  const eff = effective(param([memory, work]), { b: 4, d: 40, t: 1 }, labels);
  assert.equal(eff.max, 5);
  assert.deepEqual(eff.why, ["at batch = 4, head size = 40 (the ceiling)"]);
  const said = check(param([memory, work]), 6, { b: 4, d: 40, t: 1 }, labels);
  assert.equal(said.split("(the ceiling)").length, 2, said);
});

test("rules with different notes stay two clauses", () => {
  const eff = effective(param([{ ...memory, note: "one" }, { ...work, note: "two" }]),
                        { b: 4, d: 40, t: 1 }, {});
  assert.deepEqual(eff.why, ["at b = 4 (one)", "at d = 40 (two)"]);
});
