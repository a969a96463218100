// The runtime's other pure parts: the baked stand-in (baked.js), the server's spec taken in
// (live-spec.js), the result's request and a busy server's wait (api.js), the notebook link
// (actions.js), the status line's words (render.js) and the phone layout (theme.js).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { attachmentName, notebookHref, notebookRequest } from "../../widgets/runtime/actions.js";
import { MAX_GET_LINE, RETRY_MAX_MS, RETRY_MIN_MS, busy, requestLineLength, resultRequest,
         retryAfterMs } from "../../widgets/runtime/api.js";
import { nearestBaked, unbaked } from "../../widgets/runtime/baked.js";
import { intoRange, mergeSpec } from "../../widgets/runtime/live-spec.js";
import { statusText } from "../../widgets/runtime/render.js";
import { NARROW_MARGIN, narrowFigure } from "../../widgets/runtime/theme.js";

const { specs } = JSON.parse(readFileSync(new URL("./cases/spec.json", import.meta.url), "utf8"));
const defaults = (spec) => Object.fromEntries(spec.params.map((p) => [p.name, p.default]));
const PAGE = "https://book.example/chapters/scaling/";

const SPEC = { name: "demo", params: [
  { name: "n", label: "positions", type: "int", min: 1, max: 1024, default: 8, scale: "log2" },
  { name: "text", label: "text", type: "text", max_length: 100, default: "a" },
] };
const baked = (n, text = "a") => ({ params: { n, text } });

test("the nearest baked result is the nearest on a log slider's scale", () => {
  const points = [baked(8), baked(256)];
  assert.equal(nearestBaked(SPEC, points, { n: 128, text: "a" }, {}, {}), points[1]);
  assert.equal(nearestBaked(SPEC, points, { n: 16, text: "a" }, {}, {}), points[0]);
});

test("a text no baked result has gets no stand-in, and is named", () => {
  const points = [baked(8), baked(256)];
  assert.equal(nearestBaked(SPEC, points, { n: 8, text: "b" }, {}, {}), null);
  assert.deepEqual(unbaked(SPEC, points, { n: 8, text: "b" }).map((p) => p.name), ["text"]);
  assert.deepEqual(unbaked(SPEC, points, { n: 9, text: "a" }), []);
});

test("a param disabled under the current setting does not count", () => {
  const spec = specs.attention_map, start = defaults(spec);   // average: layer and head disabled
  const at = (params) => [{ params: { ...params, layer: 0, head: 3 } },
                          { params: { ...params, layer: 5, head: 0 } }];
  const want = { ...start, layer: 0, head: 0 };
  const tied = at(start);
  assert.equal(nearestBaked(spec, tied, want, start, {}), tied[0], "a tie: the first");
  const apart = { ...start, average: false }, points = at(apart);
  assert.equal(nearestBaked(spec, points, { ...want, average: false }, apart, {}), points[1],
               "3 of 12 heads away is further than 5 of 30 layers");
});

test("the server's spec is taken in where it differs, defaults as built", () => {
  const spec = specs.attention_cost;
  assert.equal(mergeSpec(spec, structuredClone(spec)), null, "the same spec: nothing to adopt");
  assert.equal(mergeSpec(spec, { ...spec, name: "other" }), null);
  assert.equal(mergeSpec(spec, { ...spec, params: spec.params.slice(1) }), null);
  const num = spec.params.find((p) => p.type === "int");
  const live = structuredClone(spec);
  const theirs = live.params.find((p) => p.name === num.name);
  theirs.max = num.max * 2;
  theirs.default = num.default * 2;
  const merged = mergeSpec(spec, live);
  assert.deepEqual(merged.changed, [{ param: { ...theirs, default: num.default },
                                      fallback: theirs.default }]);
  assert.equal(merged.spec.params.find((p) => p.name === num.name).max, num.max * 2);
  assert.equal(merged.spec.name, spec.name);
  const retyped = structuredClone(spec);
  retyped.params.find((p) => p.name === num.name).type = "float";
  assert.equal(mergeSpec(spec, retyped), null, "another version of the book: the baked spec stands");
});

test("a value the server's range excludes moves into it, and says so", () => {
  const p = { name: "n", label: "context", type: "int", min: 1, max: 4096 };
  assert.deepEqual(intoRange(p, 100, 8), { value: 100, moved: null });
  assert.deepEqual(intoRange(p, 8192, 8),
                   { value: 4096, moved: "'context' set to 4096 (from 1 to 4096)" });
  const c = { name: "model", label: "model", type: "choice", options: ["book"] };
  assert.deepEqual(intoRange(c, "local", "book"),
                   { value: "book", moved: "'model' set to book (not local)" });
});

test("a setting goes as a GET, unless too long for a request line", () => {
  const spec = specs.attention_scaling, params = defaults(spec);
  const get = resultRequest("/api", spec, params, PAGE);
  assert.match(get.url, /^\/api\/widgets\/attention_scaling\/result\?d_k=\d+/);
  assert.equal(get.init.method, undefined);
  assert.deepEqual(get.init.headers, { "Accept": "application/json" });
  const text = specs.attention_map, long = { ...defaults(text), text: "\u0928".repeat(300) };
  const post = resultRequest("https://api.example/api", text, long, PAGE);
  assert.ok(requestLineLength(resultRequest("/api", text, defaults(text), PAGE).url, PAGE) <
            MAX_GET_LINE);
  assert.equal(post.url, "https://api.example/api/widgets/attention_map");
  assert.equal(post.init.method, "POST");
  assert.deepEqual(JSON.parse(post.init.body), long);
  assert.equal(post.init.headers["Content-Type"], "application/json");
});

test("the notebook link carries the values that differ from the defaults", () => {
  const spec = specs.attention_scaling, params = defaults(spec);
  assert.equal(notebookHref("/api", spec, params), "/api/widgets/attention_scaling/notebook");
  const d = spec.params[0];
  assert.equal(notebookHref("/api", spec, { ...params, [d.name]: d.max }),
               `/api/widgets/attention_scaling/notebook?${d.name}=${d.max}`);
});

test("a setting too long for a link asks for its notebook by POST, with the setting as JSON", () => {
  const short = { n: 8, text: "x".repeat(10) };
  assert.deepEqual(notebookRequest("/api", SPEC, short, PAGE),
                   { href: "/api/widgets/demo/notebook?text=xxxxxxxxxx", post: null });
  // each Devanagari letter is nine bytes once escaped: 230 of them pass MAX_GET_LINE
  const long = { n: 8, text: "\u0915".repeat(230) };
  assert.ok(requestLineLength(notebookHref("/api", SPEC, long), PAGE) > MAX_GET_LINE);
  const req = notebookRequest("/api", SPEC, long, PAGE);
  assert.equal(req.href, "/api/widgets/demo/notebook");
  assert.deepEqual(JSON.parse(req.post), long);
  assert.equal(attachmentName('attachment; filename="demo_text-x_0123456789.ipynb"'),
               "demo_text-x_0123456789.ipynb");
  assert.equal(attachmentName('attachment; filename="../evil"'), null);
  assert.equal(attachmentName(null), null);
});

test("the status line says where a result came from, claiming no compute for a cached one", () => {
  const live = { device: "cpu", elapsed_ms: 12.345, roundTripMs: 30.4 };
  assert.equal(statusText(live, {}, ""), "Computed live on cpu in 12.3 ms; round trip 30 ms.");
  assert.match(statusText({ ...live, cached: true, cachedBy: "browser" }, {}, ""),
               /earlier; this answer came from your browser's cache \(nothing recomputed\)/);
  assert.match(statusText({ ...live, cached: true }, {}, ""), /from the server's cache/);
  assert.equal(statusText(live, { precomputed: "offline", why: "no answer in time" }, "n = 8"),
               "no answer in time, so this is the nearest result baked into the page: n = 8.");
  assert.match(statusText(live, { precomputed: "built" }, ""), /^computed when the book was built/);
});

test("a busy server's Retry-After, in seconds or as a date, is the wait, within bounds", () => {
  assert.ok(busy(429) && busy(503) && !busy(400) && !busy(500) && !busy(200));
  const now = Date.UTC(2026, 11, 6, 12, 0, 0);
  assert.equal(retryAfterMs("5", now), 5000);
  assert.equal(retryAfterMs(" 30 ", now), 30000);
  assert.equal(retryAfterMs(new Date(now + 7000).toUTCString(), now), 7000);
  assert.equal(retryAfterMs("0", now), RETRY_MIN_MS, "never at once: that would hammer it");
  assert.equal(retryAfterMs(new Date(now - 7000).toUTCString(), now), RETRY_MIN_MS);
  assert.equal(retryAfterMs("86400", now), RETRY_MAX_MS);
  // none, or one that does not parse: 2 s, doubling with each busy answer in a row
  for (const value of [null, undefined, "", "soon", "-3", "1.5"]) {
    assert.equal(retryAfterMs(value, now), 2000, String(value));
  }
  assert.deepEqual([0, 1, 2, 10].map((n) => retryAfterMs(null, now, n)),
                   [2000, 4000, 8000, RETRY_MAX_MS]);
});

test("the phone layout keeps the book's margins, and a wider right one a figure asks for", () => {
  const fig = { data: [{ type: "bar" }, { type: "heatmap" }],
                layout: { height: 400, margin: { l: 120, r: 80, t: 30, b: 40 } } };
  const plain = narrowFigure(fig).layout;
  assert.deepEqual(plain.margin, { ...NARROW_MARGIN, t: 30, b: 40 }, "the wide layout's sides go");
  const asks = narrowFigure({ ...fig, narrow: { height: 600, margin: { r: 60, t: 50 } },
                              narrow_traces: [null, { colorbar: { len: 1 } }] });
  assert.deepEqual(asks.layout.margin, { l: NARROW_MARGIN.l, r: 60, t: 50, b: 40 });
  assert.equal(asks.layout.height, 600);
  assert.deepEqual(asks.data, [{ type: "bar" }, { type: "heatmap", colorbar: { len: 1 } }]);
  // less than the book's right margin is not taken: the phone's width is too precious
  assert.equal(narrowFigure({ ...fig, narrow: { margin: { r: 2 } } }).layout.margin.r,
               NARROW_MARGIN.r);
  assert.deepEqual(fig.layout.margin, { l: 120, r: 80, t: 30, b: 40 }, "the figure is not changed");
});
