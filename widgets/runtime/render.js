/* Drawing a result: the figure (themed, sized to the widget), the values, the text summary and
 * the data table (Widget methods). */

import { el } from "./dom.js";
import { formatValue } from "./format.js";
import { check } from "./spec.js";
import { still } from "./controls.js";
import { COARSE, PLOT_CONFIG, TOUCH_CONFIG, whenPlotly } from "./plotly.js";
import { NARROW_PX, merge, themed } from "./theme.js";

export var methods = {};

methods.draw = function () {
  var self = this, result = this.shown;
  if (!result) return;
  var fig = result.figure;
  function plot(Plotly) {
    if (self.shown !== result) return;  // a newer result arrived meanwhile
    var t0 = performance.now();
    var layout = Object.assign({}, fig.layout), data = fig.data;
    var narrow = self.width && self.width < NARROW_PX;
    if (narrow) {
      // A figure may carry a patch for phone screens (e.g. stack side-by-side panels), and
      // one per trace for what lives on a trace (a heatmap's colour bar).
      layout = merge(layout, fig.narrow || {});
      layout.margin = Object.assign({}, layout.margin, { l: 45, r: 5 });
      if (fig.narrow_traces) {
        data = data.map(function (trace, i) { return merge(trace, fig.narrow_traces[i] || {}); });
      }
    }
    // The width we know, so plotly.js need not measure the page.
    layout.autosize = false;
    if (self.plotWidth) layout.width = self.plotWidth;
    if (!layout.height) layout.height = 450;
    var t = themed(data, layout);
    if (COARSE) still(t.layout);
    if (self.plot.textContent && !self.plot.classList.contains("js-plotly-plot")) {
      self.plot.textContent = "";
    }
    var t1 = performance.now();
    var done = Plotly.react(self.plot, t.data, t.layout, COARSE ? TOUCH_CONFIG : PLOT_CONFIG);
    var t2 = performance.now();
    self.mark(result, { theme: t1 - t0, react: t2 - t1, drawnAt: t2 });
    return done.then(function () {
      if (!self.clickBound && self.plot.on) {
        self.clickBound = true;
        self.plot.on("plotly_click", function (ev) { self.clicked(ev); });
      }
      if (self.labelled) return;
      self.labelled = true;
      self.plot.querySelectorAll(".modebar-btn").forEach(function (b) {
        if (!b.getAttribute("aria-label") && b.getAttribute("data-title")) {
          b.setAttribute("aria-label", b.getAttribute("data-title"));
        }
      });
    });
  }
  function failed() {
    self.plot.textContent = "The plotting library did not load; the values below are current.";
  }
  if (window.Plotly) {
    // Drawn at once, before the values and table below change the page (so plotly.js
    // measures a page whose layout is still clean).
    try { var p = plot(window.Plotly); if (p) p.catch(function () {}); } catch (e) { failed(); }
    return;
  }
  whenPlotly().then(plot).catch(failed);
};

/* A figure may name what a click on one of its traces sets (`click`: {trace, x, y}, each of x
 * and y a param's name): a click on a cell of the head-score map opens that head. A point
 * whose values a control would refuse is ignored. */
methods.clicked = function (ev) {
  var click = this.shown && this.shown.figure.click, self = this;
  var pt = ev && ev.points && ev.points[0];
  if (!click || !pt || pt.curveNumber !== click.trace) return;
  var want = {}, ok = true;
  if (click.x) want[click.x] = pt.x;
  if (click.y) want[click.y] = pt.y;
  var trial = Object.assign({}, this.params, want);
  this.spec.params.forEach(function (p) {
    if (p.name in want && check(p, want[p.name], trial, self.labels)) ok = false;
  });
  var names = Object.keys(want);
  if (!ok || !names.length) return;
  var last = names.pop();
  names.forEach(function (n) { self.params[n] = want[n]; });
  this.set(last, want[last]);
};

/* Where this answer's time went, as a Performance measure `tw:update` from the change to the
 * drawn figure (benchmark: tests/benchmarks/slider_latency.py). */
methods.mark = function (result, draw) {
  var t = result.timing;
  if (!t || t.marked || !performance.measure) return;
  t.marked = true;
  var detail = { widget: this.spec.name, key: this.key, params: result.params,
                 cached: !!result.cached, server_ms: result.elapsed_ms, bytes: t.bytes,
                 wait: t.sentAt - t.inputAt, network: t.headersAt - t.sentAt,
                 download: t.bodyAt - t.headersAt, parse: t.parsedAt - t.bodyAt,
                 client: draw.drawnAt - draw.react - draw.theme - t.parsedAt,
                 theme: draw.theme, react: draw.react, total: draw.drawnAt - t.inputAt };
  try {
    performance.measure("tw:update", { start: t.inputAt, end: draw.drawnAt, detail: detail });
  } catch (e) { /* an old browser: no measure, nothing else lost */ }
};

methods.show = function (result, how) {
  var self = this;
  this.clearError();
  this.root.classList.remove("tw-stale", "tw-nobaked");
  this.shown = result;
  this.draw();
  this.valuesBox.textContent = "";
  var said = [];
  (this.spec.outputs || []).forEach(function (o) {
    if (!(o.name in result.values)) return;
    var text = formatValue(result.values[o.name], o.fmt) + (o.unit ? " " + o.unit : "");
    var row = el("div", { "class": "tw-value", "data-name": o.name });
    row.appendChild(el("dt", {}, o.label));
    row.appendChild(el("dd", {}, text));
    self.valuesBox.appendChild(row);
    said.push(o.label + " " + text);
  });
  // The plot's text alternative: the result's own summary, else the values in words.
  this.summary.textContent = result.summary ||
    (this.spec.title + " for " + this.describe(result.params) + ". " + said.join("; ") + ".");
  if (!how.precomputed || how.precomputed === "offline") this.announce(this.summary.textContent);
  this.renderTable(result.table);
  this.setNotice([result.notice, this.stickyNotice, this.movedNotice].filter(Boolean).join(" "));
  this.spec.params.forEach(function (p) { if (p.type === "text") self.updateCount(p); });
  this.root.dataset.source = how.precomputed ? "precomputed" : "live";
  if (how.precomputed === "offline") this.serverAnswers(false, how.why);
  else if (!how.precomputed) this.serverAnswers(true);
  if (how.precomputed === "built") {
    this.status.textContent = "computed when the book was built. Move a control to " +
      "recompute it live.";
  } else if (how.precomputed === "offline") {
    var at = this.spec.params.filter(function (p) {
      return p.type !== "text" && !self.effective(p).disabled;
    }).map(function (p) { return self.describeOne(p, result.params[p.name]); }).join(", ");
    this.status.textContent = how.why + ", so this is the nearest result baked " +
      "into the page: " + at + ".";
  } else if (result.cached) {
    // An answer from a cache (the server's, one in front of it, or this browser's): no
    // compute time is claimed for it.
    this.status.textContent = "Computed live on " + result.device + " earlier; this answer " +
      "came from " + (result.cachedBy === "browser" ? "your browser's cache" :
                      "the server's cache") + " (nothing recomputed); round trip " +
      Math.round(result.roundTripMs) + " ms.";
  } else {
    this.status.textContent = "Computed live on " + result.device + " in " +
      formatValue(result.elapsed_ms, ".3g") + " ms; round trip " +
      Math.round(result.roundTripMs) + " ms.";
  }
  // Baked at build time on a healthy server is a neutral note; a warning only as a fallback.
  this.root.classList.toggle("tw-precomputed", how.precomputed === "offline");
  this.root.classList.toggle("tw-built", how.precomputed === "built");
};

/* The figure's data as a real table, in a closed <details> a screen reader can open. */
methods.renderTable = function (table) {
  var box = this.table;
  box.textContent = "";
  if (!table || !table.rows) { box.hidden = true; return; }
  box.hidden = false;
  box.appendChild(el("summary", {}, "Data table" + (table.caption ? ": " + table.caption : "")));
  var wrap = el("div", { "class": "tw-table-scroll" });
  var t = el("table", {});
  if (table.caption) t.appendChild(el("caption", {}, table.caption));
  if (table.columns) {
    var tr = el("tr", {});
    table.columns.forEach(function (c) { tr.appendChild(el("th", { scope: "col" }, String(c))); });
    var thead = el("thead", {});
    thead.appendChild(tr);
    t.appendChild(thead);
  }
  var tbody = el("tbody", {});
  table.rows.forEach(function (row) {
    var r = el("tr", {});
    row.forEach(function (cell, i) {
      var text = typeof cell === "number" ? formatValue(cell, ".4g") : String(cell);
      r.appendChild(el(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : {}, text));
    });
    tbody.appendChild(r);
  });
  t.appendChild(tbody);
  wrap.appendChild(t);
  box.appendChild(wrap);
};
