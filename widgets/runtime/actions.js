/* The buttons in a widget's head: "Copy link to this setting" and "Reset" (Widget methods). */

import { el } from "./dom.js";

export var methods = {};

/* "Open as notebook": a download of this setting as a Jupyter notebook that runs the book's
 * code (`GET <api>/widgets/<name>/notebook?<params>`). Its href follows the setting: it is
 * rebuilt from `widget.params` whenever the reader may be about to follow it. */
export function notebookLink(widget) {
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
  a.addEventListener("click", function (e) {
    if (a.getAttribute("aria-disabled") !== "true") return;
    e.preventDefault();  // the server makes the notebook: say so rather than fail the download
    widget.setNotice("\u201cOpen as notebook\u201d needs the book's server, which makes the " +
                     "notebook from its code: " + widget.offlineWhy + ". Try again when it " +
                     "answers (a live figure shows it does).");
  });
  follow();
  return a;
}

/* Whether the server that makes notebooks answers: the link says so, and stays focusable. */
methods.serverAnswers = function (ok, why) {
  var a = this.root.querySelector("a.tw-notebook");
  if (!a) return;
  this.offlineWhy = why || "";
  a.setAttribute("aria-disabled", ok ? "false" : "true");
  a.classList.toggle("tw-off", !ok);
  a.title = ok ? "Download this setting as a Jupyter notebook that runs the book's code"
               : "Needs the book's server (" + why + ")";
};

/* This widget's setting as a link that opens the page on this widget (its URL keys only). */
methods.link = function () {
  var self = this, mine = new URLSearchParams();
  new URLSearchParams(window.location.search).forEach(function (v, k) {
    if (k.indexOf(self.key + ".") === 0) mine.append(k, v);
  });
  var qs = mine.toString();
  return window.location.origin + window.location.pathname + (qs ? "?" + qs : "") +
    (this.root.id ? "#" + this.root.id : "");
};

methods.copyLink = function () {
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
methods.reset = function () {
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
