"""How one param's range follows the others', declared as data: `Depends` (a case per value of
another param) and `Limit` (a budget several params share). The API (`spec.Param.effective`) and
the page (widgets/runtime/spec.js `effective`) evaluate the same data, and the OpenAPI document carries it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from backend.compute.spec import Param


@dataclass(frozen=True)
class Depends:
    """How a param's range or state follows another param's value, declared as data.

    `cases` maps a value of the param named `on` to a patch of this param's constraints:
    `max`, `min` (numbers), `allowed` (the only values allowed, e.g. the divisors of a head
    count), `disabled` (True: the value is ignored, the page greys the control out) and `note`
    (why, in words, added to the error message: "the book's model has 4 layers"). A value
    of `on` with no case leaves the param's own constraints as they are (for example a local
    checkpoint whose size is only known once it is loaded: `compute` checks it then).

        Param("layer", "layer", "int", default=0, min=0, max=11, depends=(
            Depends("model", {"book": {"max": 3}, "minilm": {"max": 5}}),
            Depends("average", {True: {"disabled": True}}),
        ))

    The API validates with it (a 400 naming the real range), the page's control follows it,
    and the OpenAPI document describes it. A numeric `on` may use every value of its range as
    a case (`{h: {"allowed": divisors(h)} for h in range(1, 17)}`).
    """

    on: str
    cases: dict = field(default_factory=dict)
    # A value of `on` under which no case applies (a preset's "custom"). Given, the cases are
    # pins the reader may leave: the page offers this param's range as under `release`, and
    # moving the control switches `on` to `release` first, starting from the pinned values. The
    # API is unchanged: a request under a pinning case must still carry the pinned value.
    release: Any = None

    KEYS = frozenset({"max", "min", "allowed", "disabled", "note"})

    def __post_init__(self):
        for when, patch in self.cases.items():
            if not isinstance(patch, dict) or not set(patch) <= self.KEYS:
                raise TypeError(f"Depends({self.on!r}): the case {when!r} must be a dict with "
                                f"keys from {sorted(self.KEYS)}")
        if self.release is not None and self.patch_for(self.release):
            raise TypeError(f"Depends({self.on!r}): release value {self.release!r} has a case")

    def patch_for(self, value: Any) -> dict:
        for when, patch in self.cases.items():
            # bool is an int in Python: True must not match a case for 1, nor 1 a case for True
            if when == value and isinstance(when, bool) == isinstance(value, bool):
                return patch
        return {}

    def to_json(self) -> dict:
        out = {"on": self.on,
               "cases": [[when, {k: (list(v) if isinstance(v, tuple) else v)
                                 for k, v in patch.items()}]
                         for when, patch in self.cases.items()]}
        if self.release is not None:
            out["release"] = self.release
        return out


@dataclass(frozen=True)
class Limit:
    """A budget several params share, as data: a sum of terms, each a coefficient times a
    product of factors, must stay at most `budget`. A factor is a param's name, (name,
    exponent) for a power (-1 divides), or (name, {value: number}) to map a choice to a number
    (a dtype to its bytes). The param that carries the limit gets as its largest value the
    largest one on its grid that keeps the sum within budget, the others held where they are
    (the sum must grow with it):

        Param("context_len", ..., limits=(
            Limit(2 ** 27, ((1, ("context_len", "context_len", "batch", "n_heads", "head_dim")),)),))

    caps T at isqrt(2^27 // (B h d)), whatever moved. Unlike `Depends`, it follows every factor
    at once; the API (`Param.effective`) and the page (widgets/runtime/spec.js `effective`) evaluate the same
    data, so the slider's top is the top the API allows."""

    budget: int
    terms: tuple = ()  # ((coefficient, (factor, ...)), ...)
    note: str = ""

    def __post_init__(self):
        if self.budget < 0 or not self.terms:
            raise TypeError("Limit: a non-negative budget and at least one term")
        for coef, factors in self.terms:
            for f in factors:
                ok = isinstance(f, str) or (
                    isinstance(f, tuple) and len(f) == 2 and isinstance(f[0], str)
                    and (isinstance(f[1], dict) or type(f[1]) is int))
                if not ok or not isinstance(coef, int):
                    raise TypeError(f"Limit: factor {f!r} must be a name, (name, exponent) or "
                                    "(name, {value: number}), with an int coefficient")

    def names(self) -> list[str]:
        out = []
        for _coef, factors in self.terms:
            for f in factors:
                n = f if isinstance(f, str) else f[0]
                if n not in out:
                    out.append(n)
        return out

    def total(self, values: dict) -> Fraction:
        """The sum the budget bounds, exactly (a power of -1 divides)."""
        out = Fraction(0)
        for coef, factors in self.terms:
            prod = Fraction(coef)
            for f in factors:
                if isinstance(f, str):
                    prod *= Fraction(values[f])
                elif isinstance(f[1], dict):
                    prod *= Fraction(f[1][values[f[0]]])
                else:
                    prod *= Fraction(values[f[0]]) ** f[1]
            out += prod
        return out

    def top(self, param: Param, values: dict, lo, hi):
        """The largest value of `param` on its grid from lo to hi within budget (lo if none).
        A float's grid is its step from its min, each point rounded to 12 significant digits
        (as the page writes it: 12.5, never 12.500000000000002)."""
        if param.type == "int":
            step = int(param.step or 1)
            first = lo + (-(lo - param.min) % step)  # lo, up to param's grid
            at = lambda k: int(first + k * step)  # noqa: E731
            k_hi = max(0, (hi - first) // step)
        else:
            step = param.step or 1
            k0 = math.ceil((lo - param.min) / step - 1e-9)
            at = lambda k: float(f"{param.min + (k0 + k) * step:.12g}")  # noqa: E731
            k_hi = max(0, math.floor((hi - param.min) / step + 1e-9) - k0)
        fits = lambda k: self.total({**values, param.name: at(k)}) <= self.budget  # noqa: E731
        if not fits(0):
            return lo
        k_lo = 0
        while k_lo < k_hi:  # binary search: the sum grows with the param
            mid = (k_lo + k_hi + 1) // 2
            if fits(mid):
                k_lo = mid
            else:
                k_hi = mid - 1
        return at(k_lo)

    def to_json(self) -> dict:
        def factor(f):
            if isinstance(f, str):
                return f
            if isinstance(f[1], dict):
                return [f[0], [[k, v] for k, v in f[1].items()]]
            return [f[0], f[1]]
        out = {"budget": self.budget,
               "terms": [[coef, [factor(f) for f in factors]] for coef, factors in self.terms]}
        if self.note:
            out["note"] = self.note
        return out
