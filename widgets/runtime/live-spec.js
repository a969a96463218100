/* The server's own spec: fetched once per page for all its widgets, and adopted by each widget
 * in place of the one baked at build time (Widget methods). */

import { buildControl } from "./controls.js";
import { canonical, isNum, nearestLegal, plain } from "./spec.js";

export var methods = {};

/* The server's specs, asked once per page for all its widgets (`GET /api/widgets`) and shared
 * by them, reused across instant navigation for a few minutes (the server allows a browser as
 * long). Its device and configuration set some ranges and choices (a context ceiling, a
 * `local` checkpoint) that a page built elsewhere cannot know. Resolves with {name: spec}, or
 * with null when the API does not answer in SPEC_TIMEOUT_MS or answers with an error: then
 * the baked spec stands, silently (offline, a static host). Never rejects. */
var SPEC_TIMEOUT_MS = 3000, SPEC_REUSE_MS = 300000;
var liveSpecCache = {};
export function liveSpecs(api) {
  var now = Date.now(), held = liveSpecCache[api];
  if (held && now - held.at < SPEC_REUSE_MS) return held.promise;
  var controller = window.AbortController ? new AbortController() : null, answered = false;
  // The wait is for the server: once its headers are in, the body (about 14 kB) is read to the
  // end, however long a busy page takes to get to it.
  var timer = setTimeout(function () {
    if (controller && !answered) controller.abort();
  }, SPEC_TIMEOUT_MS);
  var entry = { at: now };
  entry.promise = Promise.resolve().then(function () {
    return fetch(api + "/widgets", { headers: { "Accept": "application/json" },
                                     signal: controller ? controller.signal : undefined });
  }).then(function (resp) {
    answered = true;
    return resp.ok ? resp.json() : null;
  })
    .then(function (body) {
      if (!body || !Array.isArray(body.widgets)) return null;
      var byName = {};
      body.widgets.forEach(function (w) { if (w && w.name) byName[w.name] = w; });
      return byName;
    })
    .catch(function () { return null; })
    .then(function (specs) {
      clearTimeout(timer);
      if (!specs && liveSpecCache[api] === entry) delete liveSpecCache[api];  // next page asks again
      return specs;
    });
  liveSpecCache[api] = entry;
  return entry.promise;
}

/* The server's spec for this widget (see liveSpecs) in place of the baked one, or null when
 * the server did not answer. Adopted: every field of every param but its default (the page's
 * start and baked results stay as built); only a control whose range, choices or rules
 * changed is built anew, in its place. The reader's values stay where the server allows them;
 * one it does not moves to the nearest allowed value, a notice says so, and that setting is
 * computed live (otherwise the baked figure stays until the reader moves). A shared link is
 * computed now, once its values have been read against the spec that decides them: a value
 * the baked spec refused is read again against the server's. */
methods.adoptSpec = function (live) {
  var moved = live ? adoptParams(this, live) : null, relinked = false;
  if (moved && this.stickyNotice) {  // the link's setting the baked spec refused, and the
    this.stickyNotice = "";          // reader has not acted since
    relinked = this.readUrl();
  }
  if (moved) {
    this.sizeBoxes();  // rebuilt controls: boxes as wide as their new ranges need
    moved = moved.concat(this.applyDepends());
    if (moved.length) this.movedNotice = "This server's limits: " + moved.join("; ") + ".";
    this.setNotice([this.shown && this.shown.notice, this.stickyNotice, this.movedNotice]
                   .filter(Boolean).join(" "));
  }
  var linked = this.linked;
  this.linked = false;
  var pending = this.inflight ? JSON.parse(this.inflightBody) : (this.shown || {}).params;
  if (((moved && moved.length) || relinked || linked) &&
      canonical(this.params) !== canonical(pending || {})) {
    this.dirty = true;
    this.changedAt = performance.now();
    this.flush();
  }
  return !!moved;
};

/* adoptSpec's first half: null when the server's spec is of another shape (a server running
 * another version of the book: the baked spec stands) or the same as the baked one; else the
 * values moved into the server's own ranges, in words. */
export function adoptParams(widget, live) {
  var mine = {}, fallback = {}, changed = [], params = [];
  if (live.name !== widget.spec.name || !Array.isArray(live.params) ||
      live.params.length !== widget.spec.params.length) return null;
  live.params.forEach(function (q) { if (q) mine[q.name] = q; });
  for (var i = 0; i < widget.spec.params.length; i++) {
    var p = widget.spec.params[i], q = mine[p.name];
    if (!q || q.type !== p.type) return null;
    var np = Object.assign({}, q, { "default": p["default"] });
    fallback[p.name] = q["default"];  // allowed by the server's spec, by construction
    if (canonical(np) === canonical(p)) { params.push(p); continue; }  // its control stays
    params.push(np);
    changed.push(np);
  }
  if (!changed.length) return null;
  widget.spec = Object.assign({}, widget.spec, { params: params });
  params.forEach(function (p) { widget.labels[p.name] = p.label; });
  var moved = [];
  changed.forEach(function (p) {
    var v = widget.params[p.name], nv = nearestLegal(p, v, fallback[p.name]);
    if (nv !== v) {
      widget.params[p.name] = nv;
      moved.push("'" + p.label + "' set to " + plain(nv) + " (" +
                 (isNum(p) ? "from " + p.min + " to " + p.max : "not " + plain(v)) + ")");
    }
    var old = widget.controls[p.name], active = document.activeElement;
    var focused = old.row.contains(active) ? active.getAttribute("name") : null;
    var c = buildControl(widget, p);
    old.row.parentNode.replaceChild(c.row, old.row);
    widget.controls[p.name] = c;
    var again = focused && c.row.querySelector('[name="' + focused + '"]');
    if (again) again.focus();
  });
  return moved;
}
