/* plotly.js: loaded once, async, only by a page that has a figure; its configuration for the
 * widgets' figures; and its injected styles kept across instant navigation. */

import { el, loadScript } from "./dom.js";
import { PLOTLY } from "./vendor.js";

// No `responsive`: plotly.js would then measure the div on every draw (a forced layout of the
// whole page); each widget watches its own width (ResizeObserver) and passes it in.
// The toolbar keeps Download and Reset axes only: no zoom-and-pan buttons on bars, and none
// of plotly's "Share chart" (an upload to Plotly Cloud; the book's own link is a button).
export var PLOT_CONFIG = { displaylogo: false, modeBarButtons: [["toImage", "resetScale2d"]] };
// On a touch screen a swipe over a figure scrolls the page: no drag-zoom, no pinch or scroll
// zoom, no double-tap reset. A tap still reads a value (hover labels). No toolbar either: it is
// always shown there, over the figure's title and bars, and its two buttons do nothing a touch
// reader needs (the axes are fixed; the book's own buttons share the setting).
export var COARSE = typeof window !== "undefined" &&
  !!(window.matchMedia && window.matchMedia("(pointer: coarse)").matches);
export var TOUCH_CONFIG = Object.assign({}, PLOT_CONFIG, { scrollZoom: false, doubleClick: false,
                                                           showAxisDragHandles: false,
                                                           displayModeBar: false });
// Where the build put plotly.js (vendor.js, relative to the runtime's folder).
const PLOTLY_SRC = new URL(PLOTLY, import.meta.url).href;

/* plotly.js (about 500 KB compressed) is fetched once, async, by the first page that has a
 * figure; it never blocks the text. Resolves with window.Plotly. */
var plotlyPromise = null;
export function whenPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyPromise) {
    plotlyPromise = loadScript(PLOTLY_SRC).then(function () {
      keepPlotlyStyles();
      return window.Plotly;
    }, function () {
      plotlyPromise = null;
      throw new Error("plotly.js did not load");
    });
  }
  return plotlyPromise;
}

/* Instant navigation swaps <head> children and drops the <style> plotly.js injected at
 * start-up (modebar and hover layout). Keep a copy and put it back after each swap. */
var plotlyRules = null;
export function keepPlotlyStyles() {
  var live = document.getElementById("plotly.js-style-global");
  if (live && live.sheet && live.sheet.cssRules.length) {
    plotlyRules = Array.prototype.map.call(live.sheet.cssRules,
                                           function (r) { return r.cssText; }).join("\n");
  }
  if (!live && plotlyRules && !document.getElementById("tw-plotly-styles")) {
    var copy = el("style", { id: "tw-plotly-styles" });
    copy.textContent = plotlyRules;
    document.body.appendChild(copy);
  }
}
