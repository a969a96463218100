/* The requests: at most one in flight per widget, the newest setting sent the moment the answer
 * before it is in, and the baked fallback when the API does not answer (Widget methods). */

import { isLog, isNum, plain, released, settingQuery } from "./spec.js";

var REQUEST_TIMEOUT_MS = 15000;
// The longest request line a GET may take: well inside gunicorn's 4,094 bytes and nginx's
// 8 kB header buffers, and the 2,048 characters old proxies keep to.
export var MAX_GET_LINE = 2000;

/* A URL's path and query as they go on the request line, in bytes (escaped). */
export function requestLineLength(url) {
  var u = new URL(url, window.location.href);
  return u.pathname.length + u.search.length;
}
var BUSY_AFTER_MS = 250;  // only an answer slower than this dims the figure (no flicker in drags)

export var methods = {};

/* A change goes out at once when no request is in flight (a click, a typed value, a key
 * press, the first step of a drag). While one is in flight the newest setting waits, replacing
 * any older one that waited, and goes out the moment the answer is in: at most one request in
 * flight per widget, no fixed delay, and the last setting is always the last one sent. Text
 * waits `delay` ms after the last keystroke: nobody wants a request per keystroke. */
methods.set = function (name, value, delay) {
  var now = performance.now(), self = this, said = [];
  // Moving a control a preset pins switches the preset to custom, from the preset's values.
  var p = this.spec.params.filter(function (q) { return q.name === name; })[0];
  var free = p ? released(p, this.params) : this.params;
  Object.keys(free).forEach(function (k) {
    if (free[k] === self.params[k]) return;
    said.push("Switched to " + plain(free[k]) + ", starting from " + plain(self.params[k]) +
              "'s configuration.");
    self.params[k] = free[k];
  });
  this.params[name] = value;
  var moved = this.applyDepends();
  // Choosing a preset: one line, not every value it moved.
  var pins = this.spec.params.some(function (q) {
    return (q.depends || []).some(function (dep) {
      return dep.on === name && dep.release !== undefined &&
        (dep.cases || []).some(function (c) { return c[0] === value; });
    });
  });
  if (pins) { moved = []; said.push("Showing " + plain(value) + "'s configuration."); }
  this.stickyNotice = "";
  this.movedNotice = said.concat(moved.length ? [moved.join("; ") + "."] : []).join(" ");
  this.setNotice(this.movedNotice);
  this.clearError();
  // this.params is newer than anything sent, unless a drag came back to the setting in flight
  this.dirty = !(this.inflight && JSON.stringify(this.params) === this.inflightBody);
  if (this.dirty) this.changedAt = now;
  clearTimeout(this.timer);
  this.timer = null;
  if (delay) {
    this.timer = setTimeout(function () { self.timer = null; self.flush(); }, delay);
  } else {
    this.flush();
  }
};

/* Send the waiting setting, unless an answer is still awaited (then its arrival sends it). */
methods.flush = function () {
  if (this.dirty && !this.inflight && !this.timer) this.request();
};

methods.request = function () {
  var self = this;
  var controller = new AbortController();
  this.inflight = controller;
  this.dirty = false;
  var seq = ++this.seq;
  var started = performance.now();
  var timing = { inputAt: this.changedAt || started, sentAt: started };
  var timeout = setTimeout(function () { controller.abort("timeout"); }, REQUEST_TIMEOUT_MS);
  clearTimeout(this.busyTimer);
  var computing = "Computing " + this.describe(this.params) + "\u2026";
  this.busyTimer = setTimeout(function () {
    self.root.classList.add("tw-busy");
    self.plot.setAttribute("aria-busy", "true");
    self.status.textContent = computing;
  }, BUSY_AFTER_MS);
  var sent = Object.assign({}, this.params);
  this.inflightBody = JSON.stringify(sent);
  // A GET with the setting in the URL (no preflight across origins, and cacheable): the same
  // setting asked again is answered by this browser's cache, or by a cache in front of the API.
  // A setting too long for a request line (a long passage, or Hindi, each character nine
  // bytes once escaped) goes as the JSON body of a POST, which the same spec resolves.
  var endpoint = this.api + "/widgets/" + encodeURIComponent(this.spec.name);
  var url = endpoint + "/result?" + settingQuery(this.spec, sent);
  var init = { headers: { "Accept": "application/json" }, signal: controller.signal };
  if (requestLineLength(url) > MAX_GET_LINE) {
    url = endpoint;
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = this.inflightBody;
  }
  fetch(url, init).then(function (resp) {
    timing.headersAt = performance.now();
    return resp.text().then(function (text) {
      timing.bodyAt = performance.now();
      timing.bytes = text.length;
      var body = null;
      try { body = JSON.parse(text); } catch (e) { body = null; }
      timing.parsedAt = performance.now();
      return { resp: resp, body: body };
    }, function () { return { resp: resp, body: null }; });
  }).then(function (r) {
    if (seq !== self.seq) return;
    var newer = self.dirty;   // the reader moved on while this was computed
    self.settle(timeout);     // ... and that newer setting leaves now, before this one is drawn
    if (r.resp.ok && r.body && r.body.figure) {
      r.body.roundTripMs = performance.now() - started;
      // read once the body is in: the browser records a fetch's timing entry when it ends
      var from = answeredBy(url, r.resp);
      if (from) { r.body.cached = true; r.body.cachedBy = from; }
      r.body.timing = timing;
      self.show(r.body, {});
      if (!newer) self.writeUrl(r.body.params || sent);
    } else if (newer) {
      // Refused or failed, but for a setting the reader has already left: the next request
      // (already sent) says what is true of the current one.
    } else if (r.body && r.body.error && r.resp.status < 500) {
      self.serverRefused(r.body);                // the reader's input: say what to fix
    } else {
      self.fallback(r.body && r.body.error ? r.body.error : "HTTP " + r.resp.status, sent);
    }
  }).catch(function (err) {
    if (seq !== self.seq) return;
    // Unreachable or too slow: the nearest baked result for the newest setting, and nothing
    // more is sent until the reader moves again.
    self.dirty = false;
    self.settle(timeout);
    self.fallback(controller.signal.aborted ? "no answer in time" : "the server is unreachable",
                  Object.assign({}, self.params));
  });
};

/* The answer in flight is in (or failed): the line is free, and a waiting setting goes out. */
methods.settle = function (timeout) {
  clearTimeout(timeout);
  clearTimeout(this.busyTimer);
  this.root.classList.remove("tw-busy");
  this.plot.removeAttribute("aria-busy");
  this.inflight = null;
  this.flush();
};

/* A 400: the figure keeps the last valid setting and says so. Every control but text goes
 * back to the value the figure shows: the one the reader moved, whichever param the error
 * names, and any a rule moved with it, so controls and figure never disagree and the next move
 * starts from a setting the server took. Text stays as typed, to be fixed; it is not stale
 * unless the refusal is about it. */
methods.serverRefused = function (body) {
  var self = this, textRefused = false;
  var shownParams = (this.shown && this.shown.params) || this.baked[0].params;
  this.spec.params.forEach(function (q) {
    if (q.type === "text") {
      if (q.name === body.param) textRefused = true;
      return;
    }
    if (shownParams[q.name] !== undefined) self.params[q.name] = shownParams[q.name];
  });
  this.applyDepends();
  this.movedNotice = "";
  this.setNotice(this.stickyNotice);
  if (textRefused) {
    this.showError(body.error + (/[.!?]$/.test(body.error) ? " " : ". ") + self.staleWords());
    this.markStale(true);
  } else {
    this.showError(body.error + (/[.!?]$/.test(body.error) ? " " : ". ") + "Kept " +
                   this.describe(shownParams) + ".");
    this.markStale(false);
  }
};

/* The baked result closest to the current parameters (log distance on log sliders). A text
 * or choice setting that no baked point has gets no stand-in: null. */
methods.nearestBaked = function (want) {
  var self = this, best = null, bestD = Infinity;
  this.baked.forEach(function (b) {
    var d = 0, exact = true;
    self.spec.params.forEach(function (p) {
      var w = want[p.name], have = b.params[p.name];
      if (isNum(p)) {
        if (self.effective(p).disabled) return;
        var span = isLog(p) ? Math.log2(p.max / p.min) : (p.max - p.min) || 1;
        var diff = isLog(p) ? Math.log2(Math.max(w, p.min) / have) : (w - have);
        d += Math.pow(diff / span, 2);
      } else if ((p.type === "text" || p.type === "choice") && w !== have) {
        exact = false;
      } else if (w !== have) {
        d += 1;
      }
    });
    if (exact && d < bestD) { bestD = d; best = b; }
  });
  return best;
};

methods.fallback = function (why, sent) {
  var want = sent || this.params;
  var best = this.nearestBaked(want);
  if (best) {
    this.show(best, { precomputed: "offline", why: why });
    this.writeUrl(want);
    return;
  }
  // No baked result for this sentence or choice: say so, never another setting's figure.
  var self = this, missing = this.spec.params.filter(function (p) {
    return (p.type === "text" || p.type === "choice") &&
      !self.baked.some(function (b) { return b.params[p.name] === want[p.name]; });
  });
  this.shown = null;
  this.clearError();
  if (window.Plotly) window.Plotly.purge(this.plot);
  this.plot.textContent = "";
  this.valuesBox.textContent = "";
  this.table.hidden = true;
  this.summary.textContent = "";
  this.root.dataset.source = "precomputed";
  this.root.classList.remove("tw-built");
  this.root.classList.add("tw-precomputed", "tw-nobaked");
  this.status.textContent = why + ", and this page has no precomputed result for " +
    missing.map(function (p) { return self.describeOne(p, want[p.name]); }).join(", ") + ". Go back to a built-in setting, or try again when the server answers.";
};

/* Who answered: "browser" when this browser's HTTP cache did (the Resource Timing entry shows no
 * body on the wire: nothing sent, or a 304 revalidation), "proxy" when a cache in front of the
 * API did (nginx's X-Cache-Status), else null (the API itself; its body says whether from its
 * own cache). The answer's status line must not claim a fresh computation for either. */
function answeredBy(url, resp) {
  var proxy = resp.headers.get("X-Cache-Status");
  if (proxy && /^(HIT|STALE|UPDATING|REVALIDATED)$/.test(proxy)) return "proxy";
  if (!performance.getEntriesByName) return null;
  var abs = new URL(url, window.location.href);
  var entries = performance.getEntriesByName(abs.href, "resource");
  var e = entries[entries.length - 1];
  // Across origins the sizes read 0 unless the API sends Timing-Allow-Origin (it does for
  // the origins it allows): then nothing can be told, and nothing is claimed either way.
  if (!e || !e.decodedBodySize) return null;
  return e.transferSize < e.encodedBodySize ? "browser" : null;
}

/* Resource Timing stops recording at its buffer's size (250 entries by default): a reader who
 * moves sliders for a long time would lose the entries answeredBy reads. */
if (typeof performance !== "undefined" && performance.clearResourceTimings &&
    typeof performance.addEventListener === "function") {
  performance.addEventListener("resourcetimingbufferfull", function () {
    performance.clearResourceTimings();
  });
}
