/* The questions' checking (widgets/runtime/questions.js): the forms readers type, the verdicts
 * and the progress kept; and every question of the book, from tests/js/cases/questions.json
 * (written by Python from the same questions the build puts in the pages), accepts the worked
 * answer's own number and refuses the wrong ones, as Python's rule does. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { checkAnswer, isRight, lastTyped, loadProgress, parseAnswer, plain, record, saveProgress,
         STORE_KEY, tally } from "../../widgets/runtime/questions.js";

const BOOK = JSON.parse(readFileSync(new URL("./cases/questions.json", import.meta.url)));

test("the forms readers type", () => {
  const cases = [
    ["1,024", "", 1024], ["1 024", "", 1024], ["1\u202f024", "", 1024], ["1,234,567.5", "", 1234567.5],
    ["1e-3", "", 0.001], ["1E3", "", 1000], ["2.5e+2", "", 250], [".5", "", 0.5], ["0,5", "", 0.5],
    ["\u22123", "", -3], ["-3", "", -3], ["+7", "", 7], ["1.2\u00d710^-3", "", 0.0012],
    ["1.2 x 10^(-3)", "", 0.0012], ["3*10^4", "", 30000], ["1/8", "", 0.125], ["  42  ", "", 42],
    ["12 %", "", 0.12], ["12%", "", 0.12], ["12 %", "%", 12], ["12", "%", 12],
    ["12 percent", "%", 12], ["128 KiB", "KiB", 128], ["128kib", "KiB", 128], ["4x", "", 4],
    ["4 \u00d7", "", 4], ["4", "", 4], ["\u00d74", "", 4], ["x 4", "", 4],
    ["1 KiB", "bytes", 1024], ["0.97 MB", "bytes", 970000], ["302 MB", "GB", 0.302],
    ["131072 bytes", "KiB", 128], ["2 GiB", "MiB", 2048], ["31 users", "users", 31],
  ];
  for (const [typed, unit, value] of cases) {
    const got = parseAnswer(typed, unit);
    assert.ok(!got.error, `${typed}: ${got.error}`);
    assert.ok(Math.abs(got.value - value) <= 1e-12 * Math.abs(value), `${typed} -> ${got.value}`);
  }
});

test("garbage is refused with a reason, never taken as a number", () => {
  for (const typed of ["", "   ", "abc", "1.2.3", "1,,2", "12..5", "e5", "--3", "1/0", "NaN",
                       "Infinity", "1e999", "0x10", "12 apples", "3 users", "1 2 3 4", "12 %"]) {
    const got = parseAnswer(typed, "KiB");
    assert.ok(got.error && got.value === undefined, `${JSON.stringify(typed)} -> ${JSON.stringify(got)}`);
    assert.ok(got.error.length > 10);
  }
  assert.match(parseAnswer("12 apples", "KiB").error, /in KiB/);
  assert.match(parseAnswer("50%", "bytes").error, /not a percentage/);   // a size is not a share
});

test("a verdict says how far off, and names a unit slip", () => {
  const q = { kind: "number", expected: 128, tolerance: { rel: 0.01 }, unit: "KiB", shown: "128 KiB" };
  assert.equal(checkAnswer(q, 128.5).ok, true);
  assert.match(checkAnswer(q, 128.5).message, /^Right: 128 KiB/);
  const high = checkAnswer(q, 140);
  assert.equal(high.ok, false);
  assert.equal(high.hint, true);
  assert.match(high.message, /9 % too high/);
  assert.match(checkAnswer(q, 100).message, /22 % too low/);
  assert.match(checkAnswer(q, 512).message, /4 times too high/);
  assert.match(checkAnswer(q, 131072).message, /factor of 1,024/);
  assert.match(checkAnswer(q, -128).message, /too low/);
  const share = { kind: "number", expected: 12.5, tolerance: { abs: 0.5 }, unit: "%", shown: "12.5 %" };
  assert.match(checkAnswer(share, 0.125).message, /percent/);
  const count = { kind: "number", expected: 14, tolerance: { integer: true }, unit: "", shown: "14" };
  assert.equal(checkAnswer(count, 14).ok, true);
  assert.equal(checkAnswer(count, 14.4).ok, false);
  assert.match(checkAnswer(count, 14.4).message, /whole number/);
  assert.equal(checkAnswer(count, 15).ok, false);
  const pick = { kind: "choice", expected: "no", shown: "No." };
  assert.equal(checkAnswer(pick, "no").ok, true);
  assert.equal(checkAnswer(pick, "yes").ok, false);
  assert.match(checkAnswer(pick, null).message, /Pick one/);
});

test("numbers in feedback read as a person writes them", () => {
  assert.equal(plain(131072), "131,072");
  assert.equal(plain(0.0123456), "0.01235");
  assert.equal(plain(4), "4");
  assert.equal(plain(2.5e-7), "2.5e-7");
});

test("progress: kept by id and version, right once is right, a changed question starts afresh", () => {
  const store = new Map();
  const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v),
                    removeItem: (k) => store.delete(k) };
  let p = loadProgress(storage);
  assert.deepEqual(p, {});
  p = record(p, "serving.1", "v1", false);
  p = record(p, "serving.1", "v1", true);
  p = record(p, "serving.1", "v1", false);
  assert.deepEqual(p["serving.1"], { v: "v1", ok: true, tries: 3 });
  p = record(p, "serving.1", "v1", true, "128 KiB");
  assert.equal(lastTyped(p, "serving.1", "v1"), "128 KiB");
  assert.equal(lastTyped(p, "serving.1", "v2"), null);               // not for a changed question
  assert.equal(record(p, "x.1", "v", false, "9".repeat(99))["x.1"].a.length, 60);
  assert.ok(saveProgress(storage, p));
  assert.ok(isRight(loadProgress(storage), "serving.1", "v1"));
  assert.equal(loadProgress(storage)["serving.1"].tries, 4);
  assert.ok(!isRight(loadProgress(storage), "serving.1", "v2"));   // a new release changed it
  assert.deepEqual(record(loadProgress(storage), "serving.1", "v2", false)["serving.1"],
                   { v: "v2", ok: false, tries: 1 });
  const manifest = { chapters: [{ url: "chapters/serving/", title: "Serving",
                                  questions: [["serving.1", "v1"], ["serving.2", "w"]] }] };
  assert.deepEqual(tally(manifest, loadProgress(storage)),
                   [{ url: "chapters/serving/", title: "Serving", right: 1, total: 2 }]);
  store.set(STORE_KEY, "{not json");
  assert.deepEqual(loadProgress(storage), {});
  const blocked = { getItem() { throw new Error("denied"); }, setItem() { throw new Error("denied"); } };
  assert.deepEqual(loadProgress(blocked), {});
  assert.equal(saveProgress(blocked, p), false);
});

test("every question of the book: its worked answer is right, and the wrong ones are refused", () => {
  assert.ok(BOOK.questions.length >= 3);
  const ids = new Set();
  for (const { q, right, wrong } of BOOK.questions) {
    assert.ok(!ids.has(q.id), `${q.id} twice`);
    ids.add(q.id);
    for (const [typed, value] of right) {
      const parsed = q.kind === "choice" ? { value: typed } : parseAnswer(typed, q.unit);
      assert.ok(!parsed.error, `${q.id}: ${typed}: ${parsed.error}`);
      if (q.kind !== "choice") assert.ok(Math.abs(parsed.value - value) <= 1e-9 * Math.abs(value));
      assert.equal(checkAnswer(q, parsed.value).ok, true, `${q.id}: ${typed} refused`);
    }
    for (const value of wrong) {
      assert.equal(checkAnswer(q, value).ok, false, `${q.id}: ${value} taken as right`);
    }
  }
});
