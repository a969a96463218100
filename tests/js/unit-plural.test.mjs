/* Units after a number: "1 token", never "1 tokens" (issue 30's fresh reader found "1 radians"),
 * for every unit a spec uses; symbols, abbreviations and phrases stay as written. */
import { test } from "node:test";
import assert from "node:assert/strict";

import { unitAfter, withUnit } from "../../widgets/runtime/format.js";
import { valueText } from "../../widgets/runtime/controls.js";

test("a plural word unit is singular after exactly one", () => {
  for (const [unit, one] of [["tokens", "token"], ["steps", "step"], ["token slots", "token slot"],
                             ["windows", "window"], ["radians", "radian"], ["positions", "position"],
                             ["pairs", "pair"], ["turns", "turn"]]) {
    assert.equal(withUnit(1, "d", unit), "1 " + one);
    assert.equal(withUnit(1, ",d", unit), "1 " + one);
    assert.equal(withUnit(-1, "d", unit), "-1 " + one);
    assert.equal(withUnit(2, "d", unit), "2 " + unit);
    assert.equal(withUnit(0, "d", unit), "0 " + unit);
    assert.equal(withUnit(1.04, ".2f", unit), "1.04 " + unit);
    assert.equal(withUnit(1, ".1f", unit), "1.0 " + unit);   // "1.0 tokens": not the number one
    assert.equal(withUnit(11, "d", unit), "11 " + unit);
  }
});

test("symbols, abbreviations and phrases keep the spec's unit", () => {
  for (const unit of ["ms", "s", "GB", "bytes/s", "$ per hour", "$ per million tokens",
                      "× a target step", "tokens/s", "class"]) {
    assert.equal(unitAfter("1", unit), " " + unit);
  }
  assert.equal(withUnit(1, "d", ""), "1");
  assert.equal(unitAfter("1", undefined), "");
});

test("a slider's spoken value follows the same rule", () => {
  assert.equal(valueText({ type: "int", unit: "tokens" }, 1), "1 token");
  assert.equal(valueText({ type: "int", unit: "tokens" }, 2), "2 tokens");
  assert.equal(valueText({ type: "float", unit: "" }, 78.125), "78.12");
});
