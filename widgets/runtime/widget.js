/* A widget: its controls, its state (the params, what is shown, notices) and its URL keys. The
 * figure drawing (render.js), the requests (scheduler.js), the server's spec (live-spec.js) and
 * the head's buttons (actions.js) are its other methods. */

import { methods as actions, notebookLink } from "./actions.js";
import { buildControl, guardTouch, valueText } from "./controls.js";
import { el } from "./dom.js";
import { methods as liveSpec } from "./live-spec.js";
import { COARSE } from "./plotly.js";
import { methods as render } from "./render.js";
import { methods as scheduler } from "./scheduler.js";
import { check, effective, isNum, nearest, plain, released, sliderRange, stops,
         toSlider } from "./spec.js";

var ANNOUNCE_AFTER_MS = 700;  // a screen reader hears the result once the reader pauses

var uidCounter = 0;

export function Widget(root) {
  var config = JSON.parse(root.querySelector("script.tw-config").textContent);
  var self = this;
  this.root = root;
  this.uid = ++uidCounter;
  this.spec = config.spec;
  this.key = config.key || this.spec.name;   // this instance's prefix in the page URL
  this.api = (config.api || "/api").replace(/\/$/, "");
  this.baked = config.baked;
  this.params = Object.assign({}, config.start);
  this.labels = {};
  this.spec.params.forEach(function (p) { self.labels[p.name] = p.label; });
  this.shown = null;      // the result whose figure and values are on the page
  this.stickyNotice = ""; // about the link the page was opened with, until the reader acts
  this.movedNotice = "";  // a control that moved because another one changed its range
  this.timer = null;      // a text field's pause before its value is sent
  this.inflight = null;   // the one request awaiting its answer, if any
  this.dirty = false;     // this.params has changed since the last request left
  this.seq = 0;
  var fromUrl = this.readUrl();
  this.build();
  this.watchWidth();
  this.applyDepends();
  this.show(this.baked[0], { precomputed: "built" });
  this.linked = fromUrl;  // a shared link: computed once the server's spec is in (adoptSpec)
}

Widget.prototype.effective = function (p) { return effective(p, this.params, this.labels); };
Widget.prototype.check = function (p, v) { return check(p, v, this.params, this.labels); };

/* Settings are mirrored into the page's query string (`?attention_scaling.d_k=256`), so a
 * reader or an instructor can share exactly what they are looking at. Only valid values are
 * taken from a link; the others are named in a notice and ignored. */
Widget.prototype.readUrl = function () {
  var self = this, query = new URLSearchParams(window.location.search), found = false;
  var ignored = [];
  this.spec.params.forEach(function (p) {
    var raw = query.get(self.key + "." + p.name);
    if (raw === null) return;
    var v = raw;
    if (isNum(p)) v = raw.trim() === "" || isNaN(+raw) ? raw : +raw;
    else if (p.type === "bool") v = raw === "true" || raw === "1" ? true
                                  : raw === "false" || raw === "0" ? false : raw;
    var trial = Object.assign({}, self.params);
    trial[p.name] = v;
    var problem = check(p, v, trial, self.labels);
    if (problem) { ignored.push(problem); return; }
    self.params[p.name] = v;
    found = true;
  });
  // a later rule may now fail for a value taken earlier (layer=5 before model=book)
  this.spec.params.forEach(function (p) {
    var problem = check(p, self.params[p.name], self.params, self.labels);
    if (problem) {
      ignored.push(problem);
      self.params[p.name] = self.baked[0].params[p.name];
    }
  });
  if (ignored.length) {
    this.stickyNotice = "This link's setting was ignored: " + ignored.join("; ") + ".";
  }
  return found;
};

Widget.prototype.writeUrl = function (params) {
  var self = this, query = new URLSearchParams(window.location.search);
  this.spec.params.forEach(function (p) {
    var key = self.key + "." + p.name, v = params[p.name];
    if (v === self.baked[0].params[p.name]) query.delete(key);
    else query.set(key, String(v));
  });
  var qs = query.toString();
  window.history.replaceState(window.history.state, "",
                              window.location.pathname + (qs ? "?" + qs : "") + window.location.hash);
};

Widget.prototype.build = function () {
  var self = this;
  var form = el("form", { "class": "tw-controls" });
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  this.controls = {};
  this.spec.params.forEach(function (p) {
    var c = buildControl(self, p);
    self.controls[p.name] = c;
    form.appendChild(c.row);
  });
  var titleId = "tw-" + this.uid + "-title", summaryId = "tw-" + this.uid + "-summary";
  this.plot = el("div", { "class": "tw-plot", role: "figure", "aria-labelledby": titleId,
                          "aria-describedby": summaryId });
  this.summary = el("p", { "class": "tw-summary tw-sr", id: summaryId });
  this.valuesBox = el("dl", { "class": "tw-values" });
  this.table = el("details", { "class": "tw-table" });
  this.table.hidden = true;
  // The status (where the answer came from, timings) is not announced; the result's summary
  // is, a moment after the reader stops moving (this.announce).
  this.status = el("p", { "class": "tw-status" });
  this.announcer = el("p", { "class": "tw-sr", "aria-live": "polite" });
  this.error = el("p", { "class": "tw-error", role: "alert" });
  this.error.hidden = true;
  this.notice = el("p", { "class": "tw-notice", role: "status" });
  this.notice.hidden = true;
  var head = el("div", { "class": "tw-head" });
  var title = el("p", { "class": "tw-title", id: titleId });
  var number = this.root.getAttribute("data-fig");  // "Figure 3.2": the build numbers every figure
  if (number) title.appendChild(el("span", { "class": "tw-fignum" }, number + " \u2014 "));
  title.appendChild(document.createTextNode(this.spec.title));
  head.appendChild(title);
  var actions = el("div", { "class": "tw-actions" });
  this.copyButton = el("button", { type: "button", "class": "tw-action tw-copy" },
                       "Copy link to this setting");
  this.resetButton = el("button", { type: "button", "class": "tw-action tw-reset" }, "Reset");
  this.copyButton.addEventListener("click", function () { self.copyLink(); });
  this.resetButton.addEventListener("click", function () { self.reset(); });
  actions.appendChild(this.copyButton);
  actions.appendChild(notebookLink(this));
  actions.appendChild(this.resetButton);
  head.appendChild(actions);
  [head, form, this.error, this.notice, this.plot, this.summary, this.valuesBox, this.table,
   this.status, this.announcer].forEach(function (n) { self.root.appendChild(n); });
  if (COARSE) guardTouch(this, form);
  this.sizeBoxes();
  this.spec.params.forEach(function (p) { if (p.type === "text") self.updateCount(p); });
};

/* The constraints the page offers `p` under (a preset's pin left, see `released`), and
 * the stops its slider moves over (null: a plain slider). */
Widget.prototype.offered = function (p) {
  return effective(p, released(p, this.params), this.labels);
};
Widget.prototype.stopsOf = function (p, eff) {
  return stops(p, eff, (this.baked || []).map(function (b) { return b.params[p.name]; }));
};

/* Put every control in line with this.params: values, dependent ranges, disabled states. */
Widget.prototype.syncControl = function (p) {
  var c = this.controls[p.name], v = this.params[p.name];
  if (c.slider) {
    var eff = this.offered(p), list = this.stopsOf(p, eff), r = sliderRange(p, eff, list);
    c.slider.min = r.min;
    c.slider.max = r.max;
    c.slider.step = r.step;
    c.box.min = eff.min;
    c.box.max = eff.max;
    c.slider.value = toSlider(p, v, list);
    c.box.value = v;
    c.slider.setAttribute("aria-valuetext", valueText(p, v));
  } else if (p.type === "bool") {
    c.input.checked = !!v;
  } else if (c.input && c.input.value !== v) {
    c.input.value = v;
  }
  if (p.type === "text") this.updateCount(p);
};

/* Ranges and states that follow other controls (spec.Depends, spec.Limit). A value the new
 * range excludes moves to the nearest allowed one, and a notice says so; a disabled control
 * with one allowed value (a preset's setting) shows that value. A move can narrow a param
 * checked before it (the memory lowers the maximum length, which lowers the mean), so the
 * pass repeats until nothing moves. */
Widget.prototype.applyDepends = function () {
  var moved = [], before;
  for (var pass = 0; pass <= this.spec.params.length; pass++) {
    before = moved.length;
    this.applyDependsOnce(moved);
    if (moved.length === before) break;
  }
  return moved;
};

Widget.prototype.applyDependsOnce = function (moved) {
  var self = this;
  this.spec.params.forEach(function (p) {
    if (!(p.depends || []).length && !(p.limits || []).length) { self.syncControl(p); return; }
    var eff = self.effective(p), c = self.controls[p.name];
    var inputs = c.slider ? [c.slider, c.box] : [c.input];
    inputs.forEach(function (i) { i.disabled = !!eff.disabled; });
    c.row.classList.toggle("tw-disabled", !!eff.disabled);
    var v = self.params[p.name], nv = v;
    if (isNum(p) && !eff.disabled) {
      nv = Math.min(eff.max, Math.max(eff.min, v));
      var legal = eff.allowed && eff.allowed.filter(function (a) {
        return a >= eff.min && a <= eff.max;
      });
      if (legal && legal.length && legal.indexOf(nv) < 0) nv = nearest(legal, v);
    } else if (!isNum(p) && eff.allowed && eff.allowed.length && eff.allowed.indexOf(v) < 0) {
      nv = eff.allowed[0];
    }
    if (nv !== v) {
      self.params[p.name] = nv;
      moved.push("'" + p.label + "' set to " + plain(nv) + " " + eff.why.join(" and "));
    }
    self.syncControl(p);
  });
};

Widget.prototype.updateCount = function (p) {
  var c = this.controls[p.name];
  if (!c || !c.count) return;
  var n = Array.from(c.input.value).length;
  var text = n + " / " + p.max_length + " characters";
  var values = this.shown && this.shown.values;
  var tokens = (this.spec.outputs || []).filter(function (o) { return o.name === "n_tokens"; })[0];
  var first = this.spec.params.filter(function (q) { return q.type === "text"; })[0];
  if (values && "n_tokens" in values && first && first.name === p.name &&
      this.shown.params && this.shown.params[p.name] === c.input.value) {
    text += " · " + values.n_tokens + " " + (tokens ? tokens.label : "tokens");
  }
  c.count.textContent = text;
  c.count.classList.toggle("tw-over", n > p.max_length);
};

Widget.prototype.describeOne = function (p, v) {
  if (p.type === "text") {
    var t = Array.from(String(v));
    v = "\u201c" + (t.length > 40 ? t.slice(0, 39).join("") + "\u2026" : t.join("")) + "\u201d";
  } else {
    v = plain(v);
  }
  return p.label + " = " + v;
};

/* In words: the setting the figure shows now ("head dim d_k = 64, positions = 8"). */
Widget.prototype.describe = function (params) {
  var self = this;
  return this.spec.params.filter(function (p) {
    return !self.effective(p).disabled;
  }).map(function (p) { return self.describeOne(p, params[p.name]); }).join(", ");
};

/* A value refused in the browser: say why, and put the control back to what is shown. */
Widget.prototype.refuse = function (message, p, keepTyping) {
  clearTimeout(this.timer);
  this.timer = null;
  this.dirty = false;
  var shownParams = (this.shown && this.shown.params) || this.params;
  if (!keepTyping) {
    this.params[p.name] = shownParams[p.name];
    this.syncControl(p);
    this.showError(message + ". Kept " + p.label + " = " + plain(shownParams[p.name]) + ".");
  } else {
    this.showError(message + ". " + this.staleWords());
    this.markStale(true);
  }
};

Widget.prototype.staleWords = function () {
  return "The figure and values still show " +
    this.describe((this.shown && this.shown.params) || this.params) + ".";
};

Widget.prototype.markStale = function (on) {
  this.root.classList.toggle("tw-stale", !!on);
  if (on) {
    this.status.textContent = "Not updated: " + this.staleWords().replace(/^The/, "the");
  }
};

Widget.prototype.showError = function (message) {
  this.error.textContent = message;
  this.error.hidden = false;
  this.root.classList.add("tw-has-error");
};

Widget.prototype.clearError = function () {
  this.error.hidden = true;
  this.root.classList.remove("tw-has-error");
};

Widget.prototype.setNotice = function (text) {
  this.notice.textContent = text || "";
  this.notice.hidden = !text;
};

/* Number boxes wide enough for the longest value of their range (128256, 1048576): a
 * character per digit, separator or decimal, plus the padding. */
Widget.prototype.sizeBoxes = function () {
  var self = this;
  this.spec.params.forEach(function (p) {
    var c = self.controls[p.name];
    if (!c || !c.box) return;
    var longest = Math.max.apply(null, [p.min, p.max, p.default].map(function (v) {
      return String(v).length;
    }).concat(p.step && p.step % 1 ? [String(p.max).split(".")[0].length + 1 +
                                      String(p.step).split(".")[1].length] : []));
    c.box.style.width = Math.max(4, Math.min(12, longest + 1)) + "ch";
  });
};

/* What a screen reader hears: the result's summary, once the reader has stopped moving. */
Widget.prototype.announce = function (text) {
  var self = this;
  clearTimeout(this.announceTimer);
  this.announceTimer = setTimeout(function () { self.announcer.textContent = text; },
                                  ANNOUNCE_AFTER_MS);
};

/* The plot's width, kept by a ResizeObserver: reading clientWidth at every draw would force
 * a layout of the whole page. A change of width redraws the figure to fit. */
Widget.prototype.watchWidth = function () {
  var self = this;
  this.width = this.root.clientWidth || 0;
  this.plotWidth = Math.floor(this.plot.getBoundingClientRect().width) || this.width;
  if (!window.ResizeObserver) return;
  new ResizeObserver(function (entries) {
    var w = Math.floor(entries[0].contentRect.width);
    if (!w || Math.abs(w - self.plotWidth) < 2) return;  // a height change, or rounding
    self.plotWidth = w;
    self.width = self.root.clientWidth || w;
    self.draw();
  }).observe(this.plot);
};

Object.assign(Widget.prototype, render, scheduler, liveSpec, actions);
