// Every slider reaches both ends of its param's range as the page offers it (issue 33: a log2
// slider of whole steps from its min stopped at 256 under a max of 400, and at 1024 under a
// ceiling of 1448). The browser's range input only takes min + k * step up to its max; End
// puts it on the largest of those, Home on its min. On every case tests/js/cases.py wrote (each
// widget's params under settings that move their ceilings), that position must map back to the
// param's max, and Home to its min.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { fromSlider, sliderRange, stops } from "../../widgets/runtime/spec.js";

const { specs, settings } = JSON.parse(
  readFileSync(new URL("./cases/spec.json", import.meta.url), "utf8"));

// where <input type=range> puts End: the last min + k * step at or under max
function endPosition(r) {
  if (r.step === "any") return r.max;
  return r.min + Math.floor((r.max - r.min) / r.step + 1e-9) * r.step;
}

const near = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));

test("End reaches every slider's max and Home its min, log or not, under every ceiling", () => {
  const bad = [];
  let logs = 0;
  for (const s of settings) {
    for (const [name, eff] of Object.entries(s.effective)) {
      const p = specs[s.widget].params.find((q) => q.name === name);
      if (!(p.type === "int" || p.type === "float") || eff.disabled) continue;
      if (p.scale === "log2") logs++;
      const list = stops(p, eff, []), r = sliderRange(p, eff, list);
      const top = fromSlider(p, endPosition(r), eff, list), bottom = fromSlider(p, r.min, eff, list);
      const want = list ? [list[0], list[list.length - 1]] : [eff.min, eff.max];
      if (!near(top, want[1]) || !near(bottom, want[0])) {
        bad.push(`${s.widget}.${name} under ${JSON.stringify(s.params)}: ` +
                 `slider spans ${bottom}..${top}, range ${want[0]}..${want[1]}`);
      }
      if (eff.allowed) continue;
      if (!near(want[1], eff.max)) bad.push(`${s.widget}.${name}: last stop ${want[1]}, max ${eff.max}`);
    }
  }
  assert.ok(logs > 10, "the cases hold log sliders");
  assert.deepEqual(bad, []);
});
