/* A setting's result from the API: the request that asks for it (pure, so node runs it:
 * tests/js/api.test.mjs), the fetch that reads the answer with its timing, and who answered. */

import { settingQuery } from "./spec.js";

// The longest request line a GET may take: well inside gunicorn's 4,094 bytes and nginx's
// 8 kB header buffers, and the 2,048 characters old proxies keep to.
export const MAX_GET_LINE = 2000;

/* A URL's path and query as they go on the request line, in bytes (escaped). */
export function requestLineLength(url, base) {
  const u = new URL(url, base);
  return u.pathname.length + u.search.length;
}

/* The request for `params`' result, {url, init}. A GET with the setting in the URL (no
 * preflight across origins, and cacheable): the same setting asked again is answered by the
 * browser's cache, or by a cache in front of the API. A setting too long for a request line (a
 * long passage, or Hindi, each character nine bytes once escaped) goes as the JSON body of a
 * POST, which the same spec resolves. `base`: the page's URL, against which `api` resolves. */
export function resultRequest(api, spec, params, base) {
  const endpoint = `${api}/widgets/${encodeURIComponent(spec.name)}`;
  const url = `${endpoint}/result?${settingQuery(spec, params)}`;
  const headers = { "Accept": "application/json" };
  if (requestLineLength(url, base) <= MAX_GET_LINE) return { url, init: { headers } };
  return { url: endpoint,
           init: { method: "POST", headers: { ...headers, "Content-Type": "application/json" },
                   body: JSON.stringify(params) } };
}

/* A 429 (too many requests from this address) or a 503 (the server is busy, or its model is
 * loading) asks the page to come back later; every other answer is final for its setting. */
export function busy(status) { return status === 429 || status === 503; }

// How long a busy server's page waits before asking again: what its Retry-After says, kept
// between these bounds (a "0" would make the page hammer it; a date a day off is a broken clock,
// and a reader should not wait longer than this without moving a control).
export const RETRY_MIN_MS = 1000, RETRY_MAX_MS = 120000;
// Without a Retry-After: 2 s, then twice as long at each busy answer in a row.
const RETRY_FIRST_MS = 2000;

/* The wait, in ms, that a busy answer's Retry-After header (`value`: delay-seconds or an
 * HTTP-date, RFC 9110 section 10.2.3) asks for, `now` being Date.now(); after `attempt` busy
 * answers in a row without one (or with one that does not parse), a doubling wait. Never less
 * than RETRY_MIN_MS nor more than RETRY_MAX_MS. */
export function retryAfterMs(value, now, attempt = 0) {
  const text = value === null || value === undefined ? "" : String(value).trim();
  let ms = NaN;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else if (text && /[a-z]/i.test(text)) ms = Date.parse(text) - now;
  if (!Number.isFinite(ms)) ms = RETRY_FIRST_MS * Math.pow(2, Math.max(0, attempt));
  return Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, Math.round(ms)));
}

/* Ask for `params`' result: resolves with {resp, body, url, timing} (body null when it is not
 * JSON or could not be read; timing: when the headers and the body were in, its bytes, when it
 * was parsed), rejects when there is no answer (unreachable, or aborted by `signal`). */
export function fetchResult(api, spec, params, signal) {
  const { url, init } = resultRequest(api, spec, params, window.location.href);
  const timing = {};
  return fetch(url, { ...init, signal }).then((resp) => {
    timing.headersAt = performance.now();
    return resp.text().then((text) => {
      timing.bodyAt = performance.now();
      timing.bytes = text.length;
      let body = null;
      try { body = JSON.parse(text); } catch (e) { body = null; }
      timing.parsedAt = performance.now();
      return { resp, body, url, timing };
    }, () => ({ resp, body: null, url, timing }));
  });
}

/* Who answered: "browser" when this browser's HTTP cache did (the Resource Timing entry shows no
 * body on the wire: nothing sent, or a 304 revalidation), "proxy" when a cache in front of the
 * API did (nginx's X-Cache-Status), else null (the API itself; its body says whether from its
 * own cache). The answer's status line must not claim a fresh computation for either. Read once
 * the body is in: the browser records a fetch's timing entry when it ends. */
export function answeredBy(url, resp) {
  const proxy = resp.headers.get("X-Cache-Status");
  if (proxy && /^(HIT|STALE|UPDATING|REVALIDATED)$/.test(proxy)) return "proxy";
  if (!performance.getEntriesByName) return null;
  const abs = new URL(url, window.location.href);
  const entries = performance.getEntriesByName(abs.href, "resource");
  const e = entries[entries.length - 1];
  // Across origins the sizes read 0 unless the API sends Timing-Allow-Origin (it does for
  // the origins it allows): then nothing can be told, and nothing is claimed either way.
  if (!e || !e.decodedBodySize) return null;
  return e.transferSize < e.encodedBodySize ? "browser" : null;
}

/* Resource Timing stops recording at its buffer's size (250 entries by default): a reader who
 * moves sliders for a long time would lose the entries answeredBy reads. */
if (typeof performance !== "undefined" && performance.clearResourceTimings &&
    typeof performance.addEventListener === "function") {
  performance.addEventListener("resourcetimingbufferfull", () => {
    performance.clearResourceTimings();
  });
}
