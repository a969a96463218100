"""The load benchmark's plan (tests/benchmarks/load.py): which pages the simulated readers
open, the same-origin assets each page names, and the slider moves they make, every value
checked against the widget's own spec (and an analytic widget's compute) before it is sent.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

ASSET_RE = re.compile(r'(?:<link[^>]+href|<script[^>]+src|<img[^>]+src)="([^"#]+)"')


# --- what the readers do -------------------------------------------------------------------------

def pages_with_widgets(site: Path) -> dict[str, list[str]]:
    """URL path of each built page -> the widgets it shows."""
    out: dict[str, list[str]] = {}
    for page in sorted(site.rglob("index.html")):
        names = re.findall(r'data-widget="([\w-]+)"', page.read_text(encoding="utf-8"))
        rel = page.parent.relative_to(site).as_posix()
        out["/" + (rel + "/" if rel != "." else "")] = sorted(set(names))
    return out


def _grid(p: dict, eff: dict) -> list:
    lo, hi = eff["min"], eff["max"]
    if p["type"] == "int":
        step = int(p.get("step") or 1)
        values = list(range(int(lo), int(hi) + 1, step))
        if len(values) > 4000:  # a wide integer slider: its stops, as a 400-px track allows
            values = sorted({int(lo + round((hi - lo) * i / 400 / step) * step) for i in range(401)})
        return values
    step = p.get("step")
    if p.get("scale") == "log" or not step:
        n = 200
        if p.get("scale") == "log":
            return [float(f"{lo * (hi / lo) ** (i / n):.4g}") for i in range(n + 1)]
        return [float(f"{lo + (hi - lo) * i / n:.4g}") for i in range(n + 1)]
    count = int(round((hi - lo) / step))
    if count > 4000:
        return [round(lo + round(count * i / 400) * step, 6) for i in range(401)]
    return [round(lo + i * step, 6) for i in range(count + 1)]


@dataclass
class Move:
    widget: str
    heavy: bool
    param: str
    everywhere: list  # every stop of the slider that the spec accepts from the defaults
    shared: list  # the few stops the whole class is told to try
    defaults: dict = field(default_factory=dict)
    # A widget whose moves go to the settings its page offers (whole settings, resolved):
    # `param` is then "offered", and `everywhere` / `shared` are unused.
    offered: list = field(default_factory=list)
    timing: bool = False  # a measured widget (SPEC.measured): its own request class

    def body(self, rng: random.Random, repeat_share: float) -> dict:
        if self.offered:
            return dict(rng.choice(self.offered))
        pool = self.shared if rng.random() < repeat_share else self.everywhere
        return {**self.defaults, self.param: rng.choice(pool)}

    @staticmethod
    def query(body: dict) -> str:
        """The setting as the pages' GET query: every parameter, in the spec's order (the
        body's: `defaults` is the spec's dict), booleans as JavaScript writes them. One
        setting is one URL for every reader, which is what a cache keys on."""
        return urlencode({k: str(v).lower() if isinstance(v, bool) else v
                          for k, v in body.items()})


# Heavy widgets a class drags: which slider, from which settings. Text boxes and model switches
# are left out: a reader does not drag them.
HEAVY_MOVES = {
    "attention_map": ("head", {"average": False}),
    "sampling": ("temperature", {}),
    "parity": ("seq_len", {}),
    "sequential_vs_parallel": ("factor", {}),  # a timing, which the factor only redraws
    "head_roles": ("head", {}),
    "induction_lab": ("ablate", {}),
    "paged_kv": ("block_size", {}),
}
# Heavy widgets whose moves go to the settings their page offers: its presets, baked points and
# the settings its text names (backend/app/offered.py; what `make prewarm` warms and the server
# keeps for the release). The timing widgets' settings are measured once each, before class or
# by their first reader; a class that asked each for a new setting would be a queue of
# measurements (seconds each, one at a time on the host), which is not a capacity but a wait.
OFFERED_MOVES = ("kv_decode", "attention_cost", "generation_steps", "attention_sink")
# Heavy widgets outside the plan, and why: they train models for tens of seconds a setting,
# and their pages carry every setting they offer, baked.
LEFT_OUT = ("train_live", "training_checkpoints")


def offered_settings(site: Path | None, names) -> dict[str, list[dict]]:
    """The settings the built pages offer for each named widget (resolved by its spec)."""
    from backend.app import offered

    named = offered.manifest_settings(site) if site is not None else []
    out: dict[str, list[dict]] = {}
    for name, params in offered.resolve_all(named, set(names)):
        out.setdefault(name, []).append(params)
    return out


def plan_moves(widgets: set[str] | None = None, shared_stops: int = 8,
               spread: int = 64, site: Path | None = None) -> list[Move]:
    """One Move per (widget, numeric slider) the book has, and one per offered-settings widget
    (OFFERED_MOVES, from the site's manifest); every value checked by the spec."""
    from backend.compute import REGISTRY
    from backend.compute.spec import ParamError

    moves = []
    offered = offered_settings(site, [n for n in OFFERED_MOVES
                                      if widgets is None or n in widgets])
    for name, settings in offered.items():
        moves.append(Move(name, True, "offered", [], [], offered=settings,
                          timing=REGISTRY[name].SPEC.measured))
    for name, module in REGISTRY.items():
        if widgets is not None and name not in widgets:
            continue
        spec = module.SPEC
        heavy = spec.cost_hint == "heavy"
        chosen = HEAVY_MOVES.get(name) if heavy else None
        if heavy and chosen is None:
            continue
        base = {**spec.defaults(), **(chosen[1] if chosen else {})}
        if not heavy:
            module.compute(spec.resolve(base))  # the first call pays for imports and caches
        budget = [0.3]  # CPU seconds per widget for checking stops by compute
        labels = {q.name: q.label for q in spec.params}
        for p in spec.to_json()["params"]:
            if p["type"] not in ("int", "float") or (chosen and p["name"] != chosen[0]):
                continue
            param = next(q for q in spec.params if q.name == p["name"])
            others = {k: v for k, v in base.items() if k != p["name"]}
            eff = param.effective(others, labels)
            if eff.get("disabled"):
                continue
            grid = _grid(p, eff)
            # At most `spread` stops per slider, checked by the spec and, for an analytic widget,
            # by its compute too (cross-parameter rules, e.g. heads dividing the width, are
            # compute's 400s) within 0.3 s of CPU per widget: moves the server must accept.
            if len(grid) > spread:
                grid = sorted({grid[round(i * (len(grid) - 1) / (spread - 1))]
                               for i in range(spread)}, key=grid.index)
            ok = []
            for v in grid:
                try:
                    params = spec.resolve({**base, p["name"]: v})
                    if not heavy:
                        if budget[0] <= 0:
                            continue  # unchecked stops are left out, never sent unchecked
                        t0 = time.thread_time()
                        try:
                            module.compute(params)
                        finally:
                            budget[0] -= time.thread_time() - t0
                except ParamError:
                    continue
                ok.append(v)
            if len(ok) < 2:
                continue
            shared = [ok[round(i * (len(ok) - 1) / (shared_stops - 1))] for i in range(shared_stops)]
            moves.append(Move(name, heavy, p["name"], ok, sorted(set(shared), key=ok.index),
                              {k: v for k, v in (chosen[1] if chosen else {}).items()},
                              timing=spec.measured))
    return moves


@dataclass
class Plan:
    base: str
    pages: dict[str, list[str]]  # widget chapters -> their widgets
    assets: dict[str, list[str]]  # page -> asset URLs
    light: list[Move]
    heavy: list[Move]
    heavy_share: float = 0.05
    repeat_share: float = 0.7
    navigate_share: float = 0.03
    think: tuple[float, float] = (1.0, 3.0)
    post: bool = False  # slider moves as POSTs, as the pages sent them before the GET route

    @staticmethod
    def by_widget(moves: list[Move]) -> dict[str, list[Move]]:
        out: dict[str, list[Move]] = {}
        for m in moves:
            out.setdefault(m.widget, []).append(m)
        return out


def site_assets(site: Path, base: str, paths: list[str]) -> dict[str, list[str]]:
    """Same-origin stylesheets, scripts and images each page's HTML names (what a browser with
    an empty cache fetches before the page is complete; fonts and Plotly's own lazy loads are
    left to the page-weight benchmark, which asks a real Chromium)."""
    out = {}
    for path in paths:
        html = (site / path.strip("/") / "index.html").read_text(encoding="utf-8")
        urls = []
        for ref in ASSET_RE.findall(html):
            if ref.startswith(("http:", "https:", "//", "data:", "mailto:")) or ref.endswith("/"):
                continue
            target = (site / path.strip("/") / ref.split("?")[0]).resolve()
            if not target.is_file():
                continue
            urls.append(base + "/" + target.relative_to(site.resolve()).as_posix())
        out[path] = sorted(set(urls))
    return out


def make_plan(site: Path, base: str, heavy_share: float = 0.05,
              repeat_share: float = 0.7, only_pages: list[str] | None = None) -> Plan:
    """`only_pages`: the readers open these chapters only (their URL paths' last part, e.g.
    kv-cache), and move those pages' widgets only: a class on the heavy pages."""
    pages = {p: w for p, w in pages_with_widgets(site).items() if w}
    if only_pages:
        pages = {p: w for p, w in pages.items() if p.strip("/").split("/")[-1] in only_pages}
        if not pages:
            raise ValueError(f"no built page with widgets is named {only_pages}")
    moves = plan_moves({w for ws in pages.values() for w in ws}, site=site)
    return Plan(base, pages, site_assets(site, base, list(pages)),
                [m for m in moves if not m.heavy], [m for m in moves if m.heavy],
                heavy_share=heavy_share, repeat_share=repeat_share)
