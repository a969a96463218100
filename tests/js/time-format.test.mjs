// A time in milliseconds reads in seconds from 1,000 ms up, never in e-notation (a timing
// widget printed "1.01e+04 ms": the spec's ".3g" on 10,100 ms), in the values list and the
// status line alike.
import assert from "node:assert/strict";
import { test } from "node:test";

import { statusText } from "../../widgets/runtime/render.js";
import { withUnit } from "../../widgets/runtime/format.js";

test("milliseconds from 1,000 up read in seconds, to three figures", () => {
  assert.equal(withUnit(10123, ".3g", "ms"), "10.1 s");
  assert.equal(withUnit(1000, ".3g", "ms"), "1 s");
  assert.equal(withUnit(1234.5, ".1f", "ms"), "1.23 s");
  assert.equal(withUnit(2.5e6, ".3g", "ms"), "2,500 s");
  assert.equal(withUnit(-10123, ".3g", "ms"), "-10.1 s");
});

test("shorter times, and other units, keep the spec's format", () => {
  assert.equal(withUnit(12.345, ".3g", "ms"), "12.3 ms");
  assert.equal(withUnit(999, ".3g", "ms"), "999 ms");
  assert.equal(withUnit(12.345, ".1f", "ms"), "12.3 ms");
  assert.equal(withUnit(131072, ",d", "bytes"), "131,072 bytes");
  assert.equal(withUnit(0.5, ".2f", ""), "0.50");
});

test("no time the page writes is in e-notation, from 0.01 ms to a day", () => {
  for (let ms = 0.01; ms < 864e5; ms *= 1.37) {
    for (const fmt of [".3g", ".1f"]) assert.doesNotMatch(withUnit(ms, fmt, "ms"), /e[+-]/);
  }
});

test("the status line's compute time and round trip read in seconds when long", () => {
  const slow = { device: "cpu", elapsed_ms: 10123, roundTripMs: 10456.4 };
  assert.equal(statusText(slow, {}, ""), "Computed live on cpu in 10.1 s; round trip 10.5 s.");
});
