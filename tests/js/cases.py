"""The cases the runtime's node tests share with Python: one source for both sides.

    .venv/bin/python tests/js/cases.py      # rewrites tests/js/cases/*.json

`format.json`: numbers, the specs' `fmt` fields, and what Python's `format(x, fmt)` writes
(the runtime's format.js must write the same). `spec.json`: every widget's spec as the page gets
it, and settings with what backend/compute/spec.py answers at each: a param's effective range under the
other params (`Param.effective`) and the message for a value (`Param.validate`, then
`Param.validate_with`; null when valid) — the runtime's spec.js must answer the same.
tests/js/test_cases.py checks the files are what Python answers today; `node --test tests/js`
(run by `make test`) checks the runtime against them.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from backend.compute import REGISTRY  # noqa: E402
from backend.compute.spec import ParamError  # noqa: E402

HERE = Path(__file__).resolve().parent / "cases"


def spec_formats() -> list[str]:
    return sorted({o.fmt for m in REGISTRY.values() for o in m.SPEC.outputs if o.fmt}
                  | {".3g", ".4g", ",d", "d"})  # status line, data table, a slider's value text


def numbers() -> list[float]:
    rng = random.Random(7)
    # Exact binary ties (0.5, 1234.5, 0.125, 0.375) round half-even in Python. Left out, where
    # format.js and Python differ: -0.0 (JavaScript's toFixed drops its sign, "0.0" for
    # Python's "-0.0"), and in the f and d forms 1e21 and above, in % 1e19 and above (toFixed
    # turns to exponent notation there).
    fixed = [0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 999.5, 999.95, 1234.5, 0.125, 0.375,
             2.5e-7, 2.68e8, 1e-4, 9.9999e-5, 0.00012345, 123456789.0, 131072.0, 1073741824.0,
             0.0731, 41.99, 99.999, 1e15, 1e16, 12.345, 0.999, 0.9995, 1e-12, 3.0517578125e-05,
             9.99e18, 5e-324]
    drawn = [rng.choice([-1, 1]) * 10 ** rng.uniform(-9, 12) for _ in range(120)]
    drawn += [float(rng.randint(0, 10 ** rng.randint(1, 10))) for _ in range(40)]
    return fixed + drawn


def format_cases() -> dict:
    cases = []
    for fmt in spec_formats():
        for x in numbers():
            if fmt.endswith("d") and not x.is_integer():
                continue
            cases.append([x, fmt, format(int(x) if fmt.endswith("d") else x, fmt)])
    return {"cases": cases}


def _check(p, value, setting, labels):
    try:
        p.validate(value)
        p.validate_with(value, setting, labels)
    except ParamError as err:
        return str(err)
    return None


def _values(p, rng) -> list:
    """Values a page's control can send for `p` (the right type), in and out of its rules."""
    if p.type == "bool":
        return [True, False]
    if p.type == "choice":
        return list(p.options)
    if p.type == "text":
        return [p.default, " ", "x" * (p.max_length + 1)]
    lo, hi, step = p.min, p.max, p.step or 1
    out = [lo, hi, p.default, hi + step, lo - step]
    if p.type == "int":
        out += [rng.randint(int(lo), int(hi)) for _ in range(2)]
    else:
        out += [round(rng.uniform(lo, hi), 3) for _ in range(2)]
    return out


def _settings(spec, rng, n) -> list[dict]:
    """The defaults, then settings with every param drawn from its own range (a spec's other
    rules may refuse some: the cases ask what each side says of them)."""
    out = [spec.defaults()]
    for _ in range(n):
        s = {}
        for p in spec.params:
            s[p.name] = rng.choice(_values(p, rng)[:3] + _values(p, rng)[5:]) \
                if p.type in ("int", "float") else rng.choice(_values(p, rng))
        out.append(s)
    return out


def spec_cases() -> dict:
    """Per widget, settings: the defaults, then (for a spec with rules between its params) drawn
    ones. At each, `effective` for every param with rules, and `checks` [param, value, message]:
    every param at the defaults, the params with rules at the others."""
    rng = random.Random(11)
    specs, settings = {}, []
    for name in sorted(REGISTRY):
        spec = REGISTRY[name].SPEC
        specs[name] = spec.to_json()
        labels = {p.name: p.label for p in spec.params}
        ruled = [p for p in spec.params if p.depends or p.limits]
        for i, setting in enumerate(_settings(spec, rng, 8 if ruled else 0)):
            effective, checks = {}, []
            for p in spec.params if i == 0 else ruled:
                if p in ruled:
                    eff = p.effective(setting, labels)
                    effective[p.name] = {**eff, "allowed": None if eff["allowed"] is None
                                         else list(eff["allowed"])}
                checks += [[p.name, v, _check(p, v, setting, labels)] for v in _values(p, rng)]
            settings.append({"widget": name, "params": setting, "effective": effective,
                             "checks": checks})
    return {"specs": specs, "settings": settings}


def question_cases() -> dict:
    """Every checked question of the book (widgets/build/questions.py) as its page carries it, with
    what a reader may type that must be taken as right (the worked answer's own number, with and
    without its unit, with thousands separators) and numbers that must be refused. Python's rule
    (`Question.check`) is asserted here; questions.test.mjs asserts the runtime's agrees."""
    import torch

    from widgets.build import questions, widget_blocks

    # One thread, as the test lanes run: a model's loss (attention-maps.3) moves in its 7th figure
    # with torch's thread count, and this file is compared exactly.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        book = questions.Book(ROOT / "docs", widget_blocks.value_of)
        book.compute()
    finally:
        torch.set_num_threads(threads)
    out = []
    for q in book.by_id.values():
        if q.kind == "choice":
            right = [[q.expected, q.expected]]
            wrong = [[k, k] for k in q.choices if k != q.expected]
        else:
            text = format(q.expected, q.fmt)
            number = float(text.replace(",", ""))
            right = [[text, number], [q.shown(), number]]
            if abs(number) >= 1000 and number.is_integer():
                right.append([f"{int(number):,}", number])
            t = q.tolerance
            step = (1 if "integer" in t else 3 * t["abs"] if "abs" in t
                    else 3 * t["rel"] * abs(q.expected) or 1)
            wrong = [[None, q.expected + step], [None, q.expected - step]]
            if q.expected:
                wrong.append([None, q.expected * 1.5])
        for typed, value in right:
            assert q.check(value), f"{q.id}: the worked answer's {typed!r} is refused by its own check"
        for _, value in wrong:
            assert not q.check(value), f"{q.id}: {value!r} is taken as right"
        out.append({"q": q.payload(), "right": right, "wrong": [v for _, v in wrong]})
    return {"questions": out}


GENERATORS = {"format.json": format_cases, "spec.json": spec_cases, "questions.json": question_cases}


def generated() -> dict[str, dict]:
    return {name: make() for name, make in GENERATORS.items()}


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for name, data in generated().items():
        (HERE / name).write_text(json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n",
                                 encoding="utf-8")


if __name__ == "__main__":
    main()
