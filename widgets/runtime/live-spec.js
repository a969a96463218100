/* The server's own spec: fetched once per page for all its widgets (liveSpecs), and what a
 * widget takes from it in place of the spec baked at build time (mergeSpec, intoRange: pure, so
 * node runs them, tests/js/live-spec.test.mjs). The widget adopts it (widget.js adoptSpec). */

import { canonical, isNum, nearestLegal, plain } from "./spec.js";

/* The server's specs, asked once per page for all its widgets (`GET /api/widgets`) and shared
 * by them, reused across instant navigation for a few minutes (the server allows a browser as
 * long). Its device and configuration set some ranges and choices (a context ceiling, a
 * `local` checkpoint) that a page built elsewhere cannot know. Resolves with {name: spec}, or
 * with null when the API does not answer in SPEC_TIMEOUT_MS or answers with an error: then
 * the baked spec stands, silently (offline, a static host). Never rejects. */
const SPEC_TIMEOUT_MS = 3000, SPEC_REUSE_MS = 300000;
const liveSpecCache = {};
export function liveSpecs(api) {
  const now = Date.now(), held = liveSpecCache[api];
  if (held && now - held.at < SPEC_REUSE_MS) return held.promise;
  const controller = window.AbortController ? new AbortController() : null;
  let answered = false;
  // The wait is for the server: once its headers are in, the body (about 14 kB) is read to the
  // end, however long a busy page takes to get to it.
  const timer = setTimeout(() => {
    if (controller && !answered) controller.abort();
  }, SPEC_TIMEOUT_MS);
  const entry = { at: now };
  entry.promise = Promise.resolve()
    .then(() => fetch(`${api}/widgets`, { headers: { "Accept": "application/json" },
                                          signal: controller ? controller.signal : undefined }))
    .then((resp) => {
      answered = true;
      return resp.ok ? resp.json() : null;
    })
    .then((body) => {
      if (!body || !Array.isArray(body.widgets)) return null;
      const byName = {};
      for (const w of body.widgets) if (w && w.name) byName[w.name] = w;
      return byName;
    })
    .catch(() => null)
    .then((specs) => {
      clearTimeout(timer);
      if (!specs && liveSpecCache[api] === entry) delete liveSpecCache[api];  // next page asks again
      return specs;
    });
  liveSpecCache[api] = entry;
  return entry.promise;
}

/* `spec` with the server's `live` one adopted: every field of every param but its default (the
 * page's start and baked results stay as built). Returns {spec, changed: [{param, fallback}]}
 * (the params whose range, choices or rules changed, each with the server's default, which its
 * spec allows by construction), or null when the server's spec is of another shape (a server
 * running another version of the book: the baked spec stands) or the same as the baked one. */
export function mergeSpec(spec, live) {
  if (live.name !== spec.name || !Array.isArray(live.params) ||
      live.params.length !== spec.params.length) return null;
  const theirs = {};
  for (const q of live.params) if (q) theirs[q.name] = q;
  const params = [], changed = [];
  for (const p of spec.params) {
    const q = theirs[p.name];
    if (!q || q.type !== p.type) return null;
    const np = { ...q, "default": p["default"] };
    if (canonical(np) === canonical(p)) { params.push(p); continue; }  // its control stays
    params.push(np);
    changed.push({ param: np, fallback: q["default"] });
  }
  if (!changed.length) return null;
  return { spec: { ...spec, params }, changed };
}

/* The reader's value `v` of a param the server's spec changed: kept where the server allows it,
 * else moved to the nearest value allowed (`fallback` when there is none), and said in words.
 * Returns {value, moved: the words, or null}. */
export function intoRange(p, v, fallback) {
  const nv = nearestLegal(p, v, fallback);
  if (nv === v) return { value: v, moved: null };
  return { value: nv, moved: `'${p.label}' set to ${plain(nv)} (` +
    (isNum(p) ? `from ${p.min} to ${p.max}` : `not ${plain(v)}`) + ")" };
}
