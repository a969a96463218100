"""A widget's controls and outputs, declared once as data.

The API validates requests against a `WidgetSpec`, the book's build hook renders the page's
controls from it, and the OpenAPI document is generated from it. Nothing else may restate a
parameter's range or default.
"""

from __future__ import annotations

import inspect
import math
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from backend.compute.rules import Depends, Limit  # noqa: F401  (widgets import them from here)
from backend.errors import ParamError  # noqa: F401  (widgets import it from here)


@dataclass(frozen=True)
class Param:
    name: str
    label: str
    type: str  # "int" | "float" | "bool" | "choice" | "text"
    default: Any
    min: float | None = None
    max: float | None = None
    step: float | None = None
    unit: str = ""
    help: str = ""
    options: tuple[str, ...] = ()  # for "choice"
    option_labels: tuple[str, ...] = ()  # for "choice": what the page shows for each option
    max_length: int | None = None  # for "text"
    scale: str = "linear"  # "linear" | "log2": how the page's slider moves (int/float only)
    depends: tuple[Depends, ...] = ()  # range or state that follows other params (see Depends)
    limits: tuple[Limit, ...] = ()  # budgets shared with other params: a lower max (see Limit)

    def __post_init__(self):
        if self.type not in {"int", "float", "bool", "choice", "text"}:
            raise TypeError(f"unknown param type {self.type!r}")
        if self.type in {"int", "float"} and (self.min is None or self.max is None):
            raise TypeError(f"numeric param {self.name!r} needs min and max")
        if self.type == "choice" and self.default not in self.options:
            raise TypeError(f"default of {self.name!r} is not one of its options")
        if self.option_labels and (self.type != "choice"
                                   or len(self.option_labels) != len(self.options)):
            raise TypeError(f"{self.name!r} needs one option label per option")
        if self.type == "text" and not self.max_length:
            raise TypeError(f"text param {self.name!r} needs max_length")
        # The default must itself be valid, so a spec can never contradict itself.
        self.validate(self.default)
        if self.type in {"int", "float"} and not self.min <= self.default <= self.max:
            raise TypeError(f"default of {self.name!r} is outside {self.describe_range()}")

    def describe_range(self) -> str:
        if self.type in {"int", "float"}:
            return f"{_bound(self.min)} to {_bound(self.max)}"
        if self.type == "choice":
            return "one of " + ", ".join(repr(o) for o in self.options)
        if self.type == "text":
            return f"a non-empty string of at most {self.max_length} characters"
        return "true or false"

    def validate(self, value: Any, top: bool = True) -> Any:
        """Return the value coerced to the param's type, or raise ParamError naming the rule.
        `top=False` leaves the upper bound to the caller (the spec's `resolve`, for a param its
        `limits` hook bounds: the hook's top and words replace the param's own)."""
        where = f"'{self.label}'"
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            raise ParamError(f"{where} must be true or false, got {_show(value)}", self.name)
        if self.type == "int":
            # JSON has one number type; accept 64.0 but not 64.5, and never booleans.
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ParamError(f"{where} must be an integer, got {_show(value)}", self.name)
            if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
                raise ParamError(f"{where} must be an integer, got {_show(value)}", self.name)
            value = int(value)
        elif self.type == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ParamError(f"{where} must be a number, got {_show(value)}", self.name)
            value = float(value)
            if not math.isfinite(value):
                raise ParamError(f"{where} must be a finite number", self.name)
        if self.type in {"int", "float"}:
            # A param only Limits bound (no Depends) leaves its whole range to validate_with,
            # which words it by whichever binds, the limit's top or the param's own max ('key
            # position n' refused -1 and 200,000 as "from 0 to 131,071" at sequence length 64,
            # where 64 read "from 0 to 63 at sequence length = 64").
            only_limits = bool(self.limits and not self.depends)
            low = -math.inf if only_limits else self.min
            high = math.inf if only_limits or not top else self.max
            if not (low <= value <= high):
                raise ParamError(
                    f"{where} must be from {self.describe_range()}, got {_fmt(value)}",
                    self.name,
                )
            # An integer's step is part of its rule (a width in whole heads, an even size): the
            # slider only offers the grid, and a typed value off it is a clear 400 too.
            if self.type == "int" and self.step and self.step > 1 and (value - self.min) % self.step:
                grid = (f"a multiple of {_fmt(self.step)}" if self.min % self.step == 0 else
                        f"{_fmt(self.min)} plus a multiple of {_fmt(self.step)}")
                raise ParamError(f"{where} must be {grid}, got {_fmt(value)}", self.name)
            return value
        if self.type == "choice":
            if not isinstance(value, str) or value not in self.options:
                raise ParamError(
                    f"{where} must be {self.describe_range()}, got {_show(value)}", self.name
                )
            return value
        # text
        if not isinstance(value, str):
            raise ParamError(f"{where} must be a string, got {_show(value)}", self.name)
        if len(value) > self.max_length:
            raise ParamError(
                f"{where} is {len(value)} characters long; the limit is {self.max_length}",
                self.name,
            )
        if any(unicodedata.category(c) == "Cc" and c not in "\t\n\r" for c in value):
            raise ParamError(f"{where} must not contain control characters", self.name)
        if not value.strip():
            raise ParamError(f"{where} must not be empty", self.name)
        return value

    def to_json(self) -> dict:
        d = {k: v for k, v in asdict(self).items()
             if v not in (None, "", ()) and k not in ("depends", "limits")}
        if self.type == "choice":
            d["options"] = list(self.options)
            if self.option_labels:
                d["option_labels"] = list(self.option_labels)
        if self.depends:
            d["depends"] = [dep.to_json() for dep in self.depends]
        if self.limits:
            d["limits"] = [lim.to_json() for lim in self.limits]
        return d

    def effective(self, others: dict, labels: dict | None = None) -> dict:
        """This param's constraints given the other params' values: {min, max, allowed,
        disabled, why} where `why` names the settings that changed them ("when model is book")."""
        out = {"min": self.min, "max": self.max, "allowed": None, "disabled": False, "why": []}
        for dep in self.depends:
            patch = dep.patch_for(others.get(dep.on))
            if patch:
                out.update({k: v for k, v in patch.items() if k != "note"})
                why = f"when {(labels or {}).get(dep.on, dep.on)} is {_plain(others.get(dep.on))}"
                out["why"].append(why + (f" ({patch['note']})" if "note" in patch else ""))
        bound = []  # [names, note] of each limit that binds: only those are named
        for lim in self.limits:
            top = lim.top(self, others, out["min"], out["max"])
            if top < out["max"]:
                out["max"] = top
                names = [n for n in lim.names() if n != self.name]
                # Two rules with one note (a device's memory and work ceilings) are said as one
                # clause, so the note reads once in the sentence.
                same = next((b for b in bound if b[1] == lim.note), None)
                if same:
                    same[0].extend(n for n in names if n not in same[0])
                else:
                    bound.append([names, lim.note])
        for names, note in bound:
            at = ", ".join(f"{(labels or {}).get(n, n)} = {_plain(others.get(n))}" for n in names)
            out["why"].append(f"at {at}" + (f" ({note})" if note else ""))
        return out

    def validate_with(self, value: Any, others: dict, labels: dict | None = None) -> Any:
        """`value` (already valid on its own) against the rules other params set for it."""
        if not self.depends and not self.limits:
            return value
        eff = self.effective(others, labels)
        if eff["disabled"]:
            return value
        why = " and ".join(eff["why"])
        suffix = f" {why}" if why else ""
        if eff["allowed"] is not None and value not in eff["allowed"]:
            allowed = ", ".join(_plain(a) for a in eff["allowed"])
            raise ParamError(f"'{self.label}' must be one of {allowed}{suffix}, got {_plain(value)}",
                             self.name)
        if self.type in {"int", "float"} and not (eff["min"] <= value <= eff["max"]):
            raise ParamError(f"'{self.label}' must be from {_bound(eff['min'])} to "
                             f"{_bound(eff['max'])}{suffix}, got {_fmt(value)}", self.name)
        return value

    def describe_depends(self) -> str:
        """The dependency rules in words, for the API's documentation."""
        parts = []
        for dep in self.depends:
            for when, patch in dep.cases.items():
                bits = []
                if "min" in patch:
                    bits.append(f"at least {_fmt(patch['min'])}")
                if "max" in patch:
                    bits.append(f"at most {_fmt(patch['max'])}")
                if "allowed" in patch:
                    bits.append("one of " + ", ".join(_plain(a) for a in patch["allowed"]))
                if patch.get("disabled"):
                    bits.append("ignored")
                parts.append(f"{' and '.join(bits)} when {dep.on} is {_plain(when)}")
        for lim in self.limits:
            terms = " + ".join(f"{coef} × " + " × ".join(
                f if isinstance(f, str) else (f"{f[0]}^{f[1]}" if isinstance(f[1], int)
                                              else f"bytes({f[0]})") for f in factors)
                for coef, factors in lim.terms)
            parts.append(f"at most the largest value with {terms} <= {lim.budget}")
        return "; ".join(parts)


def seed_param(top: int, help: str = "", label: str = "seed") -> Param:
    """The seed of a widget's random draw: a whole number from 0 (the default) to `top`."""
    return Param("seed", label, "int", default=0, min=0, max=top, step=1, help=help)


def sampling_params(temperature: float, top_p: float, temperature_max: float,
                    top_k_max: int) -> tuple[Param, Param, Param]:
    """Temperature, top-k and top-p, in the order they are applied (backend/reference/sampling.py),
    for every widget that draws tokens: the defaults and ceilings are the widget's."""
    return (
        Param("temperature", "temperature τ", "float", default=temperature, min=0.1,
              max=temperature_max, step=0.05,
              help="Logits are divided by τ before the softmax: τ < 1 sharpens, τ > 1 flattens. "
                   "Applied first, then top-k, then top-p."),
        Param("top_k", "top-k (0 = off)", "int", default=0, min=0, max=top_k_max, step=1,
              help="Keep only the k most likely tokens; 0 keeps them all."),
        Param("top_p", "top-p (1 = off)", "float", default=top_p, min=0.05, max=1.0, step=0.05,
              help="Keep the fewest most likely tokens whose probabilities add up to at least p."),
    )


def dtype_param(dtypes, default: str, help: str, label: str = "dtype") -> Param:
    """The number format a widget computes or stores in: one of `dtypes`' names (its table of
    names to torch dtypes), in the table's order."""
    return Param("dtype", label, "choice", default=default, options=tuple(dtypes), help=help)


@dataclass(frozen=True)
class Output:
    """A named value the widget returns, with how the page should label and format it."""

    name: str
    label: str
    fmt: str = ".4g"  # a Python format spec; the page mirrors the common ones
    unit: str = ""
    # What the page writes for a value of exactly 0, where "0.0e+00" would hide that it is
    # exact (a difference of two results: "0 (identical)").
    zero: str = ""

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v != ""}


@dataclass(frozen=True)
class WidgetSpec:
    name: str
    title: str
    params: tuple[Param, ...]
    outputs: tuple[Output, ...] = ()
    description: str = ""
    # Extra parameter sets baked into the page at build time, so it still works with no API.
    # By default: the defaults plus a sweep of each numeric param with the others at default.
    bake: tuple[dict, ...] | None = None
    sweep_points: int = 7
    # "light" | "heavy": heavy widgets (whole models) compute one at a time per worker and are
    # not warmed at worker start.
    cost_hint: str = "light"
    # Whether gunicorn workers compute this widget's bake points at start (heavy widgets warm
    # in a background thread). Off for a widget whose every setting is baked into the page and
    # whose computation would cost every worker a long start.
    # A function of a bake point instead warms only the points it accepts (the parity check
    # warms its random models, not the trained one: that would load 538 MB into every worker).
    warm: bool | Callable[[dict], bool] = True
    # Times itself on the machine it runs on, under `backend.compute.measure`'s host-wide timing
    # lock (a guard test holds this equal to the widget's use of that module). Such a widget is
    # never warmed at worker start (every worker would queue for the lock, and the first
    # readers' timings behind them), its notebook tells the reader the timings will be their
    # own machine's, and the tests that run it are marked `timing`. Not sent to the page.
    measured: bool = False
    # Seconds the API's result cache may keep one answer; None: BOOK_CACHE_TTL_SECONDS (a day by
    # default). kv_decode and generation_steps set ten minutes: their answers are mostly timings
    # of one moment; the other measured widgets' timings are kept like the rest of their answer.
    result_ttl: int | None = None
    # Hooks for what data cannot state, run by `resolve` before a request takes a compute slot:
    # `prepare(body) -> body` fills omitted fields (from a chosen preset); `limits(values) ->
    # {param: {"max": n, "why": words}}` is the largest value this server allows at a setting (a
    # device's ceiling: checked before the params' `Depends`/`Limit` data, so its words win);
    # `check(values)` raises ParamError for a rule across params, after that data. The spec
    # answer and the OpenAPI document carry the two rules' docstrings in words.
    prepare: Callable[[dict], dict] | None = None
    limits: Callable[[dict], dict] | None = None
    check: Callable[[dict], None] | None = None
    # One or two sentences for the reader's notebook (`GET .../notebook`): what to change next
    # and what they will see. Name the param to move in backticks (`d_k`).
    try_next: str = ""

    def __post_init__(self):
        names = {p.name for p in self.params}
        for p in self.params:
            for dep in p.depends:
                if dep.on not in names or dep.on == p.name:
                    raise TypeError(f"{self.name}: {p.name!r} depends on unknown param {dep.on!r}")
            for lim in p.limits:
                if p.type not in {"int", "float"} or not set(lim.names()) <= names:
                    raise TypeError(f"{self.name}: {p.name!r} has a limit on unknown params "
                                    f"{lim.names()!r} (or is not a number)")
        # every default setting must satisfy every rule, so the page can always start
        self.resolve({})
        if self.result_ttl is not None and (isinstance(self.result_ttl, bool)
                                            or not isinstance(self.result_ttl, int)
                                            or self.result_ttl < 1):
            raise TypeError(f"{self.name}: result_ttl must be a positive number of seconds")

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def resolve(self, body: Any) -> dict:
        """Validate a request body against the spec; missing params take their defaults."""
        if self.prepare is not None and isinstance(body, dict):
            body = self.prepare(body)
        if not isinstance(body, dict):
            raise ParamError(
                f"the request body must be a JSON object of parameter values, got {_show(body)}"
            )
        known = {p.name for p in self.params}
        unknown = sorted(set(body) - known)
        if unknown:
            raise ParamError(
                f"unknown parameter {unknown[0]!r} for widget '{self.name}'; "
                f"known parameters: {', '.join(sorted(known))}",
                unknown[0],
            )
        # a param the `limits` hook bounds has its top checked there, in the hook's words
        hooked = set(self.limits(self.defaults())) if self.limits is not None else set()
        values = {p.name: p.validate(body[p.name], top=p.name not in hooked) if p.name in body
                  else p.default for p in self.params}
        for name, bound in (self.limits(values) if self.limits is not None else {}).items():
            p = self.param(name)
            if values[name] > bound["max"]:
                raise ParamError(f"'{p.label}' must be from {_bound(p.min)} to {_bound(bound['max'])}"
                                 f" {bound['why']}, got {_fmt(values[name])}", name)
        labels = {p.name: p.label for p in self.params}
        for p in self.params:  # then the rules params set for each other (see Depends, Limit)
            if p.depends or p.limits:
                p.validate_with(values[p.name], values, labels)
        if self.check is not None:
            self.check(values)
        return values

    def rules(self) -> list[str]:
        """The hooks' rules in words (their docstrings' first paragraphs), for the page and the
        OpenAPI document: what a request must satisfy beyond each param's own range."""
        out = []
        for hook in (self.limits, self.check):
            doc = inspect.getdoc(hook) if hook is not None else None
            if doc:
                out.append(" ".join(doc.split("\n\n")[0].split()))
        return out

    def bake_points(self) -> list[dict]:
        """Parameter sets to precompute at build time (defaults first, no duplicates)."""
        points = [self.defaults()]
        if self.bake is not None:
            points += [self.resolve(p) for p in self.bake]
        else:
            for p in self.params:
                if p.type in {"int", "float"}:
                    for v in sweep(p, self.sweep_points):
                        points.append({**self.defaults(), p.name: v})
                elif p.type in {"bool", "choice"}:
                    for v in ((True, False) if p.type == "bool" else p.options):
                        points.append({**self.defaults(), p.name: v})
        unique = []
        for pt in points:
            if pt not in unique:
                unique.append(pt)
        return unique

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "params": [p.to_json() for p in self.params],
            "outputs": [o.to_json() for o in self.outputs],
            **({"rules": self.rules()} if self.rules() else {}),
        }


def sweep(p: Param, n: int) -> list:
    """n values spread over a numeric param's range, on the slider's own scale."""
    lo, hi = p.min, p.max
    if p.scale == "log2" and lo > 0:
        vals = [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]
    else:
        vals = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    if p.type == "int":
        vals = [int(round(v)) for v in vals]
        if p.scale == "log2":  # snap to powers of two where the range allows: nicer stops
            vals = [min(max(2 ** round(math.log2(v)), int(lo)), int(hi)) for v in vals]
    out = []
    for v in vals + [p.default]:
        if v not in out:
            out.append(v)
    return sorted(out)


def _fmt(x) -> str:
    if isinstance(x, float) and x.is_integer():
        # a whole number as a reader writes it, but never a 300-digit echo of 1e308
        return str(int(x)) if abs(x) < 1e15 else f"{x:g}"
    return str(x)


def _bound(x) -> str:
    """A range's end in a message, as the book prints numbers: grouped by thousands from five
    digits ("from 1 to 131,072"; 4096 stays as it is). The reader's own value ("got ...") is
    echoed by _fmt, as typed. widgets/runtime/spec.js bound() says the same."""
    if (isinstance(x, (int, float)) and not isinstance(x, bool) and float(x).is_integer()
            and 10_000 <= abs(x) < 1e15):
        return f"{int(x):,}"
    return _fmt(x)


def _plain(value) -> str:
    """A value as a reader writes it: book, 3, true."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return _fmt(value) if isinstance(value, (int, float)) else str(value)


def _show(value) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."
