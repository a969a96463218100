/* Page plumbing, run on every page Material shows (its `document$`, so also after instant
 * navigation): widgets mounted, notebook figures drawn and themed, math rendered, themed SVGs
 * inlined, same-page links kept from instant navigation, a shared link landed on its widget. */

import { dataBlocks, el, loadScript } from "./dom.js";
import { liveSpecs } from "./live-spec.js";
import { keepPlotlyStyles, whenPlotly } from "./plotly.js";
import { PRINT_PX } from "./render.js";
import { NARROW_PX, forgetPageBg, merge, themed } from "./theme.js";
import { KATEX, KATEX_AUTO } from "./vendor.js";
import { Widget } from "./widget.js";

export function mountAll() {
  document.querySelectorAll("[data-widget]").forEach(function (root) {
    if (root.dataset.mounted) return;
    root.dataset.mounted = "1";
    try {
      root.widget = new Widget(root);
      followServer(root.widget);
    } catch (err) {
      root.appendChild(el("p", { "class": "tw-error" }, "This widget failed to start: " + err));
      // Report it, but let the page's other widgets start.
      setTimeout(function () { throw err; });
    }
  });
}

/* When the server's spec arrives, the widget adopts it (unless it has left the page). */
export function followServer(widget) {
  liveSpecs(widget.api).then(function (specs) {
    if (!document.body.contains(widget.root)) return;
    var live = (specs && specs[widget.spec.name]) || null;
    try {
      widget.adoptSpec(live);
      // whose spec the controls follow now: the server's, or the one the page was built with
      widget.root.dataset.spec = live ? "server" : "built";
      if (!live) widget.serverAnswers(false, "the book's server did not answer");
    } catch (err) {
      setTimeout(function () { throw err; });
    }
  });
}

/* Executed notebooks' figures, handed over by the build as data (widget_blocks.py
   notebook_figure: no notebook code runs), drawn into their divs once plotly.js is here. */
export function drawNotebookFigures() {
  var blocks = dataBlocks(document, "script.tw-notebook-figure").filter(function (b) {
    var div = document.getElementById(b.dataset.div || "");
    return div && !div.dataset.drawn;
  });
  if (!blocks.length) return;
  whenPlotly().then(function () {
    blocks.forEach(function (b) {
      var div = document.getElementById(b.dataset.div || "");
      if (!div || div.dataset.drawn) return;  // drawn already, or its page has gone
      div.dataset.drawn = "1";
      try {
        var fig = JSON.parse(b.textContent);
        window.Plotly.newPlot(div, fig.data, fig.layout, fig.config || {});
      } catch (err) {
        setTimeout(function () { throw err; });  // reported; the page's other figures draw
      }
    });
    themeNotebookFigures();
  });
}

/* Notebook figures (not widgets) get the same theme, and a phone layout under 560 px. */
export function themeNotebookFigures() {
  if (!window.Plotly) return;
  document.querySelectorAll(".js-plotly-plot").forEach(function (div) {
    if (div.closest("[data-widget]") || !div.layout) return;
    var layout = div.layout;
    if (div.clientWidth && div.clientWidth < NARROW_PX) {
      layout = merge(layout, { margin: { l: 45, r: 8, t: 40, b: 40 },
                               legend: { orientation: "h", y: -0.25, x: 0 } });
    }
    var t = themed(div.data, layout);
    window.Plotly.react(div, t.data, t.layout, { responsive: true, displaylogo: false });
  });
}

/* A live palette switch redraws every figure in the new scheme. */
var watching = false;
export function watchScheme() {
  if (watching || !window.MutationObserver) return;
  watching = true;
  new MutationObserver(function () {
    forgetPageBg();
    document.querySelectorAll("[data-widget]").forEach(function (root) {
      if (root.widget) root.widget.draw();
    });
    themeNotebookFigures();
  }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
}

/* The chapters' math is set at build time (widgets/build/typeset.py): their pages load no KaTeX.
 * An executed notebook's markdown keeps its TeX, in dollars or TeX's brackets; on a page that
 * has some, KaTeX (about 80 KB compressed) is fetched once and sets it. */
var NOTEBOOK_MATH = [{ left: "$$", right: "$$", display: true },
                     { left: "$", right: "$", display: false },
                     { left: "\\(", right: "\\)", display: false },
                     { left: "\\[", right: "\\]", display: true }];
var HAS_MATH = /\$|\\\(|\\\[/;

var katexPromise = null;
function whenKatex() {
  if (window.renderMathInElement) return Promise.resolve();
  if (!katexPromise) {
    var here = function (path) { return new URL(path, import.meta.url).href; };
    katexPromise = loadScript(here(KATEX)).then(function () { return loadScript(here(KATEX_AUTO)); })
      .catch(function (err) { katexPromise = null; throw err; });
  }
  return katexPromise;
}

export function renderMath() {
  var nodes = Array.prototype.filter.call(
    document.querySelectorAll(".jp-RenderedMarkdown:not([data-rendered])"), function (node) {
      node.dataset.rendered = "1";
      return HAS_MATH.test(node.textContent);
    });
  if (!nodes.length) return;
  whenKatex().then(function () {
    nodes.forEach(function (node) {
      window.renderMathInElement(node, { delimiters: NOTEBOOK_MATH, throwOnError: false });
    });
  }, function (err) {  // the TeX stays as text; let it be tried again on the next page
    nodes.forEach(function (node) { delete node.dataset.rendered; });
    console.warn(err);
  });
}

/* SVG figures made for it (class tw-themed-svg, e.g. the loss curve) are inlined, so the
 * page's colour scheme applies to them, live switch included. An <img> cannot see it. */
export function inlineThemedSvgs() {
  document.querySelectorAll('article img[src$=".svg"]:not([data-tw-checked])').forEach(function (img) {
    img.dataset.twChecked = "1";
    fetch(img.src).then(function (r) { return r.ok ? r.text() : ""; }).then(function (text) {
      if (text.indexOf("tw-themed-svg") < 0) return;
      var doc = new DOMParser().parseFromString(text, "image/svg+xml");
      var svg = doc.documentElement;
      if (!svg || svg.nodeName.toLowerCase() !== "svg") return;
      svg = document.importNode(svg, true);
      svg.classList.remove("tw-standalone");
      if (img.alt) svg.setAttribute("aria-label", img.alt);
      svg.removeAttribute("width");
      svg.removeAttribute("height");
      svg.style.maxWidth = "100%";
      svg.style.height = "auto";
      svg.style.width = (img.getAttribute("width") || "640") + "px";
      if (img.parentNode) img.parentNode.replaceChild(svg, img);
    }).catch(function () { /* the <img> stays: still readable, in light colours */ });
  });
}

/* Links within the page (the table of contents, a heading's permalink, a footnote, "jump to
 * the figure") are followed here, not by Material's instant navigation: the first time it
 * navigates it fetches the page again and swaps the content in, which replaced every mounted
 * widget, and the reader's settings with it, by a fresh copy. Going back and forth between
 * anchors of the page (popstate) is kept from it for the same reason, by a listener that must
 * come before Material's (widgets/theme/main.html); onPage tells it which page is shown. */
var shownPath = null;

export function toHash(hash) {
  var id = decodeURIComponent((hash || "").slice(1)), target = id && document.getElementById(id);
  if (target) target.scrollIntoView({ block: "start" });
  return target;
}

export function closeDrawers() {  // Material's phone navigation and table-of-contents drawers
  ["__drawer", "__toc"].forEach(function (id) {
    var toggle = document.getElementById(id);
    if (toggle && toggle.checked) {
      toggle.checked = false;
      toggle.dispatchEvent(new Event("change"));
    }
  });
}

var linksKept = false;
export function keepSamePageLinks() {
  if (linksKept) return;
  linksKept = true;
  document.addEventListener("click", function (ev) {
    if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey ||
        ev.altKey || !(ev.target instanceof Element)) return;
    var a = ev.target.closest("a[href]");
    if (!a || a.target || a.hasAttribute("download")) return;
    var url = new URL(a.getAttribute("href"), window.location.href);
    if (!url.hash || url.origin !== window.location.origin ||
        url.pathname !== window.location.pathname) return;
    ev.preventDefault();
    ev.stopPropagation();   // Material's listener (on the body) never sees it
    closeDrawers();
    // A native fragment navigation (scroll, :target, where Tab goes next); the page's query,
    // the widgets' settings, stays. Its popstate stops at the guard in main.html.
    if (url.hash !== window.location.hash) window.location.hash = url.hash;
    else toHash(url.hash);
  }, true);
}

/* A link to a widget (#widget-key, or a link carrying only a widget's settings) opens the
 * page on that widget, also after the figures above it have grown to their height. */
export function landOnWidget() {
  var target = null, hash = window.location.hash;
  if (hash) {
    target = document.getElementById(decodeURIComponent(hash.slice(1)));
    if (!target || !target.matches("[data-widget]")) return;
  } else {
    if (window.scrollY > 0) return;
    var keys = Array.from(new URLSearchParams(window.location.search).keys());
    document.querySelectorAll("[data-widget]").forEach(function (root) {
      if (!target && root.widget && keys.some(function (k) {
        return k.indexOf(root.widget.key + ".") === 0;
      })) target = root;
    });
  }
  if (!target) return;
  target.scrollIntoView({ block: "start" });
  var landed = window.scrollY;
  whenPlotly().then(function () {
    requestAnimationFrame(function () {
      setTimeout(function () {  // the figures above are drawn: land again, unless the reader moved
        if (Math.abs(window.scrollY - landed) < 2) target.scrollIntoView({ block: "start" });
      }, 0);
    });
  }).catch(function () {});
}

/* Printing (Ctrl+P, the browser's menu): each widget's figure drawn again at the paper's
 * width before the page is laid out for print, and at the screen's after. The print
 * stylesheet's zoom does the same only where typed attr() works (Chromium 133+). */
var printing = false;
export function watchPrint() {
  if (printing) return;
  printing = true;
  var each = function (width) {
    document.querySelectorAll("[data-widget]").forEach(function (root) {
      if (root.widget) root.widget.figure.printAt(width);
    });
  };
  window.addEventListener("beforeprint", function () { each(PRINT_PX); });
  window.addEventListener("afterprint", function () { each(0); });
}

export function onPage() {
  var fresh = shownPath !== window.location.pathname;
  shownPath = window.location.pathname;
  if (window.twShownPath) window.twShownPath(shownPath);
  keepSamePageLinks();
  inlineThemedSvgs();
  renderMath();
  mountAll();
  // Each widget has dropped its opening figure's pictures if it opens on a link's own setting;
  // the ones kept show the figure drawn (main.html hid them all until now on such a link).
  document.documentElement.classList.remove("tw-linked");
  if (fresh) landOnWidget();
  drawNotebookFigures();
  keepPlotlyStyles();
  watchScheme();
  watchPrint();
}
