/* The book's widget runtime: one module graph for every widget on every page (this entry and
 * the modules beside it, native ES modules: no bundler).
 *
 * Each `<div data-widget>` carries its spec and results baked at build time
 * (widgets/build/widget_blocks.py). The runtime builds the controls from the spec, draws the
 * baked result for the start values at once, and on every change asks the API to recompute: at
 * most one request in flight per widget, and the newest setting goes out the moment the answer
 * before it is in (no fixed wait; during a drag the figure follows at the rate the server
 * answers). If the API cannot be reached it draws the nearest baked result under a
 * "precomputed" label, so the page keeps working from a static host or a train tunnel.
 * Mounting happens from Material's `document$`, so it survives instant navigation.
 *
 * What a reader can rely on:
 * - plotly.js is fetched (async) only on pages with a figure; text, controls and values show
 *   at once and the baked figure is drawn when plotly.js arrives. Notebook figures wait too.
 * - A shared link's setting is what the widget shows: its baked result at once where the page
 *   has one, else a placeholder and "Computing ..." until its live answer is in; never the
 *   book's default figure and values under the link's controls.
 * - A busy server (429, 503) is asked again only after its Retry-After, and the status says
 *   when; nothing is sent to it meanwhile.
 * - Printed, each figure is drawn again at the paper's width (beforeprint), and back after.
 * - A value is checked against the spec (including ranges that follow other controls, see
 *   spec.Depends) before it is sent. An invalid value is refused in the words of the control's
 *   label and the control goes back to the setting the figure shows; a 400 from the server puts
 *   every control but text back to the setting the figure shows, in words. The URL only ever
 *   carries valid settings; an invalid one in a shared link is ignored with a notice.
 * - Each widget instance owns its URL keys (`attention_map.model`, `attention_map.2.model`).
 * - Figures follow the page's colour scheme, also on a live palette switch.
 * - Each plot has a label, the result's text summary and a data table for screen readers.
 *
 * The modules, one job each. Pure (no DOM; node tests them, tests/js/): format.js (numbers as
 * Python formats them), spec.js (the spec's rules), url-state.js (a setting in the page's URL),
 * baked.js (the nearest baked result), scheduler.js (Scheduler: the requests, in flight and
 * waiting). The page's: theme.js, plotly.js, dom.js; controls.js; api.js (the result's request);
 * live-spec.js (the server's spec); render.js (Figure: the plot; the values and table);
 * actions.js (Actions: the head's buttons); widget.js (Widget, made of those); page.js
 * (mounting, page plumbing); clipboard.js (a notebook cell's copy button). The checked
 * questions: questions.js (pure: reading and checking an answer, the progress kept) and quiz.js
 * (the answer boxes, the progress shown).
 */

import { defineClipboardCopy } from "./clipboard.js";
import { formatValue } from "./format.js";
import { mountAll, onPage } from "./page.js";
import { whenPlotly } from "./plotly.js";
import { onQuizPage } from "./quiz.js";
import { check, effective, fromSlider, optionLabel, stops } from "./spec.js";

window.bookWidgets = { formatValue, mountAll, whenPlotly, effective, check, stops, fromSlider,
                       optionLabel };
function onEveryPage() {
  onPage();
  onQuizPage();  // the page's checked questions (quiz.js), independent of its widgets
}

defineClipboardCopy();  // a notebook's copy buttons (clipboard.js)
if (window.document$ && window.document$.subscribe) {
  window.document$.subscribe(onEveryPage);
} else if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", onEveryPage);
} else {
  onEveryPage();
}
