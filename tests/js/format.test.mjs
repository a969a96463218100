// The runtime's formatValue (widgets/runtime/format.js) writes a number as Python's
// format(x, fmt) does, for every format the specs use, on the cases Python wrote
// (tests/js/cases.py -> cases/format.json).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { formatValue } from "../../widgets/runtime/format.js";

const { cases } = JSON.parse(readFileSync(new URL("./cases/format.json", import.meta.url), "utf8"));

test("formatValue agrees with Python's format on every shared case", () => {
  assert.ok(cases.length > 1000, `only ${cases.length} cases`);
  const bad = cases.filter(([x, fmt, want]) => formatValue(x, fmt) !== want)
    .map(([x, fmt, want]) => ({ x, fmt, python: want, runtime: formatValue(x, fmt) }));
  assert.deepEqual(bad, []);
});

test("exact binary ties round half to even, as Python does", () => {
  assert.equal(formatValue(0.125, ".2f"), "0.12");
  assert.equal(formatValue(0.375, ".2f"), "0.38");
  assert.equal(formatValue(1234.5, ",.0f"), "1,234");
  assert.equal(formatValue(2.5, ".1e"), "2.5e+00");
});

test("what is not a finite number, or not a format it knows, is written as it is", () => {
  assert.equal(formatValue("book", ".3g"), "book");
  assert.equal(formatValue(Infinity, ".3g"), "Infinity");
  assert.equal(formatValue(0.5, "x"), "0.5");
});
