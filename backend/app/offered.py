"""The settings the book's pages offer: every widget's baked points (the defaults and the sweeps
or presets the page carries) and every setting the chapters name (a widget block's `params:`, a
`{{ value(...) }}` call's arguments), which the build lists in the site's
`assets/book/settings.json`. `backend.prewarm` warms them; the API keeps a measured widget's
answer at one of them for the release (the cache's whole TTL), not for the widget's own short
`result_ttl`, so each is measured once per release and device and every replica after the first
reads it from the shared cache. A setting no page offers is measured live, and kept briefly.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

log = logging.getLogger(__name__)

# The settings the pages use, listed by the build (widgets/build/widget_blocks.py writes it).
MANIFEST = "assets/book/settings.json"


class NoManifest(Exception):
    """The settings manifest is not there: the book was not built (or not by this version)."""


def setting_key(name: str, resolved: dict) -> tuple[str, str]:
    return name, json.dumps(resolved, sort_keys=True)


def manifest_settings(site: Path | str) -> list[tuple[str, dict]]:
    """Every (widget, params) the built pages name, as the build listed them."""
    path = Path(site) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [(name, params) for name, params in data["settings"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NoManifest(f"{path}: {exc}") from None


def resolve_all(named: list[tuple[str, dict]], widgets=None) -> list[tuple[str, dict]]:
    """Every widget's baked points, then `named`, resolved by the specs, without duplicates;
    a setting a spec refuses (the build reports those) or of an unknown widget is left out.
    `widgets`: only these widgets' (None: all)."""
    from backend.compute import REGISTRY
    from backend.compute.spec import ParamError

    out, seen = [], set()

    def add(name, params):
        module = REGISTRY.get(name)
        if module is None or (widgets is not None and name not in widgets):
            return
        try:
            resolved = module.SPEC.resolve(params)
        except ParamError:
            return
        key = setting_key(name, resolved)
        if key not in seen:
            seen.add(key)
            out.append((name, resolved))

    for name, module in REGISTRY.items():
        for params in module.SPEC.bake_points():
            add(name, params)
    for name, params in named:
        add(name, params)
    return out


@functools.lru_cache(maxsize=4)
def _measured_offered(site: str) -> frozenset:
    from backend.compute import REGISTRY

    measured = {n for n, m in REGISTRY.items() if m.SPEC.measured}
    try:
        named = manifest_settings(site)
    except NoManifest as exc:
        # the server still serves (the API without the book, a test): the baked points stand
        log.warning("no list of the pages' settings (%s): only the baked points of the measured "
                    "widgets are kept for the release", exc)
        named = []
    return frozenset(setting_key(n, p) for n, p in resolve_all(named, measured))


def is_offered(site: Path | str, name: str, resolved: dict) -> bool:
    """Whether a measured widget's resolved setting is one the pages offer (read once per
    process and site folder)."""
    return setting_key(name, resolved) in _measured_offered(str(site))


def result_ttl(site: Path | str, module, name: str, resolved: dict) -> int | None:
    """How long the result cache keeps this answer: None (the cache's TTL, a day by default) for
    every widget but a measured one's setting that no page offers, which keeps the widget's own
    `result_ttl` (a timing of one moment)."""
    spec = module.SPEC
    if spec.result_ttl is None or (spec.measured and is_offered(site, name, resolved)):
        return None
    return spec.result_ttl
