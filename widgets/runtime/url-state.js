/* A widget's setting in the page's query string (`?attention_scaling.d_k=256`), so a reader or
 * an instructor can share exactly what they are looking at. Each widget instance owns its keys,
 * `<key>.<param>` (`attention_map.model`, `attention_map.2.model`). Only valid values are taken
 * from a link; the others are named and ignored. Pure: query strings in, query strings out, so
 * node runs it (tests/js/url-state.test.mjs). */

import { check, isNum } from "./spec.js";

/* A value as a link carries it, in the param's type where it reads as one (check refuses the
 * rest, in the param's own words). */
export function fromQuery(p, raw) {
  if (isNum(p)) return raw.trim() === "" || isNaN(+raw) ? raw : +raw;
  if (p.type === "bool") {
    return raw === "true" || raw === "1" ? true : raw === "false" || raw === "0" ? false : raw;
  }
  return raw;
}

/* The setting `search` (a query string) gives widget `key`: `params` with each valid value the
 * link carries, then any value a later rule refuses (layer=5 read before model=book) put back
 * to `opening`'s (the setting the book opens with). Returns {params, found: whether the link
 * set any value, ignored: why each refused one was, in words}. */
export function readSetting(spec, key, search, params, labels, opening) {
  const query = new URLSearchParams(search), ignored = [];
  const out = { ...params };
  let found = false;
  for (const p of spec.params) {
    const raw = query.get(`${key}.${p.name}`);
    if (raw === null) continue;
    const v = fromQuery(p, raw);
    const problem = check(p, v, { ...out, [p.name]: v }, labels);
    if (problem) { ignored.push(problem); continue; }
    out[p.name] = v;
    found = true;
  }
  for (const p of spec.params) {
    const problem = check(p, out[p.name], out, labels);
    if (problem) {
      ignored.push(problem);
      out[p.name] = opening[p.name];
    }
  }
  return { params: out, found, ignored };
}

/* `search` with widget `key`'s values set to `params`: a value at the book's opening setting
 * leaves the URL; other widgets' keys and anything else stay. */
export function writeSetting(spec, key, search, params, opening) {
  const query = new URLSearchParams(search);
  for (const p of spec.params) {
    const name = `${key}.${p.name}`, v = params[p.name];
    if (v === opening[p.name]) query.delete(name);
    else query.set(name, String(v));
  }
  return query.toString();
}

/* A link that opens `where` (a page's location: origin, pathname, search) on this widget's
 * setting: its own keys only, and its element's id as the fragment. */
export function settingLink(where, key, id) {
  const mine = new URLSearchParams();
  new URLSearchParams(where.search).forEach((v, k) => {
    if (k.indexOf(`${key}.`) === 0) mine.append(k, v);
  });
  const qs = mine.toString();
  return where.origin + where.pathname + (qs ? `?${qs}` : "") + (id ? `#${id}` : "");
}
