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
