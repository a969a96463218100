/* The requests of one widget: at most one in flight, the newest setting sent the moment the
 * answer before it is in, a text field's pause before its value goes, and an answer for a
 * setting the reader has since left told apart from one for the setting on screen.
 *
 * The Scheduler owns that state and nothing else. It talks to its widget through the host it
 * is given, and has no DOM and no fetch of its own, so node runs it
 * (tests/js/scheduler.test.mjs):
 *
 *   setting()              the widget's setting now
 *   send(setting, signal)  a promise of the answer ({resp, body, ...}: api.js fetchResult)
 *   sending(setting)       a request for `setting` has left
 *   settled()              ... and its answer is in, or it failed, or was cancelled
 *   answered(answer, {sent, newer, inputAt, sentAt, retryIn})   what came back; `newer`: the
 *                          reader moved on meanwhile (that setting has already left, unless
 *                          the server is busy); `retryIn`: after a busy answer, in how many ms
 *                          the newest setting is asked again (null: not by itself)
 *   failed(why)            no answer: the server is unreachable, or too slow
 *
 * A busy server (429, 503: api.js busy) is never hammered: nothing leaves for as long as its
 * Retry-After asks (retryAfterMs), whatever the reader does meanwhile; then the newest setting
 * is asked again by itself, up to MAX_RETRIES busy answers in a row, after which only a
 * reader's move asks again (still after the wait).
 */

import { busy, retryAfterMs } from "./api.js";

const REQUEST_TIMEOUT_MS = 15000;
export const MAX_RETRIES = 3;

/* What a widget does with an answer: "show" it, "drop" it (refused or failed, but for a setting
 * the reader has already left: the next request, already sent, says what is true of the current
 * one), say the server "refused" the reader's input (a 400: what to fix), or "fallback" to a
 * baked result (the server failed), or wait for a "busy" server (429, 503) that asked to. */
export function outcome(answer, newer) {
  const { resp, body } = answer;
  if (resp.ok && body && body.figure) return "show";
  // "busy": said even for a setting the reader has left, since the newer one waits too
  if (busy(resp.status)) return "busy";
  if (newer) return "drop";
  if (body && body.error && resp.status < 500) return "refused";
  return "fallback";
}

export class Scheduler {
  #host;
  #timeoutMs;
  #now;
  #controller = null;  // the request awaiting its answer, if any
  #sent = null;        // ... its setting
  #sentKey = null;     // ... as JSON: a drag that comes back to it sends nothing
  #dirty = false;      // the setting has changed since the last request left
  #pause = null;       // a text field's pause before its value is sent
  #timeout = null;     // the request's own time limit
  #seq = 0;            // the newest request: an answer to an older one is ignored
  #changedAt = null;   // when the setting waiting to go changed (the update's timing)
  #hold = null;        // a busy server's wait: nothing leaves until it ends
  #busyInRow = 0;      // busy answers since the last other answer
  #clock;              // wall-clock ms, for a Retry-After given as a date

  constructor(host, { timeoutMs = REQUEST_TIMEOUT_MS, now = () => performance.now(),
                      clock = () => Date.now() } = {}) {
    this.#host = host;
    this.#timeoutMs = timeoutMs;
    this.#now = now;
    this.#clock = clock;
  }

  /* A busy server asked the page to wait, and the wait is not over. */
  get holding() { return !!this.#hold; }

  /* Nothing in flight, nothing waiting, no pause running. */
  get idle() { return !this.#controller && !this.#dirty && !this.#pause; }

  /* The setting whose answer is awaited, or null. */
  get inFlight() { return this.#sent; }

  /* The widget's setting changed at `at`. It goes out at once when no request is in flight (a
   * click, a typed value, a key press, the first step of a drag). While one is in flight the
   * newest setting waits, replacing any older one that waited, and goes out the moment the
   * answer is in: no fixed delay, and the last setting is always the last one sent. Text waits
   * `delay` ms after the last keystroke: nobody wants a request per keystroke. */
  changed(delay = 0, at = this.#now()) {
    // newer than anything sent, unless a drag came back to the setting in flight
    this.#dirty = !(this.#controller && JSON.stringify(this.#host.setting()) === this.#sentKey);
    if (this.#dirty) this.#changedAt = at;
    this.#clearPause();
    if (delay) {
      this.#pause = setTimeout(() => { this.#pause = null; this.flush(); }, delay);
    } else {
      this.flush();
    }
  }

  /* The setting is due though no control moved (the server's spec moved a value, a shared link
   * is read): it goes as a change does, once the line is free. */
  due() {
    this.#dirty = true;
    this.#changedAt = this.#now();
    this.flush();
  }

  /* Send the waiting setting, unless an answer is still awaited (its arrival sends it) or a
   * busy server's wait is running (its end sends it). */
  flush() {
    if (this.#dirty && !this.#controller && !this.#pause && !this.#hold) this.#request();
  }

  /* Forget the setting waiting to go (a value refused before it is sent); an answer in
   * flight still lands. */
  drop() {
    this.#clearPause();
    this.#dirty = false;
  }

  /* Forget everything: nothing waits, and the answer in flight, if any, is aborted and
   * ignored (the widget went back to its opening setting). */
  cancel() {
    this.drop();
    this.#seq++;
    const controller = this.#controller;
    if (!controller) return;
    clearTimeout(this.#timeout);
    this.#free();
    controller.abort("reset");
    this.#host.settled();
  }

  #request() {
    const controller = new AbortController();
    const seq = ++this.#seq;
    const sentAt = this.#now();
    const inputAt = this.#changedAt || sentAt;
    const sent = Object.freeze({ ...this.#host.setting() });
    this.#controller = controller;
    this.#sent = sent;
    this.#sentKey = JSON.stringify(sent);
    this.#dirty = false;
    this.#timeout = setTimeout(() => controller.abort("timeout"), this.#timeoutMs);
    this.#host.sending(sent);
    this.#host.send(sent, controller.signal).then((answer) => {
      if (seq !== this.#seq) return;
      const newer = this.#dirty;  // the reader moved on while this was computed
      const retryIn = this.#waitIfBusy(answer.resp);
      this.#settle();             // ... and that newer setting leaves now, before this is drawn
      this.#host.answered(answer, { sent, newer, inputAt, sentAt, retryIn });
    }).catch(() => {
      if (seq !== this.#seq) return;
      // Unreachable or too slow: nothing more is sent until the reader moves again.
      this.#dirty = false;
      this.#settle();
      this.#host.failed(controller.signal.aborted ? "no answer in time"
                                                  : "the server is unreachable");
    });
  }

  /* After a busy answer: hold every request for the wait its Retry-After asks, and mark the
   * newest setting due again when that ends (unless MAX_RETRIES busy answers came in a row
   * and the reader has not moved since). In how many ms it goes, or null; undefined for an
   * answer that is not busy. */
  #waitIfBusy(resp) {
    if (!resp || !busy(resp.status)) {
      this.#busyInRow = 0;
      return undefined;
    }
    const header = resp.headers && resp.headers.get ? resp.headers.get("Retry-After") : null;
    const wait = retryAfterMs(header, this.#clock(), this.#busyInRow);
    this.#busyInRow++;
    if (this.#busyInRow <= MAX_RETRIES && !this.#dirty) {
      this.#dirty = true;
      this.#changedAt = this.#now();
    }
    clearTimeout(this.#hold);
    this.#hold = setTimeout(() => { this.#hold = null; this.flush(); }, wait);
    return this.#dirty ? wait : null;
  }

  /* The answer in flight is in (or failed): the line is free, and a waiting setting goes out. */
  #settle() {
    clearTimeout(this.#timeout);
    this.#free();
    this.#host.settled();
    this.flush();
  }

  #free() {
    this.#controller = null;
    this.#sent = null;
    this.#sentKey = null;
  }

  #clearPause() {
    clearTimeout(this.#pause);
    this.#pause = null;
  }
}
