"""A widget's setting in a URL's query string (`?d_k=256&causal=true`), as the result and
notebook routes take it: read as the JSON body the POST route takes, then resolved by the spec
exactly as that route resolves it (the same 400 naming the parameter)."""

from __future__ import annotations

import re
import sys

from backend.compute.spec import ParamError, WidgetSpec

_INT = re.compile(r"[+-]?\d+")


def params_from_query(spec: WidgetSpec, args) -> dict:
    """A query string (`MultiDict`) as the JSON body the POST endpoint takes, then resolved by the
    spec exactly as that endpoint resolves it: the same 400 naming the parameter."""
    body = {}
    for key in args:
        values = args.getlist(key)
        if len(values) > 1:
            raise ParamError(f"parameter {key!r} is given {len(values)} times; give it once", key)
        raw = values[0]
        try:
            p = spec.param(key)
        except KeyError:
            body[key] = raw  # resolve() names it as unknown, with the known ones
            continue
        body[key] = _typed(p.type, raw, key)
    return spec.resolve(body)


def _typed(kind: str, raw: str, key: str = "value"):
    """A query value as the JSON value a page would send; what does not parse stays a string,
    so the spec's own message says what was expected."""
    text = raw.strip()
    if kind in {"int", "float"}:
        if _INT.fullmatch(text):
            digits, most = len(text.lstrip("+-")), sys.get_int_max_str_digits()
            if digits > most:  # int() would raise about Python's internals: a 500, once
                raise ParamError(f"{key!r} has {digits:,} digits; the API reads numbers of at "
                                 f"most {most:,}", key)
            return int(text)
        try:
            return float(text)
        except ValueError:
            return raw
    if kind == "bool":
        return {"true": True, "1": True, "false": False, "0": False}.get(text.lower(), raw)
    return raw


