/* Figures in the page's colour scheme: the server's light and dark palettes laid over a
 * figure, translucent colour scales composited over the page background. `merge`, `rgba`,
 * `overBg` and `fillIn` are pure; the rest reads the page. */

export var NARROW_PX = 560;  // under this width a figure takes its phone layout

/* A copy of `base` with `patch` merged in, objects recursively (arrays are replaced). */
export function merge(base, patch) {
  var out = Object.assign({}, base);
  Object.keys(patch).forEach(function (k) {
    var b = base[k], p = patch[k];
    out[k] = (b && p && typeof b === "object" && typeof p === "object" &&
              !Array.isArray(b) && !Array.isArray(p)) ? merge(b, p) : p;
  });
  return out;
}

// The phone layout's side margins: the left one holds the y axis's ticks, the right one is
// as narrow as a plot can do with. A figure whose right edge carries labels (a bar's value
// outside it, a colour bar's ticks) asks for more with its `narrow.margin.r`.
export var NARROW_MARGIN = { l: 45, r: 5 };

/* The figure `fig` ({data, layout, narrow, narrow_traces}) in its phone layout, {data,
 * layout}: its own patch for phones (stacked panels, shorter titles) and one per trace (a
 * heatmap's colour bar) merged in, then the book's phone margins, keeping a wider right one
 * the figure asks for. The one place the phone layout is made (pure: tests/js/parts.test.mjs). */
export function narrowFigure(fig) {
  var patch = fig.narrow || {}, asked = (patch.margin && patch.margin.r) || 0;
  var layout = merge(fig.layout || {}, patch);
  layout.margin = Object.assign({}, layout.margin, NARROW_MARGIN,
                                { r: Math.max(NARROW_MARGIN.r, asked) });
  var data = fig.data || [];
  if (fig.narrow_traces) {
    data = data.map(function (trace, i) { return merge(trace, fig.narrow_traces[i] || {}); });
  }
  Object.keys(layout).forEach(function (k) {
    if (/^[xy]axis\d*$/.test(k)) layout[k] = legible(layout[k], true);
    if (/^coloraxis\d*$/.test(k) && layout[k].colorbar) {
      layout[k] = Object.assign({}, layout[k], { colorbar: legible(layout[k].colorbar) });
    }
  });
  data = data.map(function (t) {
    return t.colorbar ? Object.assign({}, t, { colorbar: legible(t.colorbar) }) : t;
  });
  return { data: data, layout: layout };
}

// The smallest tick label a phone shows (px): a figure asking for less (9 px on a crowded
// heatmap) gets this (ux review P12: 9 px labels were hard to read on a phone).
export var MIN_TICK_PX = 11;

/* An axis or colour bar whose tick labels are at least MIN_TICK_PX (pure). An axis whose
 * labels grow makes room for them (automargin, unless the figure says otherwise): a longer
 * label is never cut at the figure's edge. */
export function legible(axis, isAxis) {
  var size = axis && axis.tickfont && axis.tickfont.size;
  if (!size || size >= MIN_TICK_PX) return axis;
  var out = Object.assign({}, axis, { tickfont: Object.assign({}, axis.tickfont, { size: MIN_TICK_PX }) });
  if (isAxis && out.automargin === undefined) out.automargin = true;
  return out;
}

// The room a tick label takes on an axis (px): fewer labels than the axis has room for.
export var TICK_ROOM_PX = 60;

/* Ticks for a log axis that names none (pure): over a decade or more, labels only at powers of
 * ten, never plotly's minor digits between them ("2 5 2 5", "9 8 7 6 5 4 3 2"); under a
 * decade, no more labels than `px` has room for (its "100 120" touched on a phone). `values`:
 * the data drawn on the axis; returns the axis's patch ({nticks}) or null. plotly.js picks
 * whole decades when the span in decades over nticks is above 0.7. */
export function logTicks(axis, values, px) {
  if (!axis || axis.type !== "log" || axis.dtick !== undefined || axis.tickvals || axis.nticks) {
    return null;
  }
  var lo, hi;
  if (Array.isArray(axis.range) && axis.range.length === 2) {
    lo = Math.min(axis.range[0], axis.range[1]);
    hi = Math.max(axis.range[0], axis.range[1]);
  } else {
    var logs = values.filter(function (v) { return typeof v === "number" && v > 0 && isFinite(v); })
      .map(Math.log10);
    if (logs.length < 2) return null;
    lo = Math.min.apply(null, logs);
    hi = Math.max.apply(null, logs);
  }
  var decades = hi - lo, room = Math.max(2, Math.floor((px || 0) / TICK_ROOM_PX));
  if (!(decades > 0)) return null;
  if (decades < 1) return { nticks: room };
  return { nticks: Math.max(1, Math.min(room, Math.floor(decades / 0.75))) };
}

/* The numbers each trace draws on the axis `key` ("xaxis2": its traces' x, where they name
 * "x2"), flattened one level (a heatmap's rows). */
function axisValues(data, key) {
  var letter = key[0], id = letter + key.slice(5), out = [];
  (data || []).forEach(function (tr) {
    if ((tr[letter + "axis"] || letter) !== id || !Array.isArray(tr[letter])) return;
    tr[letter].forEach(function (v) { if (Array.isArray(v)) out.push.apply(out, v); else out.push(v); });
  });
  return out;
}

/* Light and dark figure colours come from the server (backend/compute/style.py), written
 * into every page's head by the build hook. */
var THEME = null;
export function themeData() {
  if (!THEME) {
    var node = document.getElementById("tw-theme");
    THEME = node ? JSON.parse(node.textContent) : { themes: { light: {}, dark: {} } };
  }
  return THEME;
}

export function scheme() {
  return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "light";
}

var bgCache = {};
/* After a palette switch: read the background again. */
export function forgetPageBg() { bgCache = {}; }

export function pageBg() {
  var key = scheme();
  if (!bgCache[key]) bgCache[key] = readPageBg();
  return bgCache[key];
}

export function readPageBg() {
  var probe = document.querySelector(".md-main") || document.body;
  var c = getComputedStyle(probe).backgroundColor;
  if (!c || c === "transparent" || /rgba\(.*,\s*0\)$/.test(c)) {
    c = getComputedStyle(document.body).backgroundColor;
  }
  if (!c || c === "transparent" || /rgba\(.*,\s*0\)$/.test(c)) {
    c = scheme() === "dark" ? "#1e2129" : "#ffffff";
  }
  return c;
}

export function rgba(c) {
  var m = /^rgba?\(([^)]*)\)$/.exec(String(c).replace(/\s+/g, ""));
  if (m) {
    var v = m[1].split(",").map(Number);
    return v.length >= 3 ? [v[0], v[1], v[2], v.length > 3 ? v[3] : 1] : null;
  }
  m = /^#([0-9a-f]{6})$/i.exec(String(c));
  return m ? [0, 2, 4].map(function (i) { return parseInt(m[1].substr(i, 2), 16); }).concat([1])
           : null;
}

/* A colour scale's translucent stops, composited over the page background `bg`. */
export function overBg(scale, bg) {
  var under = rgba(bg);
  if (!under) return scale;
  return scale.map(function (stop) {
    var c = rgba(stop[1]);
    if (!c || c[3] >= 1) return stop;
    var mix = [0, 1, 2].map(function (i) { return Math.round(c[i] * c[3] + under[i] * (1 - c[3])); });
    return [stop[0], "rgb(" + mix.join(", ") + ")"];  // as getComputedStyle writes it
  });
}

export function fillIn(obj, defaults) {  // defaults where the figure says nothing
  var out = Object.assign({}, obj);
  Object.keys(defaults).forEach(function (k) {
    var d = defaults[k], v = out[k];
    if (d && typeof d === "object" && !Array.isArray(d)) {
      out[k] = fillIn(v && typeof v === "object" ? v : (typeof v === "string" && k === "title"
                                                        ? { text: v } : {}), d);
    } else if (v === undefined) {
      out[k] = d;
    }
  });
  return out;
}

/* The page's theme laid over a figure: transparent paper and plot, text, grid and axis
 * colours from the scheme, a weight heatmap whose zero end is the page background. */
export function themed(data, layout) {
  var t = themeData().themes[scheme()] || {};
  var font = { color: t.font };
  var axis = { gridcolor: t.grid, zerolinecolor: t.zeroline, linecolor: t.line,
               tickfont: font, title: { font: font } };
  var lay = fillIn(layout, { font: font, title: { font: font }, legend: { font: font },
                             hoverlabel: { bgcolor: t.hover_bg, font: font } });
  lay.paper_bgcolor = "rgba(0,0,0,0)";   // never a white panel on a dark page
  lay.plot_bgcolor = "rgba(0,0,0,0)";
  var axes = Object.keys(lay).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
  if (axes.indexOf("xaxis") < 0) axes.push("xaxis");
  if (axes.indexOf("yaxis") < 0) axes.push("yaxis");
  axes.forEach(function (k) {
    lay[k] = fillIn(lay[k] || {}, axis);
    var span = (lay[k].domain || [0, 1])[1] - (lay[k].domain || [0, 1])[0];
    var px = (k[0] === "x" ? lay.width || 700 : lay.height || 450) * span;
    var ticks = logTicks(lay[k], axisValues(data, k), px);
    if (ticks) lay[k] = Object.assign({}, lay[k], ticks);
  });
  if (lay.annotations) {
    lay.annotations = lay.annotations.map(function (a) { return fillIn(a, { font: font }); });
  }
  var weight = themeData().weight_scale, scales = themeData().weight_scales || {};
  var bg = pageBg();
  // A colour scale that fades to transparent is laid over the page's background here, so
  // plotly's automatic cell labels contrast with the colour the reader sees (it would take
  // white as the background and write dark grey on a dark cell).
  Object.keys(lay).forEach(function (k) {
    if (/^coloraxis\d*$/.test(k) && Array.isArray(lay[k].colorscale)) {
      lay[k] = Object.assign({}, lay[k], { colorscale: overBg(lay[k].colorscale, bg) });
    }
  });
  var out = (data || []).map(function (tr) {
    var copy = Object.assign({}, tr);
    if (copy.colorbar || /heatmap|contour/.test(copy.type || "")) {
      copy.colorbar = fillIn(copy.colorbar || {}, { tickfont: font, title: { font: font } });
    }
    if (weight && copy.colorscale === weight && scales[scheme()]) {
      copy.colorscale = scales[scheme()].map(function (s) {
        return [s[0], s[1] === "bg" ? bg : s[1]];
      });
      copy.reversescale = false;
    }
    if (Array.isArray(copy.colorscale)) copy.colorscale = overBg(copy.colorscale, bg);
    return copy;
  });
  return { data: out, layout: lay };
}
