/* Checking a reader's answer to a question, and keeping their progress. Pure (no DOM): node
 * tests it (tests/js/questions.test.mjs), and widgets/build/questions.py applies the same rule
 * to every question of the book at build time (tests/js/cases/questions.json).
 *
 * A question (the build's `data-question`): {id, kind: "number" | "choice", v (its version),
 * unit, expected, tolerance: {rel} | {abs} | {integer}, shown (the answer as printed)}. */

var UNIT_WORDS = { "%": ["%", "percent", "per cent"] };

/* Sizes a reader may answer in, in bytes: "1 KiB" is a right answer to a question asked in
 * bytes, converted, never refused for its unit. */
var BYTES = { "b": 1, "byte": 1, "bytes": 1, "kib": 1024, "mib": Math.pow(1024, 2),
              "gib": Math.pow(1024, 3), "tib": Math.pow(1024, 4), "kb": 1e3, "mb": 1e6, "gb": 1e9,
              "tb": 1e12 };

/* The forms readers type: "1,024", "1 024", "1e-3", "1.2×10^-3", "−3" (a typographic minus),
 * "12 %", "1/8", "0,5" (a decimal comma), "×4" and "4x" (a factor), "128 KiB" when the question's
 * unit is KiB, "1 KiB" when it is bytes (sizes convert). -> {value} or {error: why, in words}.
 * A percent sign divides by 100 where the question asks for a plain number, and is refused where
 * it asks in a unit. */
export function parseAnswer(text, unit) {
  var s = String(text == null ? "" : text).trim();
  if (!s) return { error: "Type a number first." };
  s = s.replace(/[\u2212\u2012\u2013\u2014]/g, "-").replace(/[\u00a0\u202f\u2009]/g, " ");
  var percent = false, factor = 1;
  var names = unit ? (UNIT_WORDS[unit] || [unit]) : [];
  var lower = s.toLowerCase();
  for (var i = 0; i < names.length; i++) {
    var n = names[i].toLowerCase();
    if (lower.length > n.length && lower.endsWith(n) && /[\d\s.]$/.test(lower.slice(0, -n.length))) {
      s = s.slice(0, s.length - n.length).trim();
      break;
    }
  }
  if (/%$/.test(s)) {
    if (unit && unit !== "%") {
      return { error: "This answer is in " + unit + ", not a percentage: give the number of " + unit + "." };
    }
    s = s.slice(0, -1).trim();
    percent = unit !== "%";
  }
  s = s.replace(/^[x\u00d7]\s*(?=[\d.])/i, "");                              // "×4": a factor
  s = s.replace(/^([-+]?[\d.,\s]*\d(?:e[-+]?\d+)?)\s*[x\u00d7]$/i, "$1");  // "4x", "4×"
  var word = /^[-+]?[\d.,\s]+?\s*([A-Za-z]+)$/.exec(s);
  if (word) {
    var typed = BYTES[word[1].toLowerCase()], wanted = unit && BYTES[unit.toLowerCase()];
    if (typed && wanted) {
      factor = typed / wanted;
      s = s.slice(0, s.length - word[1].length).trim();
    } else {
      return { error: "Give the number alone" + (unit ? ", in " + unit : "") + " (not \u201c" +
               word[1] + "\u201d)." };
    }
  }
  s = s.replace(/\s*[×x*]\s*10\s*\^\s*\(?\s*([-+]?\d+)\s*\)?$/i, "e$1");
  var value;
  var fraction = /^([-+]?\d+(?:\.\d+)?)\s*\/\s*(\d+(?:\.\d+)?)$/.exec(s);
  if (fraction) {
    if (+fraction[2] === 0) return { error: "That fraction divides by zero." };
    value = +fraction[1] / +fraction[2];
  } else {
    if (/^[-+]?\d{1,3}([ ,]\d{3})+(\.\d+)?(e[-+]?\d+)?$/i.test(s)) {
      s = s.replace(/[ ,]/g, "");                                        // thousands
    } else if (/^[-+]?\d+,\d+$/.test(s)) {
      s = s.replace(",", ".");                                           // a decimal comma
    }
    if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s)) {
      return { error: "\u201c" + String(text).trim() + "\u201d is not a number: type digits, " +
               "like 1,024, 0.25, 1e-3 or 12 %." };
    }
    value = Number(s);
  }
  if (!isFinite(value)) return { error: "That number is too large to check." };
  value = percent ? value / 100 : value * factor;
  // a converted size keeps the digits typed: 1 KiB is 1,024 bytes, not 1,023.9999
  if (factor !== 1) value = +value.toPrecision(15);
  return { value: value };
}

function near(value, expected, tolerance) {
  if (tolerance.integer) return Number.isInteger(value) && value === Math.round(expected);
  if (tolerance.abs !== undefined) return Math.abs(value - expected) <= tolerance.abs * (1 + 1e-9);
  return Math.abs(value - expected) <= tolerance.rel * Math.abs(expected) * (1 + 1e-9);
}

/* A number as the feedback prints it: 4 significant figures, no exponent for everyday sizes. */
export function plain(x) {
  if (x === 0) return "0";
  var a = Math.abs(x);
  if (a >= 1e-3 && a < 1e15) {
    var digits = Math.max(0, 3 - Math.floor(Math.log10(a)));
    return (+x.toFixed(Math.min(digits, 12))).toLocaleString("en-US", { maximumFractionDigits: 12 });
  }
  return x.toExponential(3).replace(/\.?0+e/, "e");
}

/* -> {ok, message, hint (whether to offer the hint)}. `answer`: the parsed number, or a choice's
 * key. The message says how far off a number is, and names a unit slip (a factor of 1,000,
 * 1,024 or 100) when that is what it is. */
export function checkAnswer(q, answer) {
  if (q.kind === "choice") {
    if (answer == null || answer === "") return { ok: false, message: "Pick one first.", hint: false };
    return answer === q.expected
      ? { ok: true, message: "Right.", hint: false }
      : { ok: false, message: "Not that one. Think again, or open the hint.", hint: true };
  }
  var value = answer, want = q.expected, tol = q.tolerance;
  if (near(value, want, tol)) return { ok: true, message: "Right: " + q.shown + ".", hint: false };
  var unit = q.unit ? " " + q.unit : "";
  var slips = [[100, "a factor of 100: was it meant in percent?"],
               [1024, "a factor of 1,024: check the unit (1 KiB is 1,024 bytes)."],
               [1000, "a factor of 1,000: check the unit."],
               [1024 * 1024, "a factor of 1,024²: check the unit."],
               [1e6, "a factor of a million: check the unit."]];
  for (var i = 0; i < slips.length; i++) {
    var f = slips[i][0];
    if (near(value / f, want, tol) || near(value * f, want, tol)) {
      return { ok: false, message: "Off by " + slips[i][1], hint: true };
    }
  }
  var direction = value > want ? "too high" : "too low";
  var how;
  if (tol.integer) {
    how = Number.isInteger(value) ? "" : " The answer is a whole number.";
    return { ok: false, message: "Not quite: " + plain(value) + unit + " is " + direction + "." + how,
             hint: true };
  }
  if (want !== 0 && Math.sign(value) === Math.sign(want)) {
    var ratio = value / want;
    how = ratio >= 2 || ratio <= 0.5
      ? "about " + plain(ratio >= 1 ? ratio : 1 / ratio) + " times " + (ratio >= 1 ? "too high" : "too low")
      : Math.round(Math.abs(ratio - 1) * 100) + " % " + direction;
  } else {
    how = direction;
  }
  return { ok: false, message: "Not quite: " + plain(value) + unit + " is " + how + ".", hint: true };
}

/* ---------------------------------------------------------------------------- progress
 * Kept in this browser only (localStorage; nothing is sent anywhere), by question id and
 * version: an answer counts while the question's expected value is the one answered. */

export var STORE_KEY = "tw-questions-v1";

export function loadProgress(storage) {
  try {
    var raw = storage && storage.getItem(STORE_KEY);
    var data = raw ? JSON.parse(raw) : {};
    return data && typeof data === "object" && !Array.isArray(data) ? data : {};
  } catch (err) {
    return {};  // storage blocked (a private window) or spoilt: start afresh
  }
}

export function saveProgress(storage, progress) {
  try {
    storage.setItem(STORE_KEY, JSON.stringify(progress));
    return true;
  } catch (err) {
    return false;
  }
}

/* The progress after one try: right once is right (a later wrong try does not take it away);
 * `typed`, the last answer as typed (shown again after a reload), at most 60 characters. */
export function record(progress, id, version, ok, typed) {
  var was = progress[id] && progress[id].v === version ? progress[id] : { v: version, ok: false, tries: 0 };
  var out = Object.assign({}, progress);
  out[id] = { v: version, ok: was.ok || !!ok, tries: was.tries + 1 };
  if (typed != null) out[id].a = String(typed).slice(0, 60);
  return out;
}

/* The last answer typed for this version of a question, or null. */
export function lastTyped(progress, id, version) {
  var p = progress[id];
  return p && p.v === version && typeof p.a === "string" ? p.a : null;
}

export function isRight(progress, id, version) {
  var p = progress[id];
  return !!(p && p.v === version && p.ok);
}

/* manifest: {chapters: [{url, title, questions: [[id, version], …]}]} -> per chapter
 * {url, title, right, total}. */
export function tally(manifest, progress) {
  return ((manifest && manifest.chapters) || []).map(function (c) {
    var right = c.questions.filter(function (q) { return isRight(progress, q[0], q[1]); }).length;
    return { url: c.url, title: c.title, right: right, total: c.questions.length };
  });
}
