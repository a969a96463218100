/* The book's widget runtime: one script for every widget on every page.
 *
 * Each `<div data-widget>` carries its spec and results baked at build time (see hook.py).
 * The runtime builds the controls from the spec, draws the baked result for the start values
 * at once, and on every change asks the API to recompute: at most one request in flight per
 * widget, and the newest setting goes out the moment the answer before it is in (no fixed wait;
 * during a drag the figure follows at the rate the server answers). If the API cannot be
 * reached it draws the nearest baked result under a "precomputed" label, so the page keeps
 * working from a static host or a train tunnel.
 * Mounting happens from Material's `document$`, so it survives instant navigation.
 *
 * What a reader can rely on:
 * - plotly.js is fetched (async) only on pages with a figure; text, controls and values show
 *   at once and the baked figure is drawn when plotly.js arrives. Notebook figures wait too.
 * - A value is checked against the spec (including ranges that follow other controls, see
 *   spec.Depends) before it is sent. An invalid value is refused in the words of the control's
 *   label and the control goes back to the setting the figure shows; a 400 from the server marks
 *   figure and values as still showing the previous setting, in words. The URL only ever
 *   carries valid settings; an invalid one in a shared link is ignored with a notice.
 * - Each widget instance owns its URL keys (`attention_map.model`, `attention_map.2.model`).
 * - Figures follow the page's colour scheme, also on a live palette switch.
 * - Each plot has a label, the result's text summary and a data table for screen readers.
 */
(function () {
  "use strict";

  var NARROW_PX = 560;
  var REQUEST_TIMEOUT_MS = 15000;
  var BUSY_AFTER_MS = 250;  // only an answer slower than this dims the figure (no flicker in drags)
  var ANNOUNCE_AFTER_MS = 700;  // a screen reader hears the result once the reader pauses
  var TOUCH_SLOP_PX = 8;        // a finger moving less than this is a tap
  // No `responsive`: plotly.js would then measure the div on every draw (a forced layout of the
  // whole page); each widget watches its own width (ResizeObserver) and passes it in.
  // The toolbar keeps Download and Reset axes only: no zoom-and-pan buttons on bars, and none
  // of plotly's "Share chart" (an upload to Plotly Cloud; the book's own link is a button).
  var PLOT_CONFIG = { displaylogo: false, modeBarButtons: [["toImage", "resetScale2d"]] };
  // On a touch screen a swipe over a figure scrolls the page: no drag-zoom, no pinch or scroll
  // zoom, no double-tap reset. A tap still reads a value (hover labels).
  var COARSE = !!(window.matchMedia && window.matchMedia("(pointer: coarse)").matches);
  var TOUCH_CONFIG = Object.assign({}, PLOT_CONFIG, { scrollZoom: false, doubleClick: false,
                                                      showAxisDragHandles: false });
  // plotly.js sits beside this script in the built site: assets/vendor/plotly.min.js
  var SELF = document.currentScript && document.currentScript.src;
  var PLOTLY_SRC = SELF ? SELF.replace(/book\/runtime\.js(\?.*)?$/, "vendor/plotly.min.js")
                        : "/assets/vendor/plotly.min.js";

  // ---------------------------------------------------------------- formatting

  /* Python rounds an exact tie (1234.5 to 0 places, 0.125 to 2) to the even digit; JavaScript's
   * toFixed and toExponential round it up. `tie(a, d)`: is a >= 0 exactly halfway at d places
   * after the point (d < 0: before it)? toFixed gives a double's exact decimal digits. */
  function tie(a, d) {
    if (!(a < 1e21)) return false;
    var s = a.toFixed(Math.min(100, Math.max(0, d) + 25)), point = s.indexOf(".");
    return /^50*$/.test(s.replace(".", "").slice(point + d));
  }

  function fixed(x, f) {
    var a = Math.abs(x);
    if (!tie(a, f)) return x.toFixed(f);
    var cut = a.toFixed(f + 1).slice(0, -1).replace(/\.$/, "");
    return (x < 0 ? "-" : "") + (+cut.slice(-1) % 2 ? a.toFixed(f) : cut);
  }

  function expo(x, k) {  // k digits after the mantissa's point
    var a = Math.abs(x), e = a === 0 ? 0 : +a.toExponential(20).split("e")[1];
    if (!tie(a, k - e)) return x.toExponential(k);
    var longer = a.toExponential(k + 1).split("e"), cut = longer[0].slice(0, -1).replace(/\.$/, "");
    return (x < 0 ? "-" : "") + (+cut.slice(-1) % 2 ? a.toExponential(k) : cut + "e" + longer[1]);
  }

  /* A subset of Python's format spec, enough for the specs' `fmt` fields. */
  function formatValue(value, fmt) {
    if (typeof value !== "number") return String(value);
    if (!isFinite(value)) return String(value);
    var m = /^(,)?(?:\.(\d+))?([fgde%])?$/.exec(fmt || "");
    if (!m) return String(value);
    var comma = !!m[1], prec = m[2] === undefined ? null : +m[2], kind = m[3] || "g";
    var text;
    if (kind === "f") text = fixed(value, prec === null ? 6 : prec);
    else if (kind === "%") text = fixed(value * 100, prec === null ? 6 : prec) + "%";
    // Python writes at least two exponent digits (2.1e-07); JavaScript one (2.1e-7).
    else if (kind === "e") text = expo(value, prec === null ? 6 : prec)
      .replace(/e([+-])(\d)$/, "e$10$2");
    else if (kind === "d") text = Math.round(value).toString();
    else {
      // Python's g: the exponent after rounding to p digits picks the form; zeros trimmed.
      var p = prec === null ? 6 : Math.max(1, prec);
      var exp = value === 0 ? 0 : +expo(value, p - 1).split("e")[1];
      if (exp < -4 || exp >= p) {
        text = expo(value, p - 1).replace(/\.?0+e/, "e")
          .replace(/e([+-])(\d)$/, "e$10$2");
      } else {
        text = fixed(value, Math.max(0, p - 1 - exp));
        if (text.indexOf(".") >= 0) text = text.replace(/\.?0+$/, "");
      }
    }
    if (comma) {
      var parts = text.split(".");
      parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ",");
      text = parts.join(".");
    }
    return text;
  }

  /* A copy of `base` with `patch` merged in, objects recursively (arrays are replaced). */
  function merge(base, patch) {
    var out = Object.assign({}, base);
    Object.keys(patch).forEach(function (k) {
      var b = base[k], p = patch[k];
      out[k] = (b && p && typeof b === "object" && typeof p === "object" &&
                !Array.isArray(b) && !Array.isArray(p)) ? merge(b, p) : p;
    });
    return out;
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // ------------------------------------------------------------------ plotly.js

  /* plotly.js (about 500 KB compressed) is fetched once, async, by the first page that has a
   * figure; it never blocks the text. Resolves with window.Plotly. */
  var plotlyPromise = null;
  function whenPlotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!plotlyPromise) {
      plotlyPromise = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = PLOTLY_SRC;
        s.async = true;
        s.onload = function () { keepPlotlyStyles(); resolve(window.Plotly); };
        s.onerror = function () { plotlyPromise = null; reject(new Error("plotly.js did not load")); };
        document.head.appendChild(s);
      });
    }
    return plotlyPromise;
  }

  // --------------------------------------------------------------------- theme

  /* Light and dark figure colours come from the server (backend/widgets/style.py), written
   * into every page's head by the build hook. */
  var THEME = null;
  function themeData() {
    if (!THEME) {
      var node = document.getElementById("tw-theme");
      THEME = node ? JSON.parse(node.textContent) : { themes: { light: {}, dark: {} } };
    }
    return THEME;
  }

  function scheme() {
    return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "light";
  }

  var bgCache = {};
  function pageBg() {
    var key = scheme();
    if (!bgCache[key]) bgCache[key] = readPageBg();
    return bgCache[key];
  }

  function readPageBg() {
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

  function rgba(c) {
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
  function overBg(scale, bg) {
    var under = rgba(bg);
    if (!under) return scale;
    return scale.map(function (stop) {
      var c = rgba(stop[1]);
      if (!c || c[3] >= 1) return stop;
      var mix = [0, 1, 2].map(function (i) { return Math.round(c[i] * c[3] + under[i] * (1 - c[3])); });
      return [stop[0], "rgb(" + mix.join(", ") + ")"];  // as getComputedStyle writes it
    });
  }

  function fillIn(obj, defaults) {  // defaults where the figure says nothing
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
  function themed(data, layout) {
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
    axes.forEach(function (k) { lay[k] = fillIn(lay[k] || {}, axis); });
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

  // ------------------------------------------------------------------ controls

  function isLog(p) { return p.scale === "log2" && p.min > 0; }
  function isNum(p) { return p.type === "int" || p.type === "float"; }

  /* The values a slider stops at, or null for a plain slider (position = value, or log2 of it):
   * an `allowed` list (the divisors of a head count: only those, index 0..n-1), or for a
   * log-scaled float the round values 1-2-5 per decade, with the default, the ends and the
   * round baked values among them (no 78.125 * 2^k, no 20000.000000000706). */
  function stops(p, eff, extra) {
    var lo = eff.min, hi = eff.max, list;
    if (eff.allowed) {
      list = eff.allowed.filter(function (a) { return a >= lo && a <= hi; });
      return list.length ? list.slice().sort(function (a, b) { return a - b; }) : null;
    }
    if (!(isLog(p) && p.type === "float")) return null;
    list = [lo, hi, p.default].concat((extra || []).filter(function (v) {
      return typeof v === "number" && +v.toPrecision(2) === v;
    }));
    for (var e = Math.floor(Math.log10(lo)); Math.pow(10, e) <= hi; e++) {
      [1, 2, 5].forEach(function (m) { list.push(+(m * Math.pow(10, e)).toPrecision(6)); });
    }
    list = list.filter(function (v) { return v >= lo && v <= hi; })
      .sort(function (a, b) { return a - b; });
    return list.filter(function (v, i) { return i === 0 || v !== list[i - 1]; });
  }

  function nearest(list, v) {
    return list.reduce(function (a, b) { return Math.abs(b - v) < Math.abs(a - v) ? b : a; });
  }

  /* The slider's own range: indexes into the stops, else the value (or its log2). */
  function sliderRange(p, eff, list) {
    if (list) return { min: 0, max: list.length - 1, step: 1 };
    return { min: toSlider(p, eff.min), max: toSlider(p, eff.max),
             step: isLog(p) ? 1 : (p.step || "any") };
  }

  /* Slider position <-> parameter value. Log-scaled int sliders stop at powers of two, sliders
   * with stops at those; the number box beside every slider takes any allowed value. */
  function toSlider(p, v, list) {
    if (list) return list.indexOf(nearest(list, v));
    return isLog(p) ? Math.log2(v) : v;
  }
  function fromSlider(p, s, eff, list) {
    if (list) return list[Math.max(0, Math.min(list.length - 1, Math.round(s)))];
    var v = isLog(p) ? Math.pow(2, s) : s;
    if (p.type === "int") v = Math.round(v);
    else if (p.step && !isLog(p)) v = +(p.min + Math.round((v - p.min) / p.step) * p.step).toPrecision(12);
    else v = +v.toPrecision(6);  // no floating-point noise in the box, the URL or the request
    return Math.min(eff.max, Math.max(eff.min, v));
  }

  /* The sum a spec.Limit bounds: terms of a coefficient times factors (a param, [param,
   * exponent], or [param, [[value, number], ...]]), mirror of spec.Limit.total. */
  function limitTotal(lim, params) {
    var sum = 0;
    lim.terms.forEach(function (t) {
      var num = t[0], den = 1;
      t[1].forEach(function (f) {
        if (typeof f === "string") { num *= params[f]; return; }
        var v = params[f[0]];
        if (Array.isArray(f[1])) {
          var hit = f[1].filter(function (kv) { return kv[0] === v; })[0];
          num *= hit ? hit[1] : NaN;
        } else if (f[1] >= 0) {
          num *= Math.pow(v, f[1]);
        } else {
          den *= Math.pow(v, -f[1]);  // divided last: exact when it divides (h divides d)
        }
      });
      sum += num / den;
    });
    return sum;
  }

  /* The largest value of p on its grid from lo to hi within the limit's budget, the other
   * params held (lo if none): mirror of spec.Limit.top, the same binary search. */
  function limitTop(lim, p, params, lo, hi) {
    var step = p.step || 1, first = lo + (((p.min - lo) % step) + step) % step;
    var kLo = 0, kHi = Math.max(0, Math.floor((hi - first) / step));
    function fits(k) {
      var trial = Object.assign({}, params);
      trial[p.name] = first + k * step;
      return limitTotal(lim, trial) <= lim.budget;
    }
    if (!fits(0)) return lo;
    while (kLo < kHi) {
      var mid = Math.floor((kLo + kHi + 1) / 2);
      if (fits(mid)) kLo = mid; else kHi = mid - 1;
    }
    return first + kLo * step;
  }

  function plain(v) { return typeof v === "boolean" ? (v ? "true" : "false") : String(v); }

  /* A param's constraints given the other params (mirror of spec.Param.effective). */
  function effective(p, params, labels) {
    var out = { min: p.min, max: p.max, allowed: null, disabled: false, why: [] };
    (p.depends || []).forEach(function (dep) {
      var have = params[dep.on];
      (dep.cases || []).forEach(function (c) {
        if (c[0] !== have) return;  // strict: true never matches 1
        Object.keys(c[1]).forEach(function (k) { if (k !== "note") out[k] = c[1][k]; });
        out.why.push("when " + ((labels || {})[dep.on] || dep.on) + " is " + plain(have) +
                     (c[1].note ? " (" + c[1].note + ")" : ""));
      });
    });
    (p.limits || []).forEach(function (lim) {  // only a limit that binds is named
      var top = limitTop(lim, p, params, out.min, out.max);
      if (top >= out.max) return;
      out.max = top;
      var names = [];
      lim.terms.forEach(function (t) {
        t[1].forEach(function (f) {
          var n = typeof f === "string" ? f : f[0];
          if (n !== p.name && names.indexOf(n) < 0) names.push(n);
        });
      });
      out.why.push("at " + names.map(function (n) {
        return ((labels || {})[n] || n) + " = " + plain(params[n]);
      }).join(", ") + (lim.note ? " (" + lim.note + ")" : ""));
    });
    return out;
  }

  /* The params as the page offers `p` under them: a pin the reader may leave (a Depends with
   * `release`, a preset's field) is left, so the slider keeps its free range. */
  function released(p, params) {
    var out = params;
    (p.depends || []).forEach(function (dep) {
      if (dep.release === undefined || params[dep.on] === dep.release) return;
      var pinned = (dep.cases || []).some(function (c) { return c[0] === params[dep.on]; });
      if (!pinned) return;
      if (out === params) out = Object.assign({}, params);
      out[dep.on] = dep.release;
    });
    return out;
  }

  /* The message spec.py would send for this value, or null if it is valid (same words). */
  function check(p, v, params, labels) {
    var where = "'" + p.label + "'";
    if (isNum(p)) {
      if (typeof v !== "number" || !isFinite(v)) {
        return where + " must be " + (p.type === "int" ? "an integer" : "a number") +
               ", got " + (typeof v === "string" ? JSON.stringify(v) : String(v));
      }
      if (p.type === "int" && Math.round(v) !== v) return where + " must be an integer, got " + v;
    } else if (p.type === "bool") {
      if (typeof v !== "boolean") return where + " must be true or false, got " + JSON.stringify(v);
    } else if (p.type === "choice") {
      if (p.options.indexOf(v) < 0) {
        return where + " must be one of " + p.options.map(function (o) { return "'" + o + "'"; })
          .join(", ") + ", got " + JSON.stringify(v);
      }
    } else if (p.type === "text") {
      var n = Array.from(v).length;
      if (n > p.max_length) return where + " is " + n + " characters long; the limit is " + p.max_length;
      if (!v.trim()) return where + " must not be empty";
    }
    var eff = effective(p, params, labels);
    var why = eff.why.length ? " " + eff.why.join(" and ") : "";
    if (isNum(p) && !(v >= p.min && v <= p.max)) {
      return where + " must be from " + p.min + " to " + p.max + ", got " + v;
    }
    // an integer's step grid, as spec.Param.validate words it
    if (p.type === "int" && p.step > 1 && (v - p.min) % p.step) {
      return where + " must be " + (p.min % p.step === 0 ? "a multiple of " + p.step
        : p.min + " plus a multiple of " + p.step) + ", got " + v;
    }
    if (eff.disabled || !((p.depends || []).length || (p.limits || []).length)) return null;
    if (eff.allowed && eff.allowed.indexOf(v) < 0) {
      return where + " must be one of " + eff.allowed.map(plain).join(", ") + why + ", got " + plain(v);
    }
    if (isNum(p) && !(v >= eff.min && v <= eff.max)) {
      return where + " must be from " + eff.min + " to " + eff.max + why + ", got " + v;
    }
    return null;
  }

  /* `check` as the page offers p: a value typed under a preset's pin leaves the pin (buildControl
   * has a local `check`, the checkbox, so it calls this). */
  function checkOffered(widget, p, v) {
    return check(p, v, released(p, widget.params), widget.labels);
  }

  /* What a screen reader says for a slider's value: whole floats in full (θ = 20,000, not
   * 2e+4), others to four digits. */
  function valueText(p, v) {
    var fmt = p.type === "int" ? "d" : (Math.round(v) === v && Math.abs(v) < 1e15 ? ",d" : ".4g");
    return formatValue(v, fmt) + (p.unit ? " " + p.unit : "");
  }

  /* What a choice's i-th option shows: its label where the spec gives one (a card's name for
   * the key the API takes), else the option itself. */
  function optionLabel(p, i) {
    return p.option_labels ? p.option_labels[i] : p.options[i];
  }

  function buildControl(widget, p) {
    var id = "tw-" + widget.uid + "-" + p.name;
    var row = el("div", { "class": "tw-control tw-" + p.type, "data-param": p.name });
    var label = el("label", { "for": id }, p.label);
    if (p.help) label.title = p.help;
    row.appendChild(label);
    var v = widget.params[p.name];
    var c = { row: row, label: label };

    if (isNum(p)) {
      var eff0 = widget.offered(p), list0 = widget.stopsOf(p, eff0);
      var r0 = sliderRange(p, eff0, list0);
      var slider = el("input", { type: "range", id: id, name: p.name,
        min: r0.min, max: r0.max, step: r0.step, value: toSlider(p, v, list0) });
      var box = el("input", { type: "number", name: p.name + "-value", min: p.min, max: p.max,
        step: p.step || "any", value: v, inputmode: p.type === "int" ? "numeric" : "decimal" });
      box.setAttribute("aria-label", p.label + " (exact value)");
      slider.addEventListener("input", function () {
        var eff = widget.offered(p);
        var nv = fromSlider(p, +slider.value, eff, widget.stopsOf(p, eff));
        // Same stop: nothing to send while the figure shows the live answer for it. On a baked
        // (fallback) result a move to the same stop asks the server again (set() never sends a
        // setting that is already in flight).
        if (nv === widget.params[p.name] && String(nv) === box.value &&
            widget.root.dataset.source === "live") return;
        box.value = nv;
        slider.setAttribute("aria-valuetext", valueText(p, nv));
        widget.set(p.name, nv);
      });
      box.addEventListener("change", function () {
        var nv = +box.value, eff = widget.offered(p);
        // checked as the page offers it: a typed value leaves a preset's pin like a drag does
        var problem = box.value === ""
          ? "'" + p.label + "' needs " + (p.type === "int" ? "an integer" : "a number") +
            " from " + eff.min + " to " + eff.max
          : checkOffered(widget, p, nv);
        if (problem) {
          // Refused before it is sent: the control returns to the setting the figure shows.
          widget.refuse(problem, p);
          return;
        }
        widget.set(p.name, nv);
      });
      row.appendChild(slider);
      row.appendChild(box);
      if (p.unit) row.appendChild(el("span", { "class": "tw-unit" }, p.unit));
      c.slider = slider;
      c.box = box;
    } else if (p.type === "bool") {
      var check = el("input", { type: "checkbox", id: id, name: p.name });
      check.checked = !!v;
      check.addEventListener("change", function () { widget.set(p.name, check.checked); });
      row.appendChild(check);
      c.input = check;
    } else if (p.type === "choice") {
      var select = el("select", { id: id, name: p.name });
      p.options.forEach(function (o, i) {
        var opt = el("option", { value: o }, optionLabel(p, i));
        if (o === v) opt.selected = true;
        select.appendChild(opt);
      });
      select.addEventListener("change", function () { widget.set(p.name, select.value); });
      row.appendChild(select);
      c.input = select;
    } else if (p.type === "text") {
      var countId = id + "-count";
      var input = el("textarea", { id: id, name: p.name, rows: 2, spellcheck: "false",
                                   "aria-describedby": countId });
      // No maxlength: a long paste is not silently cut; the count and the message say why.
      input.value = v;
      var count = el("span", { "class": "tw-count", id: countId, "aria-live": "polite" });
      input.addEventListener("input", function () {
        widget.updateCount(p);
        var problem = widget.check(p, input.value);
        if (problem) { widget.refuse(problem, p, true); return; }
        widget.set(p.name, input.value, 400);
      });
      row.appendChild(input);
      row.appendChild(count);
      c.input = input;
      c.count = count;
    }
    return c;
  }

  /* A figure that holds still under a finger: no drag-zoom or pan, fixed axes. */
  function still(layout) {
    layout.dragmode = false;
    Object.keys(layout).forEach(function (k) {
      if (/^[xy]axis\d*$/.test(k)) layout[k] = Object.assign({}, layout[k], { fixedrange: true });
    });
  }

  /* Touch screens: a swipe that starts on a slider scrolls the page and leaves the slider as it
   * was. Chromium moves the thumb to the finger at touchstart; that value is held until the
   * gesture shows what it is: sideways (a drag: it counts, and the drag follows), a tap (it
   * counts), or up and down (a scroll: the slider goes back). */
  function guardTouch(widget, form) {
    var g = null;
    function param(slider) {
      return widget.spec.params.filter(function (p) { return p.name === slider.name; })[0];
    }
    function putBack(slider) {
      var p = param(slider);
      if (p) widget.syncControl(p);
    }
    form.addEventListener("touchstart", function (ev) {
      var s = ev.target;
      g = null;
      if (!(s instanceof HTMLInputElement) || s.type !== "range" || ev.touches.length !== 1) return;
      g = { slider: s, x: ev.touches[0].clientX, y: ev.touches[0].clientY, kind: "", held: false };
    }, { capture: true, passive: true });
    form.addEventListener("touchmove", function (ev) {
      if (!g || g.kind) return;
      var dx = Math.abs(ev.touches[0].clientX - g.x), dy = Math.abs(ev.touches[0].clientY - g.y);
      if (dx < TOUCH_SLOP_PX && dy < TOUCH_SLOP_PX) return;
      g.kind = dx > dy ? "drag" : "scroll";
      if (g.kind === "scroll") {
        putBack(g.slider);
      } else if (g.held) {
        g.held = false;
        g.slider.dispatchEvent(new Event("input", { bubbles: true }));
      }
    }, { capture: true, passive: true });
    form.addEventListener("input", function (ev) {
      if (!g || ev.target !== g.slider || g.kind === "drag") return;
      ev.stopImmediatePropagation();  // the slider's own listener waits for the gesture
      if (g.kind === "scroll") putBack(g.slider);
      else g.held = true;
    }, true);
    form.addEventListener("touchend", function () {
      if (!g) return;
      var s = g.slider, kind = g.kind, held = g.held;
      g = null;
      if (kind === "scroll") putBack(s);
      else if (held) s.dispatchEvent(new Event("input", { bubbles: true }));  // a tap
    }, true);
    form.addEventListener("touchcancel", function () {
      if (g) putBack(g.slider);
      g = null;
    }, true);
  }

  // ------------------------------------------------------- the server's own spec

  /* The server's specs, asked once per page for all its widgets (`GET /api/widgets`) and shared
   * by them, reused across instant navigation for a few minutes (the server allows a browser as
   * long). Its device and configuration set some ranges and choices (a context ceiling, a
   * `local` checkpoint) that a page built elsewhere cannot know. Resolves with {name: spec}, or
   * with null when the API does not answer in SPEC_TIMEOUT_MS or answers with an error: then
   * the baked spec stands, silently (offline, a static host). Never rejects. */
  var SPEC_TIMEOUT_MS = 3000, SPEC_REUSE_MS = 300000;
  var liveSpecCache = {};
  function liveSpecs(api) {
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

  /* JSON with sorted keys: two specs are the same whatever order their fields came in. */
  function canonical(x) {
    if (Array.isArray(x)) return "[" + x.map(canonical).join(",") + "]";
    if (x && typeof x === "object") {
      return "{" + Object.keys(x).sort().map(function (k) {
        return JSON.stringify(k) + ":" + canonical(x[k]);
      }).join(",") + "}";
    }
    return JSON.stringify(x);
  }

  /* The value nearest `v` that param `p` allows on its own, `fallback` when there is no nearest
   * (a choice the server does not offer). */
  function nearestLegal(p, v, fallback) {
    if (isNum(p)) {
      if (typeof v !== "number" || !isFinite(v)) return fallback;
      var nv = Math.min(p.max, Math.max(p.min, v));
      if (p.type === "int" && p.step > 1) nv = p.min + Math.floor((nv - p.min) / p.step) * p.step;
      return nv;
    }
    return check(p, v, {}, {}) ? fallback : v;
  }

  // -------------------------------------------------------------------- widget

  var uidCounter = 0;

  function Widget(root) {
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

  /* The server's spec for this widget (see liveSpecs) in place of the baked one, or null when
   * the server did not answer. Adopted: every field of every param but its default (the page's
   * start and baked results stay as built); only a control whose range, choices or rules
   * changed is built anew, in its place. The reader's values stay where the server allows them;
   * one it does not moves to the nearest allowed value, a notice says so, and that setting is
   * computed live (otherwise the baked figure stays until the reader moves). A shared link is
   * computed now, once its values have been read against the spec that decides them: a value
   * the baked spec refused is read again against the server's. */
  Widget.prototype.adoptSpec = function (live) {
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
  function adoptParams(widget, live) {
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
   * with one allowed value (a preset's setting) shows that value. */
  Widget.prototype.applyDepends = function () {
    var self = this, moved = [];
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
    return moved;
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

  /* A change goes out at once when no request is in flight (a click, a typed value, a key
   * press, the first step of a drag). While one is in flight the newest setting waits, replacing
   * any older one that waited, and goes out the moment the answer is in: at most one request in
   * flight per widget, no fixed delay, and the last setting is always the last one sent. Text
   * waits `delay` ms after the last keystroke: nobody wants a request per keystroke. */
  Widget.prototype.set = function (name, value, delay) {
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
  Widget.prototype.flush = function () {
    if (this.dirty && !this.inflight && !this.timer) this.request();
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

  Widget.prototype.request = function () {
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
    fetch(this.api + "/widgets/" + encodeURIComponent(this.spec.name), {
      method: "POST",
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: this.inflightBody,
      signal: controller.signal
    }).then(function (resp) {
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
  Widget.prototype.settle = function (timeout) {
    clearTimeout(timeout);
    clearTimeout(this.busyTimer);
    this.root.classList.remove("tw-busy");
    this.plot.removeAttribute("aria-busy");
    this.inflight = null;
    this.flush();
  };

  /* A 400: the figure keeps the last valid setting and says so; a number control named by the
   * error goes back to the value the figure shows (text stays as typed, to be fixed). */
  Widget.prototype.serverRefused = function (body) {
    var p = null, self = this;
    this.spec.params.forEach(function (q) { if (q.name === body.param) p = q; });
    var shownParams = (this.shown && this.shown.params) || this.baked[0].params;
    if (p && p.type !== "text") {
      this.params[p.name] = shownParams[p.name];
      this.applyDepends();
    }
    this.showError(body.error + (/[.!?]$/.test(body.error) ? " " : ". ") + self.staleWords());
    this.markStale(true);
  };

  Widget.prototype.markStale = function (on) {
    this.root.classList.toggle("tw-stale", !!on);
    if (on) {
      this.status.textContent = "Not updated: " + this.staleWords().replace(/^The/, "the");
    }
  };

  /* The baked result closest to the current parameters (log distance on log sliders). A text
   * or choice setting that no baked point has gets no stand-in: null. */
  Widget.prototype.nearestBaked = function (want) {
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

  Widget.prototype.fallback = function (why, sent) {
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
    this.root.classList.add("tw-precomputed", "tw-nobaked");
    this.status.textContent = why + ", and this page has no precomputed result for " +
      missing.map(function (p) { return self.describeOne(p, want[p.name]); }).join(", ") + ". Go back to a built-in setting, or try again when the server answers.";
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

  /* This widget's setting as a link that opens the page on this widget (its URL keys only). */
  Widget.prototype.link = function () {
    var self = this, mine = new URLSearchParams();
    new URLSearchParams(window.location.search).forEach(function (v, k) {
      if (k.indexOf(self.key + ".") === 0) mine.append(k, v);
    });
    var qs = mine.toString();
    return window.location.origin + window.location.pathname + (qs ? "?" + qs : "") +
      (this.root.id ? "#" + this.root.id : "");
  };

  /* "Open as notebook": a download of this setting as a Jupyter notebook that runs the book's
   * code (`GET <api>/widgets/<name>/notebook?<params>`). Its href follows the setting: it is
   * rebuilt from `widget.params` whenever the reader may be about to follow it. */
  function notebookLink(widget) {
    var a = el("a", { "class": "tw-action tw-notebook", download: "",
                      title: "Download this setting as a Jupyter notebook that runs the book's code" },
               "Open as notebook");
    function follow() {
      var query = new URLSearchParams();
      widget.spec.params.forEach(function (p) {
        var v = widget.params[p.name];
        if (v !== undefined && v !== p.default) query.set(p.name, String(v));
      });
      var qs = query.toString();
      a.href = widget.api + "/widgets/" + encodeURIComponent(widget.spec.name) + "/notebook" +
        (qs ? "?" + qs : "");
    }
    ["pointerenter", "focus", "click"].forEach(function (type) { a.addEventListener(type, follow); });
    follow();
    return a;
  }

  Widget.prototype.copyLink = function () {
    var self = this, url = this.link(), button = this.copyButton;
    function said(text) {
      button.textContent = text;
      self.announcer.textContent = text;
      clearTimeout(self.copiedTimer);
      self.copiedTimer = setTimeout(function () {
        button.textContent = "Copy link to this setting";
      }, 2500);
    }
    function manual() {  // no clipboard (a page served over plain http): show it to copy
      self.setNotice("Copy this link: " + url);
      said("Link shown below");
    }
    if (navigator.clipboard && navigator.clipboard.writeText && window.isSecureContext) {
      navigator.clipboard.writeText(url).then(function () { said("Link copied"); }, manual);
    } else {
      manual();
    }
  };

  /* Back to the setting the book opens with: its built result at once, nothing sent, and this
   * widget's keys gone from the page's URL. An answer still in flight is dropped. */
  Widget.prototype.reset = function () {
    var start = this.baked[0];
    clearTimeout(this.timer);
    this.timer = null;
    this.dirty = false;
    this.seq++;
    var inflight = this.inflight;
    this.inflight = null;
    if (inflight) inflight.abort("reset");
    clearTimeout(this.busyTimer);
    this.root.classList.remove("tw-busy");
    this.plot.removeAttribute("aria-busy");
    this.params = Object.assign({}, start.params);
    this.applyDepends();
    this.stickyNotice = "";
    this.movedNotice = "";
    this.writeUrl(this.params);
    this.show(start, { precomputed: "built" });
    this.announcer.textContent = "Reset to the book's setting: " + this.describe(this.params) + ".";
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

  Widget.prototype.draw = function () {
    var self = this, result = this.shown;
    if (!result) return;
    var fig = result.figure;
    function plot(Plotly) {
      if (self.shown !== result) return;  // a newer result arrived meanwhile
      var t0 = performance.now();
      var layout = Object.assign({}, fig.layout);
      var narrow = self.width && self.width < NARROW_PX;
      if (narrow) {
        // A figure may carry a patch for phone screens (e.g. stack side-by-side panels).
        layout = merge(layout, fig.narrow || {});
        layout.margin = Object.assign({}, layout.margin, { l: 45, r: 5 });
      }
      // The width we know, so plotly.js need not measure the page.
      layout.autosize = false;
      if (self.plotWidth) layout.width = self.plotWidth;
      if (!layout.height) layout.height = 450;
      var t = themed(fig.data, layout);
      if (COARSE) still(t.layout);
      if (self.plot.textContent && !self.plot.classList.contains("js-plotly-plot")) {
        self.plot.textContent = "";
      }
      var t1 = performance.now();
      var done = Plotly.react(self.plot, t.data, t.layout, COARSE ? TOUCH_CONFIG : PLOT_CONFIG);
      var t2 = performance.now();
      self.mark(result, { theme: t1 - t0, react: t2 - t1, drawnAt: t2 });
      return done.then(function () {
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

  /* Where this answer's time went, as a Performance measure `tw:update` from the change to the
   * drawn figure (benchmark: tests/benchmarks/slider_latency.py). */
  Widget.prototype.mark = function (result, draw) {
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

  Widget.prototype.show = function (result, how) {
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
      // An answer from the server's cache: no compute time is claimed for it.
      this.status.textContent = "Computed live on " + result.device + " earlier; this answer " +
        "came from the server's cache (nothing recomputed); round trip " +
        Math.round(result.roundTripMs) + " ms.";
    } else {
      this.status.textContent = "Computed live on " + result.device + " in " +
        formatValue(result.elapsed_ms, ".3g") + " ms; round trip " +
        Math.round(result.roundTripMs) + " ms.";
    }
    this.root.classList.toggle("tw-precomputed", !!how.precomputed);
  };

  /* The figure's data as a real table, in a closed <details> a screen reader can open. */
  Widget.prototype.renderTable = function (table) {
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

  // ------------------------------------------------------------ page plumbing

  function mountAll() {
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
  function followServer(widget) {
    liveSpecs(widget.api).then(function (specs) {
      if (!document.body.contains(widget.root)) return;
      try {
        widget.adoptSpec((specs && specs[widget.spec.name]) || null);
      } catch (err) {
        setTimeout(function () { throw err; });
      }
    });
  }

  /* Executed notebooks' figure scripts (marked by the build hook) run once plotly.js is here. */
  function drawNotebookFigures() {
    var scripts = document.querySelectorAll('script[type="text/x-tw-plotly"]:not([data-done])');
    if (!scripts.length) return;
    whenPlotly().then(function () {
      scripts.forEach(function (s) {
        if (s.dataset.done) return;
        s.dataset.done = "1";
        try { (new Function(s.textContent))(); } catch (err) { console.error(err); }
      });
      themeNotebookFigures();
    });
  }

  /* Notebook figures (not widgets) get the same theme, and a phone layout under 560 px. */
  function themeNotebookFigures() {
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
  function watchScheme() {
    if (watching || !window.MutationObserver) return;
    watching = true;
    new MutationObserver(function () {
      bgCache = {};
      document.querySelectorAll("[data-widget]").forEach(function (root) {
        if (root.widget) root.widget.draw();
      });
      themeNotebookFigures();
    }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  }

  var CHAPTER_MATH = [{ left: "\\(", right: "\\)", display: false },
                      { left: "\\[", right: "\\]", display: true }];
  // Executed notebooks keep their markdown cells' math in TeX's dollar notation.
  var NOTEBOOK_MATH = [{ left: "$$", right: "$$", display: true },
                       { left: "$", right: "$", display: false }].concat(CHAPTER_MATH);

  function renderMath() {
    if (!window.renderMathInElement) return;
    [[".arithmatex", CHAPTER_MATH], [".jp-RenderedMarkdown", NOTEBOOK_MATH]].forEach(
      function (pair) {
        document.querySelectorAll(pair[0]).forEach(function (node) {
          if (node.dataset.rendered) return;
          node.dataset.rendered = "1";
          window.renderMathInElement(node, { delimiters: pair[1], throwOnError: false });
        });
      });
  }

  /* Instant navigation swaps <head> children and drops the <style> plotly.js injected at
   * start-up (modebar and hover layout). Keep a copy and put it back after each swap. */
  var plotlyRules = null;
  function keepPlotlyStyles() {
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

  /* SVG figures made for it (class tw-themed-svg, e.g. the loss curve) are inlined, so the
   * page's colour scheme applies to them, live switch included. An <img> cannot see it. */
  function inlineThemedSvgs() {
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

  function toHash(hash) {
    var id = decodeURIComponent((hash || "").slice(1)), target = id && document.getElementById(id);
    if (target) target.scrollIntoView({ block: "start" });
    return target;
  }

  function closeDrawers() {  // Material's phone navigation and table-of-contents drawers
    ["__drawer", "__toc"].forEach(function (id) {
      var toggle = document.getElementById(id);
      if (toggle && toggle.checked) {
        toggle.checked = false;
        toggle.dispatchEvent(new Event("change"));
      }
    });
  }

  var linksKept = false;
  function keepSamePageLinks() {
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
  function landOnWidget() {
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

  function onPage() {
    var fresh = shownPath !== window.location.pathname;
    shownPath = window.location.pathname;
    if (window.twShownPath) window.twShownPath(shownPath);
    keepSamePageLinks();
    inlineThemedSvgs();
    renderMath();
    mountAll();
    if (fresh) landOnWidget();
    drawNotebookFigures();
    keepPlotlyStyles();
    watchScheme();
  }

  window.bookWidgets = { formatValue: formatValue, mountAll: mountAll, whenPlotly: whenPlotly,
                         effective: effective, check: check, stops: stops,
                         fromSlider: fromSlider, optionLabel: optionLabel };
  if (window.document$ && window.document$.subscribe) {
    window.document$.subscribe(onPage);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onPage);
  } else {
    onPage();
  }
})();
