/* One control per param (slider and number box, checkbox, select, text field), and the touch
 * guard that lets a swipe over a slider scroll the page. */

import { el } from "./dom.js";
import { formatValue, unitAfter } from "./format.js";
import { bound, check, fromSlider, isNum, optionLabel, released, sliderRange,
         toSlider } from "./spec.js";

var TOUCH_SLOP_PX = 8;        // a finger moving less than this is a tap

/* `check` as the page offers p: a value typed under a preset's pin leaves the pin (buildControl
 * has a local `check`, the checkbox, so it calls this). */
export function checkOffered(widget, p, v) {
  return check(p, v, released(p, widget.params), widget.labels);
}

/* What a screen reader says for a slider's value: whole floats in full (θ = 20,000, not
 * 2e+4), others to four digits. */
export function valueText(p, v) {
  var fmt = p.type === "int" ? "d" : (Math.round(v) === v && Math.abs(v) < 1e15 ? ",d" : ".4g");
  var text = formatValue(v, fmt);
  return text + unitAfter(text, p.unit);
}

export function buildControl(widget, p) {
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
          " from " + bound(eff.min) + " to " + bound(eff.max)
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
export function still(layout) {
  layout.dragmode = false;
  Object.keys(layout).forEach(function (k) {
    if (/^[xy]axis\d*$/.test(k)) layout[k] = Object.assign({}, layout[k], { fixedrange: true });
  });
}

/* Touch screens: a swipe that starts on a slider scrolls the page and leaves the slider as it
 * was. Chromium moves the thumb to the finger at touchstart; that value is held until the
 * gesture shows what it is: sideways (a drag: it counts, and the drag follows), a tap (it
 * counts), or up and down (a scroll: the slider goes back). */
export function guardTouch(widget, form) {
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
