/* Drawing a result: the figure (Figure: themed, sized to the widget, redrawn when its width
 * changes), the values, the data table, and the status line's words (statusText, pure). */

import { still } from "./controls.js";
import { el } from "./dom.js";
import { formatValue, withUnit } from "./format.js";
import { COARSE, PLOT_CONFIG, TOUCH_CONFIG, whenPlotly } from "./plotly.js";
import { NARROW_PX, narrowFigure, themed } from "./theme.js";

// The width a figure is drawn at for the paper (beforeprint): inside the text column of A4
// (718 px at a browser's default 10 mm margins) and of US Letter (739 px), with room for the
// page's own print padding.
export const PRINT_PX = 680;

/* One widget's plot. It owns the result it draws, the widths it draws at (kept by a
 * ResizeObserver: reading clientWidth at every draw would force a layout of the whole page),
 * and the listeners it has put on plotly's div. `who` ({widget, key}) names its timing
 * measures; `onClick(event)` hears a click on a point. */
export class Figure {
  #div;
  #root;
  #who;
  #onClick;
  #result = null;       // the result drawn, or waiting for plotly.js to be drawn
  #width = 0;           // the widget's: under NARROW_PX the figure takes its phone layout
  #plotWidth = 0;       // the plot's, passed to plotly.js so it need not measure the page
  #printWidth = 0;      // while printing: the paper's width, if narrower than the plot's
  #clickBound = false;
  #labelled = false;
  #snap = null;         // the build's pictures of a result's figure (snapshots.py), until drawn
  #snapOf = null;       // the result they show

  constructor(div, root, { who, onClick }) {
    this.#div = div;
    this.#root = root;
    this.#who = who;
    this.#onClick = onClick;
  }

  /* Start following the plot's width (once the widget is in the page): a change of width
   * redraws the figure to fit. */
  watchWidth() {
    this.#width = this.#root.clientWidth || 0;
    this.#plotWidth = Math.floor(this.#div.getBoundingClientRect().width) || this.#width;
    if (!window.ResizeObserver) return;
    new ResizeObserver((entries) => {
      const w = Math.floor(entries[0].contentRect.width);
      if (!w || Math.abs(w - this.#plotWidth) < 2) return;  // a height change, or rounding
      this.#plotWidth = w;
      this.#width = this.#root.clientWidth || w;
      this.redraw();
    }).observe(this.#div);
  }

  /* The build's pictures of `result`'s figure (a `.tw-snapbox`), shown in the plot until
   * plotly.js draws it; null when the page has none. */
  adoptSnapshot(box, result) {
    if (!box) return;
    this.#snap = box;
    this.#snapOf = result;
    this.#div.appendChild(box);
  }

  #dropSnapshot() {
    if (this.#snap) this.#snap.remove();
    this.#snap = this.#snapOf = null;
  }

  /* Draw `result` ({figure, ...}), at once when plotly.js is here, else when it arrives. */
  show(result) {
    this.#result = result;
    this.redraw();
  }

  /* Draw the result again (a new width, a palette switch); the promise of plotly's drawing
   * when plotly.js is here. */
  redraw() {
    const result = this.#result;
    if (!result) return Promise.resolve();
    const failed = () => {
      const picture = this.#snapOf === result ? this.#snap : null;  // kept: it is this figure
      this.#div.textContent = "The plotting library did not load; the values below are current.";
      if (picture) this.#div.prepend(picture);
    };
    if (window.Plotly) {
      // Drawn at once, before the values and table below change the page (so plotly.js
      // measures a page whose layout is still clean).
      try {
        const p = this.#plot(window.Plotly, result);
        if (p) return p.catch(() => {});
      } catch (e) { failed(); }
      return Promise.resolve();
    }
    this.#drawing(result);
    return whenPlotly().then((Plotly) => this.#plot(Plotly, result)).catch(failed);
  }

  /* plotly.js is still on its way (a slow link): a placeholder as tall as the figure says it is
   * being drawn, over the values already shown, where a blank box stood (ux review W2). */
  #drawing(result) {
    if (this.#div.classList.contains("js-plotly-plot")) return;  // a drawn figure stays
    if (this.#snap && this.#snapOf === result) return;  // its picture stays
    this.#dropSnapshot();
    let p = this.#div.querySelector(":scope > .tw-placeholder");
    if (!p) {
      this.#div.textContent = "";
      p = el("p", { "class": "tw-placeholder" });
      this.#div.appendChild(p);
    }
    p.textContent = "Drawing the figure\u2026";
    p.style.height = `${this.#layout(result.figure).layout.height || 450}px`;
  }

  /* No figure: the plot is emptied (there is no result to show for this setting). */
  clear() {
    this.#result = null;
    this.#dropSnapshot();
    if (window.Plotly) window.Plotly.purge(this.#div);
    this.#div.textContent = "";
  }

  /* No figure yet: a placeholder saying `text`, as tall as `like`'s figure (a result of the
   * same widget) would be drawn here, so the page does not jump when the figure comes. */
  placeholder(text, like) {
    this.clear();
    const height = (like && like.figure && this.#layout(like.figure).layout.height) || 450;
    const p = el("p", { "class": "tw-placeholder" }, text);
    p.style.height = `${height}px`;
    this.#div.appendChild(p);
    whenPlotly().catch(() => {});  // fetched meanwhile: the figure is drawn when its answer is in
  }

  /* Draw for the paper (`width`: beforeprint) or for the screen again (0: afterprint). A
   * figure drawn wider than the paper's column is drawn again at the column's width and
   * shrunk in proportion, its text kept at its size: every browser prints it whole (the print
   * stylesheet's zoom needs Chromium 133's typed attr()). */
  printAt(width) {
    const drawnAt = (w) => (w && this.#plotWidth > w ? w : this.#plotWidth);
    const before = drawnAt(this.#printWidth);
    this.#printWidth = width;
    if (this.#result && drawnAt(width) !== before) this.redraw();
  }

  /* The figure's data and layout for this plot's width: the phone layout under NARROW_PX. */
  #layout(fig) {
    if (this.#width && this.#width < NARROW_PX) return narrowFigure(fig);
    return { data: fig.data, layout: { ...fig.layout } };
  }

  #plot(Plotly, result) {
    if (this.#result !== result) return undefined;  // a newer result arrived meanwhile
    const t0 = performance.now();
    // A figure may carry a patch for phone screens (e.g. stack side-by-side panels).
    const { data, layout } = this.#layout(result.figure);
    // The width we know, so plotly.js need not measure the page.
    layout.autosize = false;
    if (this.#plotWidth) layout.width = this.#plotWidth;
    if (!layout.height) layout.height = 450;
    if (this.#printWidth && layout.width > this.#printWidth) {
      layout.height = Math.round(layout.height * this.#printWidth / layout.width);
      layout.width = this.#printWidth;
    }
    const t = themed(data, layout);
    if (COARSE) still(t.layout);
    const div = this.#div;
    if (div.textContent && !div.classList.contains("js-plotly-plot")) div.textContent = "";
    const placeholder = div.querySelector(":scope > .tw-placeholder");
    if (placeholder) placeholder.remove();
    this.#dropSnapshot();  // in the same task as plotly's drawing: no frame without a figure
    const t1 = performance.now();
    const done = Plotly.react(div, t.data, t.layout, COARSE ? TOUCH_CONFIG : PLOT_CONFIG);
    const t2 = performance.now();
    mark(result, { theme: t1 - t0, react: t2 - t1, drawnAt: t2 }, this.#who);
    return done.then(() => {
      if (!this.#clickBound && div.on) {
        this.#clickBound = true;
        div.on("plotly_click", (ev) => this.#onClick(ev));
      }
      if (this.#labelled) return;
      this.#labelled = true;
      div.querySelectorAll(".modebar-btn").forEach((b) => {
        if (!b.getAttribute("aria-label") && b.getAttribute("data-title")) {
          b.setAttribute("aria-label", b.getAttribute("data-title"));
        }
      });
    });
  }
}

/* Where this answer's time went, as a Performance measure `tw:update` from the change to the
 * drawn figure (benchmark: tests/benchmarks/slider_latency.py). */
export function mark(result, draw, who) {
  const t = result.timing;
  if (!t || t.marked || !performance.measure) return;
  t.marked = true;
  const detail = { widget: who.widget, key: who.key, params: result.params,
                   cached: !!result.cached, server_ms: result.elapsed_ms, bytes: t.bytes,
                   wait: t.sentAt - t.inputAt, network: t.headersAt - t.sentAt,
                   download: t.bodyAt - t.headersAt, parse: t.parsedAt - t.bodyAt,
                   client: draw.drawnAt - draw.react - draw.theme - t.parsedAt,
                   theme: draw.theme, react: draw.react, total: draw.drawnAt - t.inputAt };
  try {
    performance.measure("tw:update", { start: t.inputAt, end: draw.drawnAt, detail });
  } catch (e) { /* an old browser: no measure, nothing else lost */ }
}

/* The result's values in `box` (a <dl>), as the spec's outputs format them; returns them in
 * words ("label value unit"), for the text summary. */
export function renderValues(box, outputs, values) {
  box.textContent = "";
  const said = [];
  for (const o of outputs || []) {
    if (!(o.name in values)) continue;
    const v = values[o.name];
    const text = o.zero && v === 0 ? o.zero : withUnit(v, o.fmt, o.unit);
    const row = el("div", { "class": "tw-value", "data-name": o.name });
    row.appendChild(el("dt", {}, o.label));
    // A number and its unit never break ("1.2e-⏎06", "4.67⏎nats"): its label wraps instead.
    // A long name (a kernel's) still wraps inside its row.
    row.appendChild(el("dd", typeof v === "number" ? { "class": "tw-num" } : {}, text));
    box.appendChild(row);
    said.push(`${o.label} ${text}`);
  }
  return said;
}

/* The values' labels, with no numbers yet (a shared link's setting on its way). */
export function renderPending(box, outputs) {
  box.textContent = "";
  for (const o of outputs || []) {
    const row = el("div", { "class": "tw-value", "data-name": o.name });
    row.appendChild(el("dt", {}, o.label));
    row.appendChild(el("dd", { "aria-label": "computing" }, "\u2026"));
    box.appendChild(row);
  }
}

/* The figure's data as a real table, in `box` (a closed <details> a screen reader can open). */
export function renderTable(box, table) {
  box.textContent = "";
  if (!table || !table.rows) { box.hidden = true; return; }
  box.hidden = false;
  box.appendChild(el("summary", {}, "Data table" + (table.caption ? `: ${table.caption}` : "")));
  const wrap = el("div", { "class": "tw-table-scroll" });
  const t = el("table", {});
  if (table.caption) t.appendChild(el("caption", {}, table.caption));
  if (table.columns) {
    const tr = el("tr", {});
    for (const c of table.columns) tr.appendChild(el("th", { scope: "col" }, String(c)));
    const thead = el("thead", {});
    thead.appendChild(tr);
    t.appendChild(thead);
  }
  const tbody = el("tbody", {});
  for (const row of table.rows) {
    const r = el("tr", {});
    row.forEach((cell, i) => {
      const text = typeof cell === "number" ? formatValue(cell, ".4g") : String(cell);
      r.appendChild(el(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : {}, text));
    });
    tbody.appendChild(r);
  }
  t.appendChild(tbody);
  wrap.appendChild(t);
  box.appendChild(wrap);
}

/* What the built figure's status asks of a reader at a screen (not on paper: widget.js puts it
 * in a span that print leaves out). */
export const BUILT_HINT = "Move a control to recompute it live.";

/* The status line under a figure: where `result` came from. `how.precomputed`: "built" (baked
 * at build time, the page's opening figure), "offline" (baked, standing in because the server
 * did not answer: `how.why`; `at`: the setting it shows, in words), else a live answer. */
export function statusText(result, how, at) {
  if (how.precomputed === "built") return `computed when the book was built. ${BUILT_HINT}`;
  if (how.precomputed === "offline") {
    return `${how.why}, so this is the nearest result baked into the page: ${at}.`;
  }
  const trip = `round trip ${withUnit(Math.round(result.roundTripMs), "d", "ms")}.`;
  if (result.cached) {
    // An answer from a cache (the server's, one in front of it, or this browser's): no
    // compute time is claimed for it.
    return `Computed live on ${result.device} earlier; this answer came from ` +
      (result.cachedBy === "browser" ? "your browser's cache" : "the server's cache") +
      ` (nothing recomputed); ${trip}`;
  }
  return `Computed live on ${result.device} in ${withUnit(result.elapsed_ms, ".3g", "ms")}; ${trip}`;
}
