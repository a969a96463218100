/* The results baked into the page at build time, as stand-ins when the server does not answer.
 * Pure, so node runs it (tests/js/baked.test.mjs). */

import { effective, isLog, isNum } from "./spec.js";

/* The baked result closest to `want` (log distance on log sliders; a param disabled under
 * `params` does not count). A text or choice setting that no baked point has gets no
 * stand-in: null. */
export function nearestBaked(spec, baked, want, params, labels) {
  let best = null, bestD = Infinity;
  for (const b of baked) {
    let d = 0, exact = true;
    for (const p of spec.params) {
      const w = want[p.name], have = b.params[p.name];
      if (isNum(p)) {
        if (effective(p, params, labels).disabled) continue;
        const span = isLog(p) ? Math.log2(p.max / p.min) : (p.max - p.min) || 1;
        const diff = isLog(p) ? Math.log2(Math.max(w, p.min) / have) : (w - have);
        d += Math.pow(diff / span, 2);
      } else if ((p.type === "text" || p.type === "choice") && w !== have) {
        exact = false;
      } else if (w !== have) {
        d += 1;
      }
    }
    if (exact && d < bestD) { bestD = d; best = b; }
  }
  return best;
}

/* The text and choice params of `want` that no baked result has: why there is no stand-in. */
export function unbaked(spec, baked, want) {
  return spec.params.filter((p) => (p.type === "text" || p.type === "choice") &&
    !baked.some((b) => b.params[p.name] === want[p.name]));
}
