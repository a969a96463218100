/* Numbers as the prose spells them: a subset of Python's format spec (`format(x, ".3g")`), enough
 * for the specs' `fmt` fields. Pure: no DOM, so node imports it (tests/js/format.test.mjs runs it
 * against Python's own output). */

/* Python rounds an exact tie (1234.5 to 0 places, 0.125 to 2) to the even digit; JavaScript's
 * toFixed and toExponential round it up. `tie(a, d)`: is a >= 0 exactly halfway at d places
 * after the point (d < 0: before it)? toFixed gives a double's exact decimal digits. */
export function tie(a, d) {
  if (!(a < 1e21)) return false;
  var s = a.toFixed(Math.min(100, Math.max(0, d) + 25)), point = s.indexOf(".");
  return /^50*$/.test(s.replace(".", "").slice(point + d));
}

export function fixed(x, f) {
  var a = Math.abs(x);
  if (!tie(a, f)) return x.toFixed(f);
  var cut = a.toFixed(f + 1).slice(0, -1).replace(/\.$/, "");
  return (x < 0 ? "-" : "") + (+cut.slice(-1) % 2 ? a.toFixed(f) : cut);
}

export function expo(x, k) {  // k digits after the mantissa's point
  var a = Math.abs(x), e = a === 0 ? 0 : +a.toExponential(20).split("e")[1];
  if (!tie(a, k - e)) return x.toExponential(k);
  var longer = a.toExponential(k + 1).split("e"), cut = longer[0].slice(0, -1).replace(/\.$/, "");
  return (x < 0 ? "-" : "") + (+cut.slice(-1) % 2 ? a.toExponential(k) : cut + "e" + longer[1]);
}

/* A subset of Python's format spec, enough for the specs' `fmt` fields. */
export function formatValue(value, fmt) {
  if (typeof value !== "number") return String(value);
  if (!isFinite(value)) return String(value);
  var m = /^(,)?(?:\.(\d+))?([fgde%])?$/.exec(fmt || "");
  if (!m) return String(value);
  var comma = !!m[1], prec = m[2] === undefined ? null : +m[2], kind = m[3] || "g";
  var text;
  if (kind === "f") text = fixed(value, prec === null ? 6 : prec);
  else if (kind === "%") text = fixed(value * 100, prec === null ? 6 : prec) + "%";
  // Python writes at least two exponent digits (2.1e-07); JavaScript one (2.1e-7).
  else if (kind === "e") text = expo(value, prec === null ? 6 : prec)
    .replace(/e([+-])(\d)$/, "e$10$2");
  else if (kind === "d") text = Math.round(value).toString();
  else {
    // Python's g: the exponent after rounding to p digits picks the form; zeros trimmed.
    var p = prec === null ? 6 : Math.max(1, prec);
    var exp = value === 0 ? 0 : +expo(value, p - 1).split("e")[1];
    if (exp < -4 || exp >= p) {
      text = expo(value, p - 1).replace(/\.?0+e/, "e")
        .replace(/e([+-])(\d)$/, "e$10$2");
    } else {
      text = fixed(value, Math.max(0, p - 1 - exp));
      if (text.indexOf(".") >= 0) text = text.replace(/\.?0+$/, "");
    }
  }
  if (comma) {
    var parts = text.split(".");
    parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    text = parts.join(".");
  }
  return text;
}

/* The unit after a number as the page writes it: singular after exactly one ("1 token",
 * "1 radian", "1 token slot"), for every unit that is a plural word or words (the last word
 * four letters or more, ending in one s). Symbols, abbreviations and phrases ("ms", "bytes/s",
 * "$ per million tokens", "× a target step") and any other number ("1.0", "0", "2") keep the
 * unit as the spec writes it. */
export function unitAfter(text, unit) {
  if (!unit) return "";
  var words = unit.split(" "), last = words[words.length - 1];
  var plural = words.every(function (w) { return /^[a-z]+$/i.test(w); }) && words.indexOf("per") < 0 &&
    last.length >= 4 && /[^s]s$/.test(last);
  return " " + (plural && /^[-+]?1$/.test(text) ? unit.slice(0, -1) : unit);
}

/* A value with its unit, as the page shows it: `formatValue` and the unit (`unitAfter`: "1 token",
 * "2 tokens"), except a time in milliseconds from 1,000 up, which reads in seconds to three
 * figures ("10.1 s", never "1.01e+04 ms"; whole seconds with commas from 1,000 s). */
export function withUnit(value, fmt, unit) {
  if (unit === "ms" && typeof value === "number" && isFinite(value) && Math.abs(value) >= 999.5) {
    var s = value / 1000;
    return formatValue(s, Math.abs(s) >= 999.5 ? ",.0f" : ".3g") + " s";
  }
  var text = formatValue(value, fmt);
  return text + unitAfter(text, unit);
}
