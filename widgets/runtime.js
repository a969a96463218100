/* The book's widget runtime: one script for every widget on every page.
 *
 * Each `<div data-widget>` carries its spec and results baked at build time (see hook.py).
 * The runtime builds the controls from the spec, draws the baked result for the start values
 * at once, and on every change asks the API to recompute (debounced; a newer change cancels
 * the older request). If the API cannot be reached it draws the nearest baked result under a
 * "precomputed" label, so the page keeps working from a static host or a train tunnel.
 * Mounting happens from Material's `document$`, so it survives instant navigation.
 */
(function () {
  "use strict";

  var DEBOUNCE_MS = 90;
  var NARROW_PX = 560;
  var REQUEST_TIMEOUT_MS = 15000;
  var PLOT_CONFIG = { responsive: true, displaylogo: false,
                      modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"] };

  // ---------------------------------------------------------------- formatting

  /* A subset of Python's format spec, enough for the specs' `fmt` fields. */
  function formatValue(value, fmt) {
    if (typeof value !== "number") return String(value);
    if (!isFinite(value)) return String(value);
    var m = /^(,)?(?:\.(\d+))?([fgde%])?$/.exec(fmt || "");
    if (!m) return String(value);
    var comma = !!m[1], prec = m[2] === undefined ? null : +m[2], kind = m[3] || "g";
    var text;
    if (kind === "f") text = value.toFixed(prec === null ? 6 : prec);
    else if (kind === "%") text = (value * 100).toFixed(prec === null ? 6 : prec) + "%";
    else if (kind === "e") text = value.toExponential(prec === null ? 6 : prec);
    else if (kind === "d") text = Math.round(value).toString();
    else {
      var p = prec === null ? 6 : Math.max(1, prec);
      text = Number(value.toPrecision(p)).toString();
      if (Math.abs(value) >= Math.pow(10, p) || (value !== 0 && Math.abs(value) < 1e-4)) {
        text = value.toExponential(p - 1).replace(/\.?0+e/, "e");
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

  // ------------------------------------------------------------------ controls

  function isLog(p) { return p.scale === "log2" && p.min > 0; }

  /* Slider position <-> parameter value. Log-scaled sliders stop at powers of two; the number
   * box beside every slider takes any allowed value. */
  function toSlider(p, v) { return isLog(p) ? Math.log2(v) : v; }
  function fromSlider(p, s) {
    var v = isLog(p) ? Math.pow(2, s) : s;
    if (p.type === "int") v = Math.round(v);
    return Math.min(p.max, Math.max(p.min, v));
  }

  function buildControl(widget, p) {
    var id = "tw-" + widget.uid + "-" + p.name;
    var row = el("div", { "class": "tw-control tw-" + p.type });
    var label = el("label", { "for": id }, p.label);
    if (p.help) label.title = p.help;
    row.appendChild(label);
    var v = widget.params[p.name];

    if (p.type === "int" || p.type === "float") {
      var slider = el("input", { type: "range", id: id, name: p.name,
        min: toSlider(p, p.min), max: toSlider(p, p.max),
        step: isLog(p) ? 1 : (p.step || "any"), value: toSlider(p, v) });
      slider.setAttribute("aria-label", p.label);
      var box = el("input", { type: "number", name: p.name + "-value", min: p.min, max: p.max,
        step: p.step || "any", value: v, inputmode: p.type === "int" ? "numeric" : "decimal" });
      box.setAttribute("aria-label", p.label + " (exact value)");
      slider.addEventListener("input", function () {
        var nv = fromSlider(p, +slider.value);
        box.value = nv;
        widget.set(p.name, nv);
      });
      box.addEventListener("change", function () {
        if (box.value === "") return;
        var nv = +box.value;
        // Out-of-range or fractional values go to the API as typed: its message says why.
        if (nv >= p.min && nv <= p.max) slider.value = toSlider(p, nv);
        widget.set(p.name, nv);
      });
      row.appendChild(slider);
      row.appendChild(box);
      if (p.unit) row.appendChild(el("span", { "class": "tw-unit" }, p.unit));
    } else if (p.type === "bool") {
      var check = el("input", { type: "checkbox", id: id, name: p.name });
      check.checked = !!v;
      check.addEventListener("change", function () { widget.set(p.name, check.checked); });
      row.appendChild(check);
    } else if (p.type === "choice") {
      var select = el("select", { id: id, name: p.name });
      p.options.forEach(function (o) {
        var opt = el("option", { value: o }, o);
        if (o === v) opt.selected = true;
        select.appendChild(opt);
      });
      select.addEventListener("change", function () { widget.set(p.name, select.value); });
      row.appendChild(select);
    } else if (p.type === "text") {
      var input = el("textarea", { id: id, name: p.name, rows: 2, maxlength: p.max_length,
                                   spellcheck: "false" });
      input.value = v;
      input.addEventListener("input", function () { widget.set(p.name, input.value, 400); });
      row.appendChild(input);
    }
    return row;
  }

  // -------------------------------------------------------------------- widget

  var uidCounter = 0;

  function Widget(root) {
    var config = JSON.parse(root.querySelector("script.tw-config").textContent);
    this.root = root;
    this.uid = ++uidCounter;
    this.spec = config.spec;
    this.api = (config.api || "/api").replace(/\/$/, "");
    this.baked = config.baked;
    this.params = Object.assign({}, config.start);
    this.timer = null;
    this.inflight = null;
    this.seq = 0;
    var fromUrl = this.readUrl();
    this.build();
    this.show(this.baked[0], { precomputed: "built" });
    if (fromUrl) this.request();  // a shared link: compute the setting it names
  }

  /* Settings are mirrored into the page's query string (`?attention_scaling.d_k=256`), so a
   * reader or an instructor can share exactly what they are looking at. */
  Widget.prototype.readUrl = function () {
    var self = this, query = new URLSearchParams(window.location.search), found = false;
    this.spec.params.forEach(function (p) {
      var raw = query.get(self.spec.name + "." + p.name);
      if (raw === null) return;
      found = true;
      if (p.type === "int" || p.type === "float") self.params[p.name] = raw === "" ? raw : +raw;
      else if (p.type === "bool") self.params[p.name] = raw === "true" || raw === "1";
      else self.params[p.name] = raw;
    });
    return found;
  };

  Widget.prototype.writeUrl = function () {
    var self = this, query = new URLSearchParams(window.location.search);
    this.spec.params.forEach(function (p) {
      var key = self.spec.name + "." + p.name, v = self.params[p.name];
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
    this.spec.params.forEach(function (p) { form.appendChild(buildControl(self, p)); });
    this.plot = el("div", { "class": "tw-plot" });
    this.valuesBox = el("dl", { "class": "tw-values" });
    this.status = el("p", { "class": "tw-status", "aria-live": "polite" });
    this.error = el("p", { "class": "tw-error", role: "alert" });
    this.error.hidden = true;
    var title = el("p", { "class": "tw-title" }, this.spec.title);
    this.root.appendChild(title);
    this.root.appendChild(form);
    this.root.appendChild(this.error);
    this.root.appendChild(this.plot);
    this.root.appendChild(this.valuesBox);
    this.root.appendChild(this.status);
  };

  /* A change is sent at once when the line is quiet (a click, a key press, the first step of
   * a drag); changes arriving while a request is in flight or just sent are coalesced and the
   * latest goes out after DEBOUNCE_MS. Text is always debounced: nobody wants a request per
   * keystroke. */
  Widget.prototype.set = function (name, value, delay) {
    this.params[name] = value;
    this.writeUrl();
    var self = this;
    clearTimeout(this.timer);
    var quiet = !this.inflight && performance.now() - (this.lastSent || 0) > DEBOUNCE_MS;
    if (quiet && !delay) {
      this.request();
    } else {
      this.timer = setTimeout(function () { self.request(); }, delay || DEBOUNCE_MS);
    }
  };

  Widget.prototype.request = function () {
    var self = this;
    if (this.inflight) this.inflight.abort();  // a newer value supersedes the older request
    var controller = new AbortController();
    this.inflight = controller;
    var seq = ++this.seq;
    var started = performance.now();
    this.lastSent = started;
    var timeout = setTimeout(function () { controller.abort("timeout"); }, REQUEST_TIMEOUT_MS);
    this.root.classList.add("tw-busy");
    fetch(this.api + "/widgets/" + encodeURIComponent(this.spec.name), {
      method: "POST",
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: JSON.stringify(this.params),
      signal: controller.signal
    }).then(function (resp) {
      return resp.json().then(
        function (body) { return { resp: resp, body: body }; },
        function () { return { resp: resp, body: null }; });
    }).then(function (r) {
      if (seq !== self.seq) return;
      if (r.resp.ok && r.body && r.body.figure) {
        r.body.roundTripMs = performance.now() - started;
        self.show(r.body, {});
      } else if (r.body && r.body.error && r.resp.status < 500) {
        self.showError(r.body.error);               // the reader's input: say what to fix
      } else {
        self.fallback(r.body && r.body.error ? r.body.error : "HTTP " + r.resp.status);
      }
    }).catch(function (err) {
      if (seq !== self.seq) return;                 // cancelled by a newer request
      self.fallback(controller.signal.aborted ? "no answer in time" : "the server is unreachable");
    }).finally(function () {
      clearTimeout(timeout);
      if (seq === self.seq) {
        self.root.classList.remove("tw-busy");
        self.inflight = null;
      }
    });
  };

  /* The baked result closest to the current parameters (log distance on log sliders). */
  Widget.prototype.nearestBaked = function () {
    var self = this, best = null, bestD = Infinity;
    this.baked.forEach(function (b) {
      var d = 0;
      self.spec.params.forEach(function (p) {
        var want = self.params[p.name], have = b.params[p.name];
        if (p.type === "int" || p.type === "float") {
          var span = isLog(p) ? Math.log2(p.max / p.min) : (p.max - p.min) || 1;
          var diff = isLog(p) ? Math.log2(Math.max(want, p.min) / have) : (want - have);
          d += Math.pow(diff / span, 2);
        } else if (want !== have) {
          d += 1;
        }
      });
      if (d < bestD) { bestD = d; best = b; }
    });
    return best;
  };

  Widget.prototype.fallback = function (why) {
    this.show(this.nearestBaked(), { precomputed: "offline", why: why });
  };

  Widget.prototype.showError = function (message) {
    this.error.textContent = message;
    this.error.hidden = false;
    this.root.classList.add("tw-has-error");
  };

  Widget.prototype.show = function (result, how) {
    var self = this;
    this.error.hidden = true;
    this.root.classList.remove("tw-has-error");
    var fig = result.figure;
    var layout = Object.assign({ autosize: true }, fig.layout);
    if (this.root.clientWidth && this.root.clientWidth < NARROW_PX) {
      // A figure may carry a patch for phone screens (e.g. stack side-by-side panels).
      layout = merge(layout, fig.narrow || {});
      layout.margin = Object.assign({}, layout.margin, { l: 45, r: 5 });
    }
    if (window.Plotly) {
      window.Plotly.react(this.plot, fig.data, layout, PLOT_CONFIG);
    } else {
      this.plot.textContent = "The plotting library did not load.";
    }
    this.valuesBox.textContent = "";
    (this.spec.outputs || []).forEach(function (o) {
      if (!(o.name in result.values)) return;
      var row = el("div", { "class": "tw-value", "data-name": o.name });
      row.appendChild(el("dt", {}, o.label));
      row.appendChild(el("dd", {}, formatValue(result.values[o.name], o.fmt) +
                                      (o.unit ? " " + o.unit : "")));
      self.valuesBox.appendChild(row);
    });
    this.root.dataset.source = how.precomputed ? "precomputed" : "live";
    if (how.precomputed === "built") {
      this.status.textContent = "computed when the book was built. Move a control to " +
        "recompute it live.";
    } else if (how.precomputed === "offline") {
      var at = this.spec.params.filter(function (p) { return p.type !== "text"; })
        .map(function (p) { return p.name + " = " + result.params[p.name]; }).join(", ");
      this.status.textContent = how.why + ", so this is the nearest result baked " +
        "into the page: " + at + ".";
    } else {
      this.status.textContent = "Computed live on " + result.device + " in " +
        formatValue(result.elapsed_ms, ".3g") + " ms" + (result.cached ? " (cached)" : "") +
        "; round trip " + Math.round(result.roundTripMs) + " ms.";
    }
    this.root.classList.toggle("tw-precomputed", !!how.precomputed);
  };

  // ------------------------------------------------------------ page plumbing

  function mountAll() {
    document.querySelectorAll("[data-widget]").forEach(function (root) {
      if (root.dataset.mounted) return;
      root.dataset.mounted = "1";
      try {
        root.widget = new Widget(root);
      } catch (err) {
        root.appendChild(el("p", { "class": "tw-error" }, "This widget failed to start: " + err));
        throw err;
      }
    });
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

  function onPage() {
    renderMath();
    mountAll();
    keepPlotlyStyles();
  }

  window.bookWidgets = { formatValue: formatValue, mountAll: mountAll };
  if (window.document$ && window.document$.subscribe) {
    window.document$.subscribe(onPage);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onPage);
  } else {
    onPage();
  }
})();
