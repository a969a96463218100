/* The page's questions: an answer box on each `section.tw-q` the build wrote
 * (widgets/build/questions.py), the reader's progress in the nav and on the home page. Run on
 * every page Material shows (its `document$`), so also after instant navigation. Nothing here
 * needs the server: the expected answers are in the page, the progress in this browser. */

import { el as leaf } from "./dom.js";
import { checkAnswer, isRight, lastTyped, loadProgress, parseAnswer, record, saveProgress,
         STORE_KEY, tally } from "./questions.js";

/* An element with children (nodes or text). */
function el(tag, attrs) {
  var node = leaf(tag, attrs);
  for (var i = 2; i < arguments.length; i++) {
    var child = arguments[i];
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

function storage() {
  try { return window.localStorage; } catch (err) { return null; }
}

function manifest() {
  var node = document.getElementById("tw-questions");
  try { return node ? JSON.parse(node.textContent) : { chapters: [] }; } catch (err) { return { chapters: [] }; }
}

/* Site-relative URLs ("chapters/kv-cache/") against the site's root, which Material keeps as an
 * absolute URL across instant navigation. */
function siteURL(path) {
  var scope = window.__md_scope;
  if (!scope) {
    var config = document.getElementById("__config");
    var base = config ? JSON.parse(config.textContent).base : ".";
    scope = new URL(base.replace(/\/?$/, "/"), location.href);
  }
  return new URL(path, scope);
}

function same(a, b) {
  return a.pathname.replace(/index\.html$/, "") === b.pathname.replace(/index\.html$/, "");
}

/* ------------------------------------------------------------------------ one question */

function mountQuestion(section) {
  var q;
  try { q = JSON.parse(section.dataset.question); } catch (err) { return; }
  if (q.expected === undefined) return;  // an exam edition: the question alone
  var anchor = section.id, hint = section.querySelector(".tw-q-hint"),
      worked = section.querySelector(".tw-q-worked"), state = section.querySelector(".tw-q-state");
  if (hint) hint.hidden = true;  // after a wrong try (shown at once without JavaScript)
  var result = el("p", { "class": "tw-q-result", id: anchor + "-result", role: "status",
                         "aria-live": "polite" });
  var form = el("form", { "class": "tw-q-form", novalidate: "" });
  var read;
  if (q.kind === "choice") {
    var list = section.querySelector(".tw-q-choices");
    var fieldset = el("fieldset", { "class": "tw-q-options" },
                      el("legend", { "class": "tw-q-legend" }, "Your answer"));
    (list ? list.querySelectorAll("li") : []).forEach(function (li, i) {
      var code = li.querySelector("code"), key = code ? code.textContent : String(i);
      if (code) code.remove();
      var input = el("input", { type: "radio", name: anchor + "-choice", value: key });
      var label = el("label", { "class": "tw-q-option" }, input);
      label.insertAdjacentHTML("beforeend", " " + li.innerHTML.trim());
      fieldset.appendChild(label);
    });
    if (list) list.remove();
    form.appendChild(fieldset);
    read = function () {
      var picked = form.querySelector("input[type=radio]:checked");
      return { value: picked ? picked.value : null, typed: picked ? picked.value : null };
    };
  } else {
    var input = el("input", { type: "text", id: anchor + "-answer", inputmode: "decimal",
                              autocomplete: "off", spellcheck: "false",
                              "aria-describedby": anchor + "-result" });
    form.appendChild(el("label", { "for": anchor + "-answer" }, "Your answer"));
    var box = el("span", { "class": "tw-q-box" }, input);
    if (q.unit) box.appendChild(el("span", { "class": "tw-q-unit" }, q.unit));
    form.appendChild(box);
    read = function () { return Object.assign(parseAnswer(input.value, q.unit), { typed: input.value }); };
  }
  form.appendChild(el("button", { type: "submit", "class": "md-button tw-q-check" }, "Check"));
  var ask = section.querySelector(".tw-q-ask");
  (ask || section.firstChild).after(form);
  form.after(result);

  /* `now`: the verdict of the try on screen, if any: a wrong try after a right one must not sit
     under a badge that says "answered right" without saying when. */
  function showState(now) {
    var right = isRight(loadProgress(storage()), q.id, q.v);
    section.classList.toggle("tw-q-right", right);
    state.textContent = !right ? "" : now === false ? "answered right earlier" : "answered right";
  }
  showState();
  // the reader's last answer, as typed, back in its box after a reload
  var before = lastTyped(loadProgress(storage()), q.id, q.v);
  if (before !== null) {
    var answered = q.kind === "choice"
      ? form.querySelector('input[type=radio][value="' + CSS.escape(before) + '"]')
      : form.querySelector("input[type=text]");
    if (answered && q.kind === "choice") answered.checked = true;
    else if (answered) answered.value = before;
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var parsed = read();
    var field = form.querySelector("input[type=text]");
    if (parsed.error) {
      if (field) field.setAttribute("aria-invalid", "true");
      result.className = "tw-q-result tw-q-refused";
      result.textContent = parsed.error;
      return;
    }
    if (field) field.removeAttribute("aria-invalid");
    var verdict = checkAnswer(q, parsed.value);
    if (parsed.value == null) {
      result.className = "tw-q-result tw-q-refused";
      result.textContent = verdict.message;
      return;
    }
    result.className = "tw-q-result " + (verdict.ok ? "tw-q-ok" : "tw-q-wrong");
    result.textContent = verdict.message;
    if (hint && verdict.hint) hint.hidden = false;
    if (worked && verdict.ok) worked.open = true;
    var store = storage();
    saveProgress(store, record(loadProgress(store), q.id, q.v, verdict.ok, parsed.typed));
    showState(verdict.ok);
    markNav();
    drawProgress();
  });
}

/* ------------------------------------------------------------------------- progress */

/* A mark after each chapter's nav link: "2/3", and a tick when every question is right. */
export function markNav() {
  var counts = tally(manifest(), loadProgress(storage()));
  document.querySelectorAll(".tw-nav-q").forEach(function (m) { m.remove(); });
  if (!counts.length) return;
  // the chapters' own links in the site's navigation, not the table of contents' section links
  document.querySelectorAll(".md-nav--primary a.md-nav__link[href]").forEach(function (a) {
    var href = new URL(a.href, location.href);
    if (href.hash) return;
    var c = counts.find(function (c) { return same(siteURL(c.url), href); });
    if (!c || !c.right) return;
    var done = c.right === c.total;
    a.appendChild(el("span", { "class": "tw-nav-q" + (done ? " tw-nav-q-done" : ""),
                               title: c.right + " of " + c.total + " questions answered right" },
                     el("span", { "aria-hidden": "true" }, done ? "\u2713" : c.right + "/" + c.total),
                     el("span", { "class": "tw-sr" },
                        ", " + c.right + " of " + c.total + " questions answered right")));
  });
}

/* The home page's view (`{{ progress_view() }}`): per chapter, questions answered right, and a
 * control that forgets them. */
export function drawProgress() {
  document.querySelectorAll("[data-progress]").forEach(function (root) {
    var counts = tally(manifest(), loadProgress(storage()));
    var right = counts.reduce(function (s, c) { return s + c.right; }, 0);
    var total = counts.reduce(function (s, c) { return s + c.total; }, 0);
    root.textContent = "";
    if (!total) return;
    root.appendChild(el("p", {}, "You have answered " + right + " of the book's " + total +
      " checked questions right."));
    var body = el("tbody");
    counts.forEach(function (c) {
      var link = el("a", { href: siteURL(c.url).href }, c.title);
      var meter = el("meter", { min: "0", max: String(c.total), value: String(c.right),
                                "aria-label": c.title + ": " + c.right + " of " + c.total });
      body.appendChild(el("tr", {}, el("td", {}, link), el("td", {}, c.right + " of " + c.total),
                          el("td", {}, meter)));
    });
    root.appendChild(el("table", {},
      el("thead", {}, el("tr", {}, el("th", {}, "Chapter"), el("th", {}, "Right"),
                         el("th", {}, el("span", { "class": "tw-sr" }, "Progress")))), body));
    var reset = el("button", { type: "button", "class": "md-button" }, "Reset my progress");
    reset.addEventListener("click", function () {
      if (!window.confirm("Forget every answer you have checked in this browser?")) return;
      try { storage().removeItem(STORE_KEY); } catch (err) { /* nothing kept */ }
      document.querySelectorAll("section.tw-q").forEach(function (s) {
        s.classList.remove("tw-q-right");
        var st = s.querySelector(".tw-q-state");
        if (st) st.textContent = "";
      });
      markNav();
      drawProgress();
    });
    if (right) root.appendChild(reset);
  });
}

export function onQuizPage() {
  document.querySelectorAll("section.tw-q[data-question]").forEach(function (section) {
    if (section.dataset.mounted) return;
    section.dataset.mounted = "1";
    try {
      mountQuestion(section);
    } catch (err) {
      setTimeout(function () { throw err; });
    }
  });
  markNav();
  drawProgress();
}

/* Another tab answered: follow it. */
window.addEventListener("storage", function (ev) {
  if (ev.key !== STORE_KEY && ev.key !== null) return;
  markNav();
  drawProgress();
});
