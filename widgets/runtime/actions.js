/* The buttons in a widget's head: "Copy link to this setting", "Open as notebook" and "Reset".
 * Actions owns them, the copy button's pause and whether the server answers; notebookHref,
 * notebookRequest and attachmentName are pure (tests/js/parts.test.mjs). */

import { MAX_GET_LINE, requestLineLength } from "./api.js";
import { el } from "./dom.js";

const NOTEBOOK_TITLE = "Download this setting as a Jupyter notebook that runs the book's code";
const COPY = "Copy link to this setting";

/* The notebook of a setting: `GET <api>/widgets/<name>/notebook?<params>`, with the values
 * that differ from the spec's defaults. */
export function notebookHref(api, spec, params) {
  const query = new URLSearchParams();
  for (const p of spec.params) {
    const v = params[p.name];
    if (v !== undefined && v !== p.default) query.set(p.name, String(v));
  }
  const qs = query.toString();
  return `${api}/widgets/${encodeURIComponent(spec.name)}/notebook${qs ? `?${qs}` : ""}`;
}

/* How to ask for the notebook of a setting: {href} for a GET the link follows, or, for a
 * setting too long for a request line (a long passage), {href, post} with the JSON body the
 * POST route takes (the same spec resolves it). `base`: the page's URL. */
export function notebookRequest(api, spec, params, base) {
  const href = notebookHref(api, spec, params);
  if (requestLineLength(href, base) <= MAX_GET_LINE) return { href, post: null };
  const endpoint = `${api}/widgets/${encodeURIComponent(spec.name)}/notebook`;
  return { href: endpoint, post: JSON.stringify(params) };
}

/* The file name of a Content-Disposition header (`attachment; filename="x.ipynb"`), or null. */
export function attachmentName(header) {
  const m = /filename="([^"\\/]+)"/.exec(header || "");
  return m ? m[1] : null;
}

export class Actions {
  #host;
  #copy;
  #notebook;
  #copiedTimer = null;
  #offlineWhy = "";

  /* host: { link(): this setting as a link; notebook(): how to ask for this setting's notebook
   * (notebookRequest);
   * notify(text): a notice under the controls; say(text): a screen reader hears it at once;
   * reset(): back to the book's setting }. `element`: the buttons, for the widget's head. */
  constructor(host) {
    this.#host = host;
    this.element = el("div", { "class": "tw-actions" });
    this.#copy = el("button", { type: "button", "class": "tw-action tw-copy" }, COPY);
    const reset = el("button", { type: "button", "class": "tw-action tw-reset" }, "Reset");
    this.#copy.addEventListener("click", () => this.#copyLink());
    reset.addEventListener("click", () => host.reset());
    this.#notebook = this.#notebookLink();
    this.element.append(this.#copy, this.#notebook, reset);
  }

  /* Whether the server that makes notebooks answers: the link says so, and stays focusable. */
  serverAnswers(ok, why) {
    const a = this.#notebook;
    this.#offlineWhy = why || "";
    a.setAttribute("aria-disabled", ok ? "false" : "true");
    a.classList.toggle("tw-off", !ok);
    a.title = ok ? NOTEBOOK_TITLE : `Needs the book's server (${why})`;
  }

  /* "Open as notebook": a download of this setting as a Jupyter notebook that runs the book's
   * code. Its href follows the setting: it is rebuilt whenever the reader may be about to
   * follow it. */
  #notebookLink() {
    const a = el("a", { "class": "tw-action tw-notebook", download: "", title: NOTEBOOK_TITLE },
                 "Open as notebook");
    const follow = () => { a.href = this.#host.notebook().href; };
    for (const type of ["pointerenter", "focus", "click"]) a.addEventListener(type, follow);
    a.addEventListener("click", (e) => {
      if (a.getAttribute("aria-disabled") === "true") {
        e.preventDefault();  // the server makes the notebook: say so rather than fail the download
        this.#host.notify("\u201cOpen as notebook\u201d needs the book's server, which makes the " +
                          `notebook from its code: ${this.#offlineWhy}. Try again when it ` +
                          "answers (a live figure shows it does).");
        return;
      }
      const request = this.#host.notebook();
      if (request.post === null) return;  // the link's own download
      e.preventDefault();  // too long for a link: POST it and save the answer
      this.#postNotebook(request);
    });
    follow();
    return a;
  }

  async #postNotebook({ href, post }) {
    this.#host.say("Preparing the notebook");
    let why;
    try {
      const resp = await fetch(href, { method: "POST", body: post,
                                       headers: { "Content-Type": "application/json" } });
      if (resp.ok) {
        const name = attachmentName(resp.headers.get("Content-Disposition")) || "setting.ipynb";
        const file = URL.createObjectURL(await resp.blob());
        const save = el("a", { href: file, download: name, hidden: "" });
        document.body.appendChild(save);
        save.click();
        save.remove();
        setTimeout(() => URL.revokeObjectURL(file), 60000);
        this.#host.say("Notebook downloaded");
        return;
      }
      why = `the server answered ${resp.status}` +
        (await resp.json().then((b) => (b && b.error ? `: ${b.error}` : ""), () => ""));
    } catch (err) {
      why = "the server did not answer";
    }
    this.#host.notify(`\u201cOpen as notebook\u201d failed: ${why}. Try again in a moment.`);
  }

  #copyLink() {
    const url = this.#host.link(), button = this.#copy;
    const said = (text) => {
      button.textContent = text;
      this.#host.say(text);
      clearTimeout(this.#copiedTimer);
      this.#copiedTimer = setTimeout(() => { button.textContent = COPY; }, 2500);
    };
    const manual = () => {  // no clipboard (a page served over plain http): show it to copy
      this.#host.notify(`Copy this link: ${url}`);
      said("Link shown below");
    };
    if (navigator.clipboard && navigator.clipboard.writeText && window.isSecureContext) {
      navigator.clipboard.writeText(url).then(() => said("Link copied"), manual);
    } else {
      manual();
    }
  }
}
