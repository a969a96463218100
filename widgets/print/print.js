/* The print edition (/print/, built by widgets/build/print_edition.py): every figure drawn once,
 * static, from the JSON the build put beside it, in the light theme; the math typeset. When all
 * of it is done, <html data-tw-print="ready"> (widgets/build/print_pdf.py waits for it), or "failed"
 * with the reason in data-tw-print-error. No controls, no API calls: the widgets' own runtime
 * (widgets/runtime/) is not loaded here. */
(function () {
  "use strict";
  var WIDTH = 660;  // px: the text column of an A4 page with the print margins (print.css)
  var theme = JSON.parse(document.getElementById("tw-theme").textContent);
  var light = theme.themes.light;

  /* Light text, grid and axis colours where the figure names none (as the runtime's theme.js themes a
   * figure for a light page), white paper, and the weight scale with a white zero end. */
  function themed(fig, height) {
    var font = { color: light.font };
    var layout = Object.assign({}, fig.layout, { width: WIDTH, autosize: false,
                                                 paper_bgcolor: "#ffffff", plot_bgcolor: "#ffffff" });
    layout.height = layout.height || height || 450;
    layout.font = Object.assign({}, font, layout.font);
    Object.keys(layout).forEach(function (k) {
      if (/^[xy]axis\d*$/.test(k)) {
        layout[k] = Object.assign({ gridcolor: light.grid, zerolinecolor: light.zeroline,
                                    linecolor: light.line }, layout[k]);
      }
    });
    var scale = (theme.weight_scales.light || []).map(function (s) {
      return [s[0], s[1] === "bg" ? "#ffffff" : s[1]];
    });
    var data = (fig.data || []).map(function (trace) {
      var t = Object.assign({}, trace);
      if (t.colorscale === theme.weight_scale && scale.length) {
        t.colorscale = scale;
        t.reversescale = false;
      }
      return t;
    });
    return { data: data, layout: layout };
  }

  function drawAll() {
    var jobs = Array.prototype.map.call(document.querySelectorAll(".tw-print-plot"), function (box) {
      var source = box.nextElementSibling;
      if (!source || !source.classList.contains("tw-print-data")) {
        return Promise.reject(new Error("a figure without its data"));
      }
      // A notebook figure's height is its wrapper's (plotly's to_html sets it there).
      var fig = themed(JSON.parse(source.textContent), parseFloat(box.parentElement.style.height));
      return window.Plotly.newPlot(box, fig.data, fig.layout,
                                   { staticPlot: true, displayModeBar: false, responsive: false });
    });
    return Promise.all(jobs);
  }

  /* The chapters' math is set at build time (widgets/build/typeset.py); the exercises'
   * markdown keeps its TeX. */
  function typesetMath() {
    var notebook = [{ left: "$$", right: "$$", display: true },
                    { left: "$", right: "$", display: false },
                    { left: "\\(", right: "\\)", display: false },
                    { left: "\\[", right: "\\]", display: true }];
    document.querySelectorAll(".jp-RenderedMarkdown").forEach(function (node) {
      window.renderMathInElement(node, { delimiters: notebook, throwOnError: false });
    });
  }

  /* Each line of a code block in a block of its own, indented by its own leading spaces plus
   * four for the rest of it when it wraps (print.css `.tw-line`): a wrapped Python line keeps
   * its indentation instead of going on at column 0. Highlighting spans are flat (Pygments),
   * so each is cut at its newlines. */
  function hangLines() {
    document.querySelectorAll(".md-typeset pre > code, .jp-InputArea pre").forEach(function (code) {
      var lines = [[]];
      Array.prototype.slice.call(code.childNodes).forEach(function (node) {
        node.textContent.split("\n").forEach(function (part, i) {
          if (i > 0) lines.push([]);
          if (!part) return;
          var piece = node.nodeType === 1 ? node.cloneNode(false) : document.createTextNode("");
          piece.textContent = part;
          lines[lines.length - 1].push(piece);
        });
      });
      if (lines.length > 1 && !lines[lines.length - 1].length) lines.pop();  // the final newline
      code.textContent = "";
      lines.forEach(function (parts) {
        var line = document.createElement("span");
        line.className = "tw-line";
        parts.forEach(function (p) { line.appendChild(p); });
        var text = line.textContent.replace(/\t/g, "    ");
        var indent = text.length - text.replace(/^ +/, "").length;
        line.style.setProperty("--tw-hang", (indent + 4) + "ch");
        code.appendChild(line);
      });
    });
  }

  function start() {
    var root = document.documentElement;
    try {
      hangLines();
    } catch (err) {
      root.setAttribute("data-tw-print-error", "code: " + err);
    }
    try {
      typesetMath();
    } catch (err) {
      root.setAttribute("data-tw-print-error", "math: " + err);
    }
    drawAll().then(function () {
      root.setAttribute("data-tw-print", root.hasAttribute("data-tw-print-error") ? "failed" : "ready");
    }, function (err) {
      root.setAttribute("data-tw-print-error", String(err));
      root.setAttribute("data-tw-print", "failed");
    });
  }

  // Deferred scripts run in order after the document is parsed: plotly.js and KaTeX are here.
  if (window.Plotly && window.renderMathInElement) {
    start();
  } else {
    document.documentElement.setAttribute("data-tw-print-error", "plotly.js or KaTeX did not load");
    document.documentElement.setAttribute("data-tw-print", "failed");
  }
})();
