// The runtime's request scheduling (widgets/runtime/scheduler.js): at most one request in flight
// per widget, the newest setting sent the moment the answer before it is in, a text field's
// pause, the time limit, and what becomes of an answer. Its host is a fake here: every request
// waits until the test answers it.
import assert from "node:assert/strict";
import { afterEach, beforeEach, mock, test } from "node:test";

import { MAX_RETRIES, Scheduler, outcome } from "../../widgets/runtime/scheduler.js";

const tick = () => new Promise((resolve) => setImmediate(resolve));  // promise callbacks run

function harness({ timeoutMs = 15000 } = {}) {
  const h = { setting: { x: 1 }, log: [], requests: [], clock: 0 };
  h.scheduler = new Scheduler({
    setting: () => h.setting,
    send: (sent, signal) => new Promise((resolve, reject) => {
      h.requests.push({ sent, signal, resolve, reject });
      signal.addEventListener("abort", () => reject(new Error(String(signal.reason))));
    }),
    sending: (sent) => h.log.push(["sending", sent.x]),
    settled: () => h.log.push(["settled"]),
    answered: (answer, how) => h.log.push(["answered", answer.body.x, how]),
    failed: (why) => h.log.push(["failed", why]),
  }, { timeoutMs, now: () => h.clock });
  // the reader moves a control to x (the widget changes its params, then tells the scheduler)
  h.move = (x, delay) => { h.setting = { ...h.setting, x }; h.scheduler.changed(delay); };
  h.answer = (i, status = 200) => h.requests[i].resolve(
    { resp: { ok: status < 400, status }, body: { x: h.requests[i].sent.x, figure: {} } });
  return h;
}

beforeEach(() => mock.timers.enable({ apis: ["setTimeout"] }));
afterEach(() => mock.timers.reset());

test("a change goes out at once when no request is in flight", () => {
  const h = harness();
  assert.ok(h.scheduler.idle);
  h.move(2);
  assert.deepEqual(h.requests.map((r) => r.sent), [{ x: 2 }]);
  assert.deepEqual(h.scheduler.inFlight, { x: 2 });
  assert.ok(Object.isFrozen(h.scheduler.inFlight));
  assert.ok(!h.scheduler.idle);
});

test("while one is in flight the newest setting waits, and leaves when the answer is in", async () => {
  const h = harness();
  h.move(2);
  h.move(3);
  h.move(4);
  assert.equal(h.requests.length, 1, "at most one request in flight");
  h.answer(0);
  await tick();
  assert.deepEqual(h.requests.map((r) => r.sent.x), [2, 4], "only the newest setting, not 3");
  // the newer setting leaves before the older answer is drawn, which knows it is not the newest
  assert.deepEqual(h.log.slice(1).map((e) => e[0]), ["settled", "sending", "answered"]);
  assert.equal(h.log[3][2].newer, true);
  h.answer(1);
  await tick();
  assert.equal(h.log.at(-1)[2].newer, false);
  assert.ok(h.scheduler.idle);
});

test("a drag that comes back to the setting in flight sends nothing more", async () => {
  const h = harness();
  h.move(2);
  h.move(3);
  h.move(2);
  h.answer(0);
  await tick();
  assert.equal(h.requests.length, 1);
  assert.equal(h.log.at(-1)[2].newer, false);
  assert.ok(h.scheduler.idle);
});

test("text waits for the pause after the last keystroke", () => {
  const h = harness();
  h.move(2, 400);
  mock.timers.tick(399);
  h.move(3, 400);  // a keystroke restarts the pause
  mock.timers.tick(399);
  assert.equal(h.requests.length, 0);
  assert.ok(!h.scheduler.idle);
  mock.timers.tick(1);
  assert.deepEqual(h.requests.map((r) => r.sent.x), [3]);
});

test("no answer in time: the request is aborted, the widget falls back, nothing more is sent", async () => {
  const h = harness({ timeoutMs: 1000 });
  h.move(2);
  h.move(3);  // waits for the answer that never comes
  mock.timers.tick(1000);
  await tick();
  assert.ok(h.requests[0].signal.aborted);
  assert.deepEqual(h.log.at(-1), ["failed", "no answer in time"]);
  assert.equal(h.requests.length, 1, "the waiting setting is not sent until the reader moves");
  assert.ok(h.scheduler.idle);
  h.move(4);
  assert.deepEqual(h.requests.map((r) => r.sent.x), [2, 4]);
});

test("an unreachable server is told from a slow one", async () => {
  const h = harness();
  h.move(2);
  h.requests[0].reject(new TypeError("Failed to fetch"));
  await tick();
  assert.deepEqual(h.log.slice(-2), [["settled"], ["failed", "the server is unreachable"]]);
});

test("cancel aborts the request in flight and its answer is ignored", async () => {
  const h = harness();
  h.move(2);
  h.move(3);
  h.scheduler.cancel();
  assert.ok(h.requests[0].signal.aborted);
  assert.deepEqual(h.log.at(-1), ["settled"]);
  await tick();
  assert.ok(!h.log.some((e) => e[0] === "answered" || e[0] === "failed"));
  assert.equal(h.requests.length, 1);
  assert.ok(h.scheduler.idle);
});

test("drop forgets the setting waiting to go; the answer in flight still lands", async () => {
  const h = harness();
  h.move(2);
  h.move(3, 400);
  h.scheduler.drop();
  mock.timers.tick(400);
  h.answer(0);
  await tick();
  assert.equal(h.requests.length, 1);
  assert.deepEqual(h.log.at(-1).slice(0, 2), ["answered", 2]);
  assert.equal(h.log.at(-1)[2].newer, false);
});

test("due sends the setting though no control moved, after the answer in flight", async () => {
  const h = harness();
  h.scheduler.due();
  assert.deepEqual(h.requests.map((r) => r.sent.x), [1]);
  h.setting = { x: 5 };  // the server's spec moved a value
  h.scheduler.due();
  assert.equal(h.requests.length, 1);
  h.answer(0);
  await tick();
  assert.deepEqual(h.requests.map((r) => r.sent.x), [1, 5]);
});

test("an answer carries the time of the change and of the request", async () => {
  const h = harness();
  h.clock = 10;
  h.move(2, 400);
  h.clock = 420;
  mock.timers.tick(400);
  h.answer(0);
  await tick();
  const how = h.log.at(-1)[2];
  assert.deepEqual([how.inputAt, how.sentAt, how.sent], [10, 420, { x: 2 }]);
});

test("outcome: drawn, dropped, refused in words, a baked stand-in, or a busy server's wait", () => {
  const ok = { resp: { ok: true, status: 200 }, body: { figure: {} } };
  const refused = { resp: { ok: false, status: 400 }, body: { error: "too long", param: "t" } };
  const failed = { resp: { ok: false, status: 500 }, body: { error: "a bug" } };
  const garbled = { resp: { ok: true, status: 200 }, body: null };
  assert.equal(outcome(ok, false), "show");
  assert.equal(outcome(ok, true), "show");
  assert.equal(outcome(refused, false), "refused");
  assert.equal(outcome(failed, false), "fallback");
  assert.equal(outcome(garbled, false), "fallback");
  for (const a of [refused, failed, garbled]) assert.equal(outcome(a, true), "drop");
  // a 429 is no refusal of the reader's input (it was read as one: the controls went back),
  // and a busy answer is said even when the reader has moved on (that setting waits too)
  for (const status of [429, 503]) {
    const busy = { resp: { ok: false, status }, body: { error: "busy" } };
    assert.equal(outcome(busy, false), "busy");
    assert.equal(outcome(busy, true), "busy");
  }
});

// A busy answer (429 or 503) with its Retry-After header, in seconds (null: none).
function busyAnswer(h, i, status, retryAfter) {
  const headers = { get: (k) => (k.toLowerCase() === "retry-after" ? retryAfter : null) };
  h.requests[i].resolve({ resp: { ok: false, status, headers }, body: { error: "busy" } });
}

test("a busy server is asked again only after its Retry-After, whatever the reader does", async () => {
  const h = harness();
  h.move(2);
  busyAnswer(h, 0, 503, "5");
  await tick();
  assert.equal(h.log.at(-1)[2].retryIn, 5000);
  assert.ok(h.scheduler.holding);
  h.move(3);
  h.move(4);
  mock.timers.tick(4999);
  assert.equal(h.requests.length, 1, "nothing leaves during the wait");
  mock.timers.tick(1);
  assert.deepEqual(h.requests.map((r) => r.sent.x), [2, 4], "then the newest setting");
  h.answer(1);
  await tick();
  assert.equal(h.log.at(-1)[2].retryIn, undefined);
  assert.ok(h.scheduler.idle && !h.scheduler.holding);
});

test("a busy answer's setting is asked again by itself, at most MAX_RETRIES times in a row", async () => {
  const h = harness();
  h.move(2);
  for (let i = 0; i < MAX_RETRIES; i++) {
    busyAnswer(h, i, 429, "2");
    await tick();
    assert.equal(h.log.at(-1)[2].retryIn, 2000);
    mock.timers.tick(2000);
    assert.equal(h.requests.length, i + 2, "asked again after the wait");
  }
  busyAnswer(h, MAX_RETRIES, 429, "2");
  await tick();
  assert.equal(h.log.at(-1)[2].retryIn, null, "it stops asking by itself");
  mock.timers.tick(60000);
  assert.equal(h.requests.length, MAX_RETRIES + 1);
  h.move(3);  // a reader's move asks again (the wait is over)
  assert.deepEqual(h.requests.at(-1).sent, { x: 3 });
});

test("without a Retry-After the waits double", async () => {
  const h = harness();
  h.move(2);
  const waits = [];
  for (let i = 0; i < 3; i++) {
    busyAnswer(h, i, 503, null);
    await tick();
    waits.push(h.log.at(-1)[2].retryIn);
    mock.timers.tick(waits[i]);
  }
  assert.deepEqual(waits, [2000, 4000, 8000]);
});
