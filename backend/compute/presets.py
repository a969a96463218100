"""Widgets whose controls a real model's published config can fill (`preset`), or the reader
sets one by one (`custom`): the pins each preset puts on a control, and the spec's `prepare`
hook that fills a request's omitted fields from the chosen preset."""

from __future__ import annotations

from collections.abc import Callable

from backend.compute.spec import Depends

CUSTOM = "custom"


def locks(choices: dict, fields: dict, param: str) -> tuple[Depends, ...]:
    """`param` pinned to each preset's value (a bool is disabled: the preset decides it);
    moving a pinned control switches the page to custom, from the preset's values."""
    field = fields[param]
    cases = {}
    for name, cfg in choices.items():
        v = getattr(cfg, field)
        cases[name] = ({"disabled": True, "allowed": [v],
                        "note": f"preset {name} sets it; choose custom to edit"}
                       if isinstance(v, bool) else
                       {"min": v, "max": v, "note": f"preset {name} has {v}; choose custom to edit"})
    return (Depends("preset", cases, release=CUSTOM),)


def fill_from(choices: dict, fields: dict, forced: tuple[str, ...] = ()) -> Callable[[dict], dict]:
    """A `prepare` hook: a request's omitted fields come from its preset, not the defaults (the
    `forced` ones, disabled under a preset, from the preset whatever was sent)."""
    def prepare(body: dict) -> dict:
        preset = body.get("preset", CUSTOM)
        if isinstance(preset, str) and preset in choices:
            cfg = choices[preset]
            body = {**{p: getattr(cfg, f) for p, f in fields.items()}, **body,
                    **{p: getattr(cfg, fields[p]) for p in forced}}
        return body
    return prepare
