/* The spec's rules in the browser, mirror of backend/compute/spec.py: a param's effective
 * range under the other params (spec.Depends, spec.Limit), the check of a value (the same words
 * as the server's 400), a slider's stops and positions. Pure: no DOM, so node imports it
 * (tests/js/spec.test.mjs checks it against spec.py on shared cases). */

export function isNum(p) { return p.type === "int" || p.type === "float"; }

/* A setting as the query string of the GET that computes it (`<api>/widgets/<name>/result?…`):
 * every parameter, in the spec's order, written as String() writes it, so one setting is one
 * URL, which the browser's cache and nginx's key on. */
export function settingQuery(spec, params) {
  var q = new URLSearchParams();
  spec.params.forEach(function (p) {
    if (params[p.name] !== undefined) q.set(p.name, String(params[p.name]));
  });
  return q.toString();
}

export function isLog(p) { return p.scale === "log2" && p.min > 0; }

/* The values a slider stops at, or null for a plain slider (position = value): an `allowed`
 * list (the divisors of a head count: only those, index 0..n-1); for a log-scaled int the
 * powers of two on its grid with both ends and the default (a track of whole log2 steps from
 * the min never reached a max that is not min * 2^k: 400 stopped at 256, a ceiling of 1448 at
 * 1024); for a log-scaled float the round values 1-2-5 per decade, with the default, the ends
 * and the round baked values among them (no 78.125 * 2^k, no 20000.000000000706). */
export function stops(p, eff, extra) {
  var lo = eff.min, hi = eff.max, list;
  if (eff.allowed) {
    list = eff.allowed.filter(function (a) { return a >= lo && a <= hi; });
    return list.length ? list.slice().sort(function (a, b) { return a - b; }) : null;
  }
  if (!isLog(p)) return null;
  if (p.type === "int") {
    var step = p.step || 1;
    list = [lo, hi, p.default];
    for (var k = 1; k <= hi; k *= 2) {
      if ((k - p.min) % step === 0) list.push(k);  // on the param's grid (an even width)
    }
  } else {
    list = [lo, hi, p.default].concat((extra || []).filter(function (v) {
      return typeof v === "number" && +v.toPrecision(2) === v;
    }));
    for (var e = Math.floor(Math.log10(lo)); Math.pow(10, e) <= hi; e++) {
      [1, 2, 5].forEach(function (m) { list.push(+(m * Math.pow(10, e)).toPrecision(6)); });
    }
  }
  list = list.filter(function (v) { return v >= lo && v <= hi; })
    .sort(function (a, b) { return a - b; });
  return list.filter(function (v, i) { return i === 0 || v !== list[i - 1]; });
}

export function nearest(list, v) {
  return list.reduce(function (a, b) { return Math.abs(b - v) < Math.abs(a - v) ? b : a; });
}

/* The slider's own range: indexes into the stops, else the value (or its log2). */
export function sliderRange(p, eff, list) {
  if (list) return { min: 0, max: list.length - 1, step: 1 };
  return { min: toSlider(p, eff.min), max: toSlider(p, eff.max),
           step: isLog(p) ? "any" : (p.step || "any") };
}

/* Slider position <-> parameter value. Sliders with stops move over those; the number box
 * beside every slider takes any allowed value. */
export function toSlider(p, v, list) {
  if (list) return list.indexOf(nearest(list, v));
  return isLog(p) ? Math.log2(v) : v;
}
export function fromSlider(p, s, eff, list) {
  if (list) return list[Math.max(0, Math.min(list.length - 1, Math.round(s)))];
  var v = isLog(p) ? Math.pow(2, s) : s;
  if (p.type === "int") v = Math.round(v);
  else if (p.step && !isLog(p)) v = +(p.min + Math.round((v - p.min) / p.step) * p.step).toPrecision(12);
  else v = +v.toPrecision(6);  // no floating-point noise in the box, the URL or the request
  return Math.min(eff.max, Math.max(eff.min, v));
}

/* The sum a spec.Limit bounds: terms of a coefficient times factors (a param, [param,
 * exponent], or [param, [[value, number], ...]]), mirror of spec.Limit.total. */
export function limitTotal(lim, params) {
  var sum = 0;
  lim.terms.forEach(function (t) {
    var num = t[0], den = 1;
    t[1].forEach(function (f) {
      if (typeof f === "string") { num *= params[f]; return; }
      var v = params[f[0]];
      if (Array.isArray(f[1])) {
        var hit = f[1].filter(function (kv) { return kv[0] === v; })[0];
        num *= hit ? hit[1] : NaN;
      } else if (f[1] >= 0) {
        num *= Math.pow(v, f[1]);
      } else {
        den *= Math.pow(v, -f[1]);  // divided last: exact when it divides (h divides d)
      }
    });
    sum += num / den;
  });
  return sum;
}

/* The largest value of p on its grid from lo to hi within the limit's budget, the other
 * params held (lo if none): mirror of spec.Limit.top, the same binary search. A float's grid
 * is its step from its min, each point to 12 significant digits, as spec.Limit.top writes it. */
export function limitTop(lim, p, params, lo, hi) {
  var step = p.step || 1, at, kHi;
  if (p.type === "int") {
    var first = lo + (((p.min - lo) % step) + step) % step;
    at = function (k) { return first + k * step; };
    kHi = Math.max(0, Math.floor((hi - first) / step));
  } else {
    var k0 = Math.ceil((lo - p.min) / step - 1e-9);
    at = function (k) { return +(p.min + (k0 + k) * step).toPrecision(12); };
    kHi = Math.max(0, Math.floor((hi - p.min) / step + 1e-9) - k0);
  }
  function fits(k) {
    var trial = Object.assign({}, params);
    trial[p.name] = at(k);
    return limitTotal(lim, trial) <= lim.budget;
  }
  if (!fits(0)) return lo;
  var kLo = 0;
  while (kLo < kHi) {
    var mid = Math.floor((kLo + kHi + 1) / 2);
    if (fits(mid)) kLo = mid; else kHi = mid - 1;
  }
  return at(kLo);
}

/* A range's end in a message: grouped by thousands from five digits ("131,072"; 4096 stays),
 * mirror of spec.py _bound (a whole number only; the reader's own value is echoed as typed). */
export function bound(n) {
  if (typeof n !== "number" || !Number.isInteger(n) || Math.abs(n) < 10000 || Math.abs(n) >= 1e15) {
    return String(n);
  }
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

export function plain(v) { return typeof v === "boolean" ? (v ? "true" : "false") : String(v); }

/* A param's constraints given the other params (mirror of spec.Param.effective). */
export function effective(p, params, labels) {
  var out = { min: p.min, max: p.max, allowed: null, disabled: false, why: [] };
  (p.depends || []).forEach(function (dep) {
    var have = params[dep.on];
    (dep.cases || []).forEach(function (c) {
      if (c[0] !== have) return;  // strict: true never matches 1
      Object.keys(c[1]).forEach(function (k) { if (k !== "note") out[k] = c[1][k]; });
      out.why.push("when " + ((labels || {})[dep.on] || dep.on) + " is " + plain(have) +
                   (c[1].note ? " (" + c[1].note + ")" : ""));
    });
  });
  var bound = [];  // {names, note} of each limit that binds: only those are named
  (p.limits || []).forEach(function (lim) {
    var top = limitTop(lim, p, params, out.min, out.max);
    if (top >= out.max) return;
    out.max = top;
    var note = lim.note || "";
    // Two rules with one note (a device's memory and work ceilings) make one clause, so the
    // note reads once in the sentence (as spec.Param.effective says it).
    var same = bound.filter(function (b) { return b.note === note; })[0];
    if (!same) bound.push(same = { names: [], note: note });
    lim.terms.forEach(function (t) {
      t[1].forEach(function (f) {
        var n = typeof f === "string" ? f : f[0];
        if (n !== p.name && same.names.indexOf(n) < 0) same.names.push(n);
      });
    });
  });
  bound.forEach(function (b) {
    out.why.push("at " + b.names.map(function (n) {
      return ((labels || {})[n] || n) + " = " + plain(params[n]);
    }).join(", ") + (b.note ? " (" + b.note + ")" : ""));
  });
  return out;
}

/* The params as the page offers `p` under them: a pin the reader may leave (a Depends with
 * `release`, a preset's field) is left, so the slider keeps its free range. */
export function released(p, params) {
  var out = params;
  (p.depends || []).forEach(function (dep) {
    if (dep.release === undefined || params[dep.on] === dep.release) return;
    var pinned = (dep.cases || []).some(function (c) { return c[0] === params[dep.on]; });
    if (!pinned) return;
    if (out === params) out = Object.assign({}, params);
    out[dep.on] = dep.release;
  });
  return out;
}

/* The message spec.py would send for this value, or null if it is valid (same words). */
export function check(p, v, params, labels) {
  var where = "'" + p.label + "'";
  if (isNum(p)) {
    if (typeof v !== "number" || !isFinite(v)) {
      return where + " must be " + (p.type === "int" ? "an integer" : "a number") +
             ", got " + (typeof v === "string" ? JSON.stringify(v) : String(v));
    }
    if (p.type === "int" && Math.round(v) !== v) return where + " must be an integer, got " + v;
  } else if (p.type === "bool") {
    if (typeof v !== "boolean") return where + " must be true or false, got " + JSON.stringify(v);
  } else if (p.type === "choice") {
    if (p.options.indexOf(v) < 0) {
      return where + " must be one of " + p.options.map(function (o) { return "'" + o + "'"; })
        .join(", ") + ", got " + JSON.stringify(v);
    }
  } else if (p.type === "text") {
    var n = Array.from(v).length;
    if (n > p.max_length) return where + " is " + n + " characters long; the limit is " + p.max_length;
    if (!v.trim()) return where + " must not be empty";
  }
  var eff = effective(p, params, labels);
  var why = eff.why.length ? " " + eff.why.join(" and ") : "";
  // a param only limits bound (no depends) leaves its whole range to the check below, worded
  // by whichever binds, the limit's top or its own max, as spec.Param.validate does
  var onlyLimits = (p.limits || []).length && !(p.depends || []).length;
  if (isNum(p) && !onlyLimits && !(v >= p.min && v <= p.max)) {
    return where + " must be from " + bound(p.min) + " to " + bound(p.max) + ", got " + v;
  }
  // an integer's step grid, as spec.Param.validate words it
  if (p.type === "int" && p.step > 1 && (v - p.min) % p.step) {
    return where + " must be " + (p.min % p.step === 0 ? "a multiple of " + p.step
      : p.min + " plus a multiple of " + p.step) + ", got " + v;
  }
  if (eff.disabled || !((p.depends || []).length || (p.limits || []).length)) return null;
  if (eff.allowed && eff.allowed.indexOf(v) < 0) {
    return where + " must be one of " + eff.allowed.map(plain).join(", ") + why + ", got " + plain(v);
  }
  if (isNum(p) && !(v >= eff.min && v <= eff.max)) {
    return where + " must be from " + bound(eff.min) + " to " + bound(eff.max) + why + ", got " + v;
  }
  return null;
}

/* What a choice's i-th option shows: its label where the spec gives one (a card's name for
 * the key the API takes), else the option itself. */
export function optionLabel(p, i) {
  return p.option_labels ? p.option_labels[i] : p.options[i];
}

/* JSON with sorted keys: two specs are the same whatever order their fields came in. */
export function canonical(x) {
  if (Array.isArray(x)) return "[" + x.map(canonical).join(",") + "]";
  if (x && typeof x === "object") {
    return "{" + Object.keys(x).sort().map(function (k) {
      return JSON.stringify(k) + ":" + canonical(x[k]);
    }).join(",") + "}";
  }
  return JSON.stringify(x);
}

/* The value nearest `v` that param `p` allows on its own, `fallback` when there is no nearest
 * (a choice the server does not offer). */
export function nearestLegal(p, v, fallback) {
  if (isNum(p)) {
    if (typeof v !== "number" || !isFinite(v)) return fallback;
    var nv = Math.min(p.max, Math.max(p.min, v));
    if (p.type === "int" && p.step > 1) nv = p.min + Math.floor((nv - p.min) / p.step) * p.step;
    return nv;
  }
  return check(p, v, {}, {}) ? fallback : v;
}
