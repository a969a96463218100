/* A widget: its controls, its setting (the params), what it shows (the result, its notices and
 * status) and its URL keys. The parts it is made of each own their own state: the requests
 * (scheduler.js, a Scheduler it is the host of), the figure (render.js, a Figure) and the head's
 * buttons (actions.js, Actions); the link it was opened with (url-state.js), the server's spec
 * (live-spec.js) and the baked stand-ins (baked.js) are pure functions it calls. */

import { Actions, notebookRequest } from "./actions.js";
import { answeredBy, fetchResult } from "./api.js";
import { nearestBaked, unbaked } from "./baked.js";
import { buildControl, guardTouch, valueText } from "./controls.js";
import { dataBlocks, el } from "./dom.js";
import { intoRange, mergeSpec } from "./live-spec.js";
import { COARSE } from "./plotly.js";
import { BUILT_HINT, Figure, renderPending, renderTable, renderValues,
         statusText } from "./render.js";
import { Scheduler, outcome } from "./scheduler.js";
import { canonical, check, effective, isNum, nearest, optionLabel, plain, released,
         sliderRange, stops, toSlider } from "./spec.js";
import { readSetting, settingLink, writeSetting } from "./url-state.js";

const ANNOUNCE_AFTER_MS = 700;  // a screen reader hears the result once the reader pauses
const BUSY_AFTER_MS = 250;  // only an answer slower than this dims the figure (no flicker in drags)

let uidCounter = 0;

export class Widget {
  #announceTimer = null;
  #busyTimer = null;
  #slow = false;          // marked busy: a slow answer is awaited (markBusy)
  #computing = "";        // ... the status it put up
  #statusBefore = [];     // ... the status it replaced (its nodes)
  #describedBy = [];      // the inputs the shown refusal describes (showError)

  constructor(root) {
    const block = dataBlocks(root, "script.tw-config")[0];
    if (!block) throw new Error("the widget's data block is missing");
    const config = JSON.parse(block.textContent);
    this.root = root;
    this.uid = ++uidCounter;
    this.spec = config.spec;
    this.key = config.key || this.spec.name;   // this instance's prefix in the page URL
    this.api = (config.api || "/api").replace(/\/$/, "");
    this.baked = config.baked;
    this.params = { ...config.start };
    this.labels = {};
    for (const p of this.spec.params) this.labels[p.name] = p.label;
    this.shown = null;      // the result whose figure and values are on the page
    this.stickyNotice = ""; // about the link the page was opened with, until the reader acts
    this.movedNotice = "";  // a control that moved because another one changed its range
    this.scheduler = new Scheduler({
      setting: () => this.params,
      send: (setting, signal) => fetchResult(this.api, this.spec, setting, signal),
      sending: (setting) => this.#sending(setting),
      settled: () => this.#settled(),
      answered: (answer, how) => this.#answered(answer, how),
      // Unreachable or too slow: the nearest baked result for the newest setting.
      failed: (why) => this.fallback(why, { ...this.params }),
    });
    const fromUrl = this.#readUrl();
    this.#build();
    // The build's pictures of the opening figure (snapshots.py), shown until plotly.js draws.
    this.figure.adoptSnapshot(root.querySelector(":scope > .tw-snapbox"), this.baked[0]);
    this.figure.watchWidth();
    this.applyDepends();
    // A shared link's setting: never the book's default under the link's controls.
    if (fromUrl) this.#showOwn();
    else this.show(this.baked[0], { precomputed: "built" });
    this.linked = fromUrl;  // a shared link: computed once the server's spec is in (adoptSpec)
  }

  /* The setting on the controls, which the figure does not show (a shared link's, or one the
   * server's limits moved): its own baked result if the page has one, else a placeholder
   * until its answer is in. */
  #showOwn() {
    const own = this.baked.find((b) => canonical(b.params) === canonical(this.params));
    if (own) this.show(own, { precomputed: "built" });
    else this.#pending();
  }

  /* Nothing to show yet for the setting on the controls (no baked result for it): a
   * placeholder as tall as the figure will be, the values' labels with no numbers,
   * and words that say which setting is on its way. show() or fallback() ends it. */
  #pending() {
    const setting = this.describe(this.params);
    this.shown = null;
    this.figure.placeholder(`Computing the figure for ${setting}\u2026`, this.baked[0]);
    renderPending(this.valuesBox, this.spec.outputs);
    this.table.hidden = true;
    this.summary.textContent = `Computing ${setting}.`;
    this.root.dataset.source = "pending";
    this.root.classList.remove("tw-built", "tw-precomputed");
    this.root.classList.add("tw-pending");
    this.status.textContent = `Computing ${setting}\u2026`;
    this.updateChip();
  }

  effective(p) { return effective(p, this.params, this.labels); }
  check(p, v) { return check(p, v, this.params, this.labels); }

  /* This widget's values in the link the page was opened with (url-state.js): the valid ones
   * taken, the others named in a notice. Whether the link set any. */
  #readUrl() {
    const { params, found, ignored } = readSetting(this.spec, this.key, window.location.search,
                                                   this.params, this.labels,
                                                   this.baked[0].params);
    this.params = params;
    if (ignored.length) {
      this.stickyNotice = `This link's setting was ignored: ${ignored.join("; ")}.`;
    }
    return found;
  }

  #writeUrl(params) {
    const qs = writeSetting(this.spec, this.key, window.location.search, params,
                            this.baked[0].params);
    window.history.replaceState(window.history.state, "", window.location.pathname +
                                (qs ? `?${qs}` : "") + window.location.hash);
  }

  #build() {
    const form = el("form", { "class": "tw-controls" });
    this.form = form;
    form.addEventListener("submit", (e) => e.preventDefault());
    this.controls = {};
    for (const p of this.spec.params) {
      const c = buildControl(this, p);
      this.controls[p.name] = c;
      form.appendChild(c.row);
    }
    const titleId = `tw-${this.uid}-title`, summaryId = `tw-${this.uid}-summary`;
    const plot = el("div", { "class": "tw-plot", role: "figure", "aria-labelledby": titleId,
                             "aria-describedby": summaryId });
    this.plot = plot;
    this.figure = new Figure(plot, this.root, { who: { widget: this.spec.name, key: this.key },
                                                onClick: (ev) => this.#clicked(ev) });
    this.summary = el("p", { "class": "tw-summary tw-sr", id: summaryId });
    this.valuesBox = el("dl", { "class": "tw-values" });
    this.table = el("details", { "class": "tw-table" });
    this.table.hidden = true;
    // The status (where the answer came from, timings) is not announced; the result's summary
    // is, a moment after the reader stops moving (announce).
    this.status = el("p", { "class": "tw-status" });
    this.announcer = el("p", { "class": "tw-sr", "aria-live": "polite" });
    this.error = el("p", { "class": "tw-error", role: "alert", id: `tw-${this.uid}-error` });
    this.error.hidden = true;
    this.notice = el("p", { "class": "tw-notice", role: "status" });
    this.notice.hidden = true;
    const head = el("div", { "class": "tw-head" });
    const title = el("p", { "class": "tw-title", id: titleId });
    const number = this.root.getAttribute("data-fig");  // "Figure 3.2": the build numbers every figure
    if (number) title.appendChild(el("span", { "class": "tw-fignum" }, `${number} \u2014 `));
    title.appendChild(document.createTextNode(this.spec.title));
    head.appendChild(title);
    this.actions = new Actions({
      // from the setting on screen, not the address bar: after Back the address may have lost
      // the query while the widget still shows the reader's setting
      link: () => settingLink({ origin: window.location.origin, pathname: window.location.pathname,
                                search: writeSetting(this.spec, this.key, "", this.params,
                                                     this.baked[0].params) },
                              this.key, this.root.id),
      notebook: () => notebookRequest(this.api, this.spec, this.params, window.location.href),
      notify: (text) => this.setNotice(text),
      say: (text) => { this.announcer.textContent = text; },
      reset: () => this.reset(),
    });
    head.appendChild(this.actions.element);
    // The status in a word, in the head after the buttons, just above the controls, where a
    // reader moving one sees it (the full status line is the widget's last: ux review H5).
    this.chip = el("span", { "class": "tw-chip", "aria-hidden": "true" });
    head.appendChild(this.chip);
    this.root.append(head, form, this.error, this.notice, plot, this.summary, this.valuesBox,
                     this.table, this.status, this.announcer);
    if (COARSE) guardTouch(this, form);
    this.sizeBoxes();
    for (const p of this.spec.params) if (p.type === "text") this.updateCount(p);
  }

  /* The constraints the page offers `p` under (a preset's pin left, see `released`), and
   * the stops its slider moves over (null: a plain slider). */
  offered(p) { return effective(p, released(p, this.params), this.labels); }
  stopsOf(p, eff) { return stops(p, eff, (this.baked || []).map((b) => b.params[p.name])); }

  /* Put a control in line with this.params: value, dependent range, disabled state. */
  syncControl(p) {
    const c = this.controls[p.name], v = this.params[p.name];
    if (c.slider) {
      const eff = this.offered(p), list = this.stopsOf(p, eff), r = sliderRange(p, eff, list);
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
  }

  /* Ranges and states that follow other controls (spec.Depends, spec.Limit). A value the new
   * range excludes moves to the nearest allowed one, and a notice says so; a disabled control
   * with one allowed value (a preset's setting) shows that value. A move can narrow a param
   * checked before it (the memory lowers the maximum length, which lowers the mean), so the
   * pass repeats until nothing moves. Returns what moved, in words. */
  applyDepends() {
    const moved = [];
    for (let pass = 0; pass <= this.spec.params.length; pass++) {
      const before = moved.length;
      this.#applyDependsOnce(moved);
      if (moved.length === before) break;
    }
    return moved;
  }

  #applyDependsOnce(moved) {
    for (const p of this.spec.params) {
      if (!(p.depends || []).length && !(p.limits || []).length) { this.syncControl(p); continue; }
      const eff = this.effective(p), c = this.controls[p.name];
      for (const i of c.slider ? [c.slider, c.box] : [c.input]) i.disabled = !!eff.disabled;
      c.row.classList.toggle("tw-disabled", !!eff.disabled);
      const v = this.params[p.name];
      let nv = v;
      if (isNum(p) && !eff.disabled) {
        nv = Math.min(eff.max, Math.max(eff.min, v));
        const legal = eff.allowed && eff.allowed.filter((a) => a >= eff.min && a <= eff.max);
        if (legal && legal.length && legal.indexOf(nv) < 0) nv = nearest(legal, v);
      } else if (!isNum(p) && eff.allowed && eff.allowed.length && eff.allowed.indexOf(v) < 0) {
        nv = eff.allowed[0];
      }
      if (nv !== v) {
        this.params[p.name] = nv;
        moved.push(`'${p.label}' set to ${this.valueWords(p, nv)} ${eff.why.join(" and ")}`);
      }
      this.syncControl(p);
    }
  }

  updateCount(p) {
    const c = this.controls[p.name];
    if (!c || !c.count) return;
    const n = Array.from(c.input.value).length;
    let text = `${n} / ${p.max_length} characters`;
    const values = this.shown && this.shown.values;
    const tokens = (this.spec.outputs || []).find((o) => o.name === "n_tokens");
    const first = this.spec.params.find((q) => q.type === "text");
    if (values && "n_tokens" in values && first && first.name === p.name &&
        this.shown.params && this.shown.params[p.name] === c.input.value) {
      text += ` · ${values.n_tokens} ${tokens ? tokens.label : "tokens"}`;
    }
    c.count.textContent = text;
    c.count.classList.toggle("tw-over", n > p.max_length);
  }

  describeOne(p, v) {
    if (p.type === "text") {
      const t = Array.from(String(v));
      v = `\u201c${t.length > 40 ? t.slice(0, 39).join("") + "\u2026" : t.join("")}\u201d`;
    } else {
      v = this.valueWords(p, v);
    }
    return `${p.label} = ${v}`;
  }

  /* A value as the control shows it: a choice's label where the spec gives one ("A100 80 GB",
   * not the key "80" the API takes), else the value itself. */
  valueWords(p, v) {
    const i = p && p.type === "choice" && p.option_labels ? p.options.indexOf(v) : -1;
    return i >= 0 ? optionLabel(p, i) : plain(v);
  }

  /* In words: the setting the figure shows now ("head dim d_k = 64, positions = 8"). */
  describe(params) {
    return this.spec.params.filter((p) => !this.effective(p).disabled)
      .map((p) => this.describeOne(p, params[p.name])).join(", ");
  }

  /* A change of one control (controls.js): the setting moves, with what a preset or a rule
   * moves with it said in a notice, and the scheduler sends it (text after `delay` ms). */
  set(name, value, delay) {
    const at = performance.now(), said = [];
    // Moving a control a preset pins switches the preset to custom, from the preset's values.
    const p = this.spec.params.find((q) => q.name === name);
    const free = p ? released(p, this.params) : this.params;
    const param = (k) => this.spec.params.find((q) => q.name === k);
    for (const k of Object.keys(free)) {
      if (free[k] === this.params[k]) continue;
      said.push(`Switched to ${this.valueWords(param(k), free[k])}, starting from ` +
                `${this.valueWords(param(k), this.params[k])}'s configuration.`);
      this.params[k] = free[k];
    }
    this.params[name] = value;
    let moved = this.applyDepends();
    // Choosing a preset: one line, not every value it moved.
    const pins = this.spec.params.some((q) => (q.depends || []).some((dep) =>
      dep.on === name && dep.release !== undefined &&
      (dep.cases || []).some((c) => c[0] === value)));
    if (pins) { moved = []; said.push(`Showing ${this.valueWords(p, value)}'s configuration.`); }
    this.stickyNotice = "";
    this.movedNotice = said.concat(moved.length ? [`${moved.join("; ")}.`] : []).join(" ");
    this.setNotice(this.movedNotice);
    this.clearError();
    this.scheduler.changed(delay, at);
    // a move while a slow answer is awaited: the status names the setting now on the controls
    if (this.#slow) this.#markBusy();
  }

  /* A figure may name what a click on one of its traces sets (`click`: {trace, x, y}, each of x
   * and y a param's name): a click on a cell of the head-score map opens that head. A point
   * whose values a control would refuse is ignored. */
  #clicked(ev) {
    const click = this.shown && this.shown.figure.click;
    const pt = ev && ev.points && ev.points[0];
    if (!click || !pt || pt.curveNumber !== click.trace) return;
    const want = {};
    if (click.x) want[click.x] = pt.x;
    if (click.y) want[click.y] = pt.y;
    const trial = { ...this.params, ...want };
    const ok = !this.spec.params.some((p) => p.name in want &&
                                       check(p, want[p.name], trial, this.labels));
    const names = Object.keys(want);
    if (!ok || !names.length) return;
    const last = names.pop();
    for (const n of names) this.params[n] = want[n];
    this.set(last, want[last]);
  }

  /* A value refused in the browser: say why, and put the control back to what is shown. */
  refuse(message, p, keepTyping) {
    this.scheduler.drop();
    const shownParams = (this.shown && this.shown.params) || this.params;
    if (!keepTyping) {
      this.params[p.name] = shownParams[p.name];
      this.syncControl(p);
      this.showError(`${message}. Kept ${this.describeOne(p, shownParams[p.name])}.`, p);
    } else {
      this.showError(`${message}. ${this.staleWords()}`, p);
      this.markStale(true);
    }
  }

  /* A request left (Scheduler host): a slow answer dims the figure and values and says what is
   * computed. A widget already marked busy (the answer before this one was slow too) stays so,
   * with no gap in which the old status shows again. */
  #sending() {
    clearTimeout(this.#busyTimer);
    if (this.#slow) this.#markBusy();
    else this.#busyTimer = setTimeout(() => this.#markBusy(), BUSY_AFTER_MS);
  }

  /* Figure and values marked stale (dimmed, aria-busy), the status saying what is computed: the
   * setting on the controls now, the one the reader will see next (a setting left while its
   * answer was computed is not named: ux review W5), with no "Precomputed" prefix. */
  #markBusy() {
    if (!this.#slow) this.#statusBefore = [...this.status.childNodes];
    this.#slow = true;
    this.root.classList.add("tw-busy");
    this.plot.setAttribute("aria-busy", "true");
    this.valuesBox.setAttribute("aria-busy", "true");
    this.#computing = `Computing ${this.describe(this.params)}\u2026`;
    this.status.textContent = this.#computing;
    this.updateChip();
  }

  /* The answer is in (Scheduler host). The scheduler may send the newest setting at once and
   * then hand over the answer (answered): whether the widget is still busy is decided once
   * both have run, so a figure drawn for a setting already left does not unmark a widget
   * whose next answer is on its way. */
  #settled() {
    clearTimeout(this.#busyTimer);
    queueMicrotask(() => {
      if (this.scheduler.inFlight) {
        if (this.#slow) this.#markBusy();
        return;
      }
      const was = this.#slow;
      this.#slow = false;
      this.root.classList.remove("tw-busy");
      this.plot.removeAttribute("aria-busy");
      this.valuesBox.removeAttribute("aria-busy");
      // nothing else said what happened (a refusal puts its words in the error line)
      if (was && this.status.textContent === this.#computing) {
        this.status.replaceChildren(...this.#statusBefore);
      }
      this.updateChip();
    });
  }

  /* An answer came back (Scheduler host): drawn, refused in words, or a baked stand-in. */
  #answered(answer, { sent, newer, inputAt, sentAt, retryIn }) {
    const { body, resp } = answer;
    switch (outcome(answer, newer)) {
      case "show": {
        body.roundTripMs = performance.now() - sentAt;
        const from = answeredBy(answer.url, resp);
        if (from) { body.cached = true; body.cachedBy = from; }
        body.timing = { inputAt, sentAt, ...answer.timing };
        this.show(body, {});
        if (!newer) this.#writeUrl(body.params || sent);
        break;
      }
      case "refused":
        this.serverRefused(body);  // the reader's input: say what to fix
        break;
      case "busy":
        this.#busy(resp, retryIn);
        break;
      case "fallback":
        this.fallback(body && body.error ? body.error : `HTTP ${resp.status}`, sent);
        break;
      default:  // "drop": for a setting the reader has left; the newer one is on its way
    }
  }

  /* A busy server (429, 503): the nearest baked result for the setting on the controls, and
   * when it will be asked again (the scheduler waits as long as the server's Retry-After asks:
   * `retryIn` ms; null when it has stopped asking by itself). */
  #busy(resp, retryIn) {
    const why = resp.status === 429 ? "too many requests came from this address"
                                    : "it has more work than it can take now";
    this.fallback(`the server asked the page to wait (HTTP ${resp.status}: ${why})`,
                  { ...this.params });
    this.status.textContent += retryIn
      ? ` It will be asked again in ${Math.max(1, Math.round(retryIn / 1000))} s.`
      : " Move a control to ask again.";
    this.#screenOnly("Move a control to ask again.");
  }

  /* A 400: the figure keeps the last valid setting and says so. Every control but text goes
   * back to the value the figure shows: the one the reader moved, whichever param the error
   * names, and any a rule moved with it, so controls and figure never disagree and the next move
   * starts from a setting the server took. Text stays as typed, to be fixed; it is not stale
   * unless the refusal is about it. */
  serverRefused(body) {
    let textRefused = false;
    // a shared link's setting refused before anything was drawn: back to the book's own
    if (!this.shown) this.show(this.baked[0], { precomputed: "built" });
    const shownParams = this.shown.params || this.baked[0].params;
    for (const q of this.spec.params) {
      if (q.type === "text") {
        if (q.name === body.param) textRefused = true;
        continue;
      }
      if (shownParams[q.name] !== undefined) this.params[q.name] = shownParams[q.name];
    }
    this.applyDepends();
    this.movedNotice = "";
    this.setNotice(this.stickyNotice);
    const said = body.error + (/[.!?]$/.test(body.error) ? " " : ". ");
    const about = this.spec.params.find((q) => q.name === body.param);
    if (textRefused) {
      this.showError(said + this.staleWords(), about);
      this.markStale(true);
    } else {
      this.showError(`${said}Kept ${this.describe(shownParams)}.`, about);
      this.markStale(false);
    }
  }

  /* No answer for `sent`: the nearest baked result, under a label that says why; or, for a text
   * or choice no baked point has, no figure and words saying so (never another setting's). */
  fallback(why, sent) {
    const want = sent || this.params;
    const best = nearestBaked(this.spec, this.baked, want, this.params, this.labels);
    if (best) {
      this.show(best, { precomputed: "offline", why });
      this.#writeUrl(want);
      return;
    }
    const missing = unbaked(this.spec, this.baked, want);
    this.shown = null;
    this.clearError();
    this.figure.clear();
    this.valuesBox.textContent = "";
    this.table.hidden = true;
    this.summary.textContent = "";
    this.root.dataset.source = "precomputed";
    this.root.classList.remove("tw-built", "tw-pending");
    this.root.classList.add("tw-precomputed", "tw-nobaked");
    this.status.textContent = `${why}, and this page has no precomputed result for ` +
      missing.map((p) => this.describeOne(p, want[p.name])).join(", ") +
      ". Go back to a built-in setting, or try again when the server answers.";
    this.updateChip();
  }

  /* Show `result`: its figure, values, summary, table and status. `how.precomputed`: "built"
   * (baked, the page's opening figure) or "offline" (baked, standing in: `how.why`); none for
   * a live answer. */
  show(result, how) {
    this.clearError();
    this.root.classList.remove("tw-stale", "tw-nobaked", "tw-pending");
    this.shown = result;
    this.figure.show(result);
    const said = renderValues(this.valuesBox, this.spec.outputs, result.values);
    // The plot's text alternative: the result's own summary, else the values in words.
    this.summary.textContent = result.summary ||
      `${this.spec.title} for ${this.describe(result.params)}. ${said.join("; ")}.`;
    if (!how.precomputed || how.precomputed === "offline") this.announce(this.summary.textContent);
    renderTable(this.table, result.table);
    this.setNotice([result.notice, this.stickyNotice, this.movedNotice].filter(Boolean).join(" "));
    for (const p of this.spec.params) if (p.type === "text") this.updateCount(p);
    this.root.dataset.source = how.precomputed ? "precomputed" : "live";
    if (how.precomputed === "offline") this.serverAnswers(false, how.why);
    else if (!how.precomputed) this.serverAnswers(true);
    const at = how.precomputed !== "offline" ? "" : this.spec.params
      .filter((p) => p.type !== "text" && !this.effective(p).disabled)
      .map((p) => this.describeOne(p, result.params[p.name])).join(", ");
    this.status.textContent = statusText(result, how, at);
    this.#screenOnly(BUILT_HINT);
    // Baked at build time on a healthy server is a neutral note; a warning only as a fallback.
    this.root.classList.toggle("tw-precomputed", how.precomputed === "offline");
    this.root.classList.toggle("tw-built", how.precomputed === "built");
    this.updateChip();
  }

  /* The status's closing words that only a reader at a screen can act on ("Move a control ..."),
   * in a span print leaves out (runtime.css). */
  #screenOnly(words) {
    const text = this.status.textContent;
    if (!text.endsWith(words)) return;
    this.status.textContent = text.slice(0, -words.length);
    this.status.appendChild(el("span", { "class": "tw-screen-only" }, words));
  }

  /* The head's chip: what the figure is, in a word or two (the status line says it in full). */
  updateChip() {
    if (!this.chip) return;
    const has = (c) => this.root.classList.contains(c);
    const [text, kind] =
      has("tw-busy") || has("tw-pending") ? ["Computing\u2026", "busy"]
      : has("tw-stale") ? ["Not updated", "stale"]
      : has("tw-nobaked") ? ["No result", "stale"]
      : has("tw-precomputed") ? ["Precomputed: offline", "offline"]
      : has("tw-built") ? ["Precomputed", "built"]
      : this.root.dataset.source === "live" ? ["Live", "live"] : ["", ""];
    this.chip.textContent = text;
    this.chip.dataset.state = kind;
    this.chip.hidden = !text;
  }

  /* Draw the figure again (a palette switch); the promise of its drawing. */
  draw() { return this.figure.redraw(); }

  /* Whether the server that makes notebooks answers (the head's notebook link says so). */
  serverAnswers(ok, why) { this.actions.serverAnswers(ok, why); }

  /* Back to the setting the book opens with: its built result at once, nothing sent, and this
   * widget's keys gone from the page's URL. An answer still in flight is dropped. */
  reset() {
    const start = this.baked[0];
    this.scheduler.cancel();
    this.params = { ...start.params };
    this.applyDepends();
    this.stickyNotice = "";
    this.movedNotice = "";
    this.#writeUrl(this.params);
    this.show(start, { precomputed: "built" });
    this.announcer.textContent = `Reset to the book's setting: ${this.describe(this.params)}.`;
  }

  /* The server's spec for this widget (live-spec.js) in place of the baked one, or null when
   * the server did not answer. Only a control whose range, choices or rules changed is built
   * anew, in its place. The reader's values stay where the server allows them; one it does not
   * moves to the nearest allowed value, a notice says so, and that setting is computed live
   * (otherwise the baked figure stays until the reader moves); until its answer is in, the
   * figure shows that setting's baked result or a placeholder (showOwn). A shared link is
   * computed now, once its values have been read against the spec that decides them: a value
   * the baked spec refused is read again against the server's. Whether the server's spec was
   * adopted. */
  adoptSpec(live) {
    let moved = live ? this.#adoptParams(live) : null, relinked = false;
    if (moved && this.stickyNotice) {  // the link's setting the baked spec refused, and the
      this.stickyNotice = "";          // reader has not acted since
      relinked = this.#readUrl();
    }
    if (moved) {
      this.sizeBoxes();  // rebuilt controls: boxes as wide as their new ranges need
      moved = moved.concat(this.applyDepends());
      if (moved.length) this.movedNotice = `This server's limits: ${moved.join("; ")}.`;
      this.setNotice([this.shown && this.shown.notice, this.stickyNotice, this.movedNotice]
                     .filter(Boolean).join(" "));
    }
    const linked = this.linked;
    this.linked = false;
    const inFlight = this.scheduler.inFlight;
    const showing = canonical((this.shown || {}).params || {}), now = canonical(this.params);
    // controls the server's spec moved, or a link it let through: the figure follows at once
    if (((moved && moved.length) || relinked) && !inFlight && now !== showing) this.#showOwn();
    // A shared link is computed live even where the page had its result baked (a measured
    // time is this server's, as in the tab the link was copied from); a value the server's
    // limits moved, unless the figure shows it.
    const asked = inFlight ? canonical(inFlight) : null;
    const ask = (linked || relinked)
      ? now !== (asked || (this.root.dataset.source === "live" ? showing : null))
      : !!(moved && moved.length) && now !== (asked || showing);
    if (ask) this.scheduler.due();
    return !!moved;
  }

  /* adoptSpec's first half: null when the server's spec is not adopted (mergeSpec), else the
   * values moved into the server's ranges, in words, each changed control rebuilt in place
   * (keeping the focus where the reader had it). */
  #adoptParams(live) {
    const merged = mergeSpec(this.spec, live);
    if (!merged) return null;
    this.spec = merged.spec;
    for (const p of this.spec.params) this.labels[p.name] = p.label;
    const moved = [];
    for (const { param: p, fallback } of merged.changed) {
      const into = intoRange(p, this.params[p.name], fallback);
      if (into.moved) {
        this.params[p.name] = into.value;
        moved.push(into.moved);
      }
      const old = this.controls[p.name], active = document.activeElement;
      const focused = old.row.contains(active) ? active.getAttribute("name") : null;
      const c = buildControl(this, p);
      old.row.parentNode.replaceChild(c.row, old.row);
      this.controls[p.name] = c;
      const again = focused && c.row.querySelector(`[name="${focused}"]`);
      if (again) again.focus();
    }
    return moved;
  }

  staleWords() {
    return "The figure and values still show " +
      `${this.describe((this.shown && this.shown.params) || this.params)}.`;
  }

  markStale(on) {
    this.root.classList.toggle("tw-stale", !!on);
    if (on) this.status.textContent = `Not updated: ${this.staleWords().replace(/^The/, "the")}`;
    this.updateChip();
  }

  /* A refusal in words: under the control it is about (`p`, when one is named), which it
   * describes to a screen reader (aria-describedby), else under the controls (ux review H4). */
  showError(message, p) {
    this.#undescribe();
    const c = p && this.controls[p.name];
    if (c && c.row.isConnected) {
      c.row.after(this.error);
      this.#describedBy = c.slider ? [c.slider, c.box] : [c.input];
      for (const i of this.#describedBy) {
        const ids = (i.getAttribute("aria-describedby") || "").split(/\s+/).filter(Boolean);
        i.setAttribute("aria-describedby", ids.concat(this.error.id).join(" "));
      }
    } else if (this.error.previousElementSibling !== this.form) {
      this.form.after(this.error);
    }
    this.error.textContent = message;
    this.error.hidden = false;
    this.root.classList.add("tw-has-error");
  }

  clearError() {
    this.error.hidden = true;
    this.root.classList.remove("tw-has-error");
    this.#undescribe();
  }

  #undescribe() {
    for (const i of this.#describedBy) {
      const ids = (i.getAttribute("aria-describedby") || "").split(/\s+/)
        .filter((x) => x && x !== this.error.id);
      if (ids.length) i.setAttribute("aria-describedby", ids.join(" "));
      else i.removeAttribute("aria-describedby");
    }
    this.#describedBy = [];
  }

  setNotice(text) {
    this.notice.textContent = text || "";
    this.notice.hidden = !text;
  }

  /* Number boxes wide enough for the longest value of any range in the widget (128256,
   * 1048576): a character per digit, separator or decimal, plus the padding. One width for
   * all of them, so the sliders beside them end in one line (ux review P9). */
  sizeBoxes() {
    const boxes = [];
    let widest = 0;
    for (const p of this.spec.params) {
      const c = this.controls[p.name];
      if (!c || !c.box) continue;
      const lengths = [p.min, p.max, p.default].map((v) => String(v).length);
      if (p.step && p.step % 1) {
        lengths.push(String(p.max).split(".")[0].length + 1 + String(p.step).split(".")[1].length);
      }
      widest = Math.max(widest, ...lengths);
      boxes.push(c.box);
    }
    const width = `${Math.max(4, Math.min(12, widest + 1))}ch`;
    for (const box of boxes) box.style.width = width;
  }

  /* What a screen reader hears: the result's summary, once the reader has stopped moving. */
  announce(text) {
    clearTimeout(this.#announceTimer);
    this.#announceTimer = setTimeout(() => { this.announcer.textContent = text; },
                                     ANNOUNCE_AFTER_MS);
  }
}
