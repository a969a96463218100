"""The instructors' page (docs/instructors.md): its sentences about what the book's measurements
cover, asserted over the code that makes them. (Its ceilings are Appendix B's:
test_how_widgets_compute.py.)"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def heavy_widgets() -> set[str]:
    from backend.compute import REGISTRY

    return {name for name, m in REGISTRY.items() if m.SPEC.cost_hint == "heavy"}


def _plan():
    sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
    try:
        import load_plan
    finally:
        sys.path.remove(str(ROOT / "tests" / "benchmarks"))
    return load_plan


PAGE = (ROOT / "docs/instructors.md").read_text(encoding="utf-8")
SECTION = " ".join(PAGE[PAGE.index("## How many students"):PAGE.index("## What each device "
                                                                    "allows")].split())
HEAVY_RECORD = json.loads((ROOT / "tests/benchmarks/results/load_heavy.json").read_text())


def test_what_the_load_plan_covers_and_leaves_out():
    """'Its heavy moves went to four widgets only ...: attention_map, sampling, parity and
    sequential_vs_parallel ..., the plan of its day': the table's record sent heavy moves to
    those four. 'the plan now also drags ... head_roles, induction_lab ... paged_kv, and sends
    the timing widgets' moves (kv_decode, generation_steps, attention_cost) and the sink's model
    switch (attention_sink) to the settings their pages offer. The training chapter's live run
    and checkpoints (train_live, training_checkpoints) are in no run.' Every heavy widget of the
    registry is in one of the plan's three lists, and each list is the page's."""
    plan = _plan()
    record = json.loads((ROOT / "tests/benchmarks/results/load.json").read_text())
    heavy_then = {m.split(".")[0] for m in record["moves"]} & heavy_widgets()
    assert heavy_then == {"attention_map", "sampling", "parity", "sequential_vs_parallel"}
    dragged_now = set(plan.HEAVY_MOVES) - heavy_then
    assert dragged_now == {"head_roles", "induction_lab", "paged_kv"}
    assert set(plan.OFFERED_MOVES) == {"kv_decode", "generation_steps", "attention_cost",
                                       "attention_sink"}
    assert heavy_widgets() - set(plan.HEAVY_MOVES) - set(plan.OFFERED_MOVES) <= set(plan.LEFT_OUT)
    for name in (*plan.HEAVY_MOVES, *plan.OFFERED_MOVES, *plan.LEFT_OUT):
        assert f"(`{name}`" in SECTION or f"`{name}`)" in SECTION or f"`{name}`," in SECTION, name
    timing = {n for n in plan.OFFERED_MOVES if _registry()[n].SPEC.measured}
    assert timing == {"kv_decode", "generation_steps", "attention_cost"}


def _registry():
    from backend.compute import REGISTRY

    return REGISTRY


def _heavy_rows() -> dict[int, list[str]]:
    rows = {}
    for m in re.finditer(r"\| (\d+) readers \|([^\n]*)\|", PAGE):
        rows[int(m.group(1))] = [c.strip() for c in m.group(2).split("|")]
    return rows


def _near(quoted: str, recorded: float) -> bool:
    """As the page writes a figure: one decimal under 1,000 ms, whole above."""
    return abs(float(quoted.replace(",", "")) - recorded) < (1 if recorded >= 1000 else 0.051)


def test_the_heavy_pages_table_is_its_record():
    """The heavy pages' table and the sentences around it against results/load_heavy.json: the
    pages and share it names, the pre-warm's count and seconds, each level's figures, no failed
    request, every timing move from the cache, the timing p95 under the light widgets'."""
    r = HEAVY_RECORD
    settings = r["settings"]
    assert settings["pages"] == "kv-cache,cost,paged-kv" and settings["heavy_share"] == 0.5
    assert settings["prewarm"] and settings["moves_as"] == "GET"
    assert f'the {r["prewarm"]["settings"]} settings these pages offer' in SECTION
    assert f'took {r["prewarm"]["seconds"]:.0f} s to measure' in SECTION
    assert r["prewarm"]["failed"] == 0 and set(r["prewarm"]["widgets"]) == {
        "kv_decode", "generation_steps", "attention_cost"}
    assert all(min(r["load_average_before"][:1] + lvl["load_average_after"][:1]) > 5
               for lvl in r["levels"])  # 'while other work kept the load average near 10'
    rows = _heavy_rows()
    levels = {lvl["readers"]: lvl for lvl in r["levels"]}
    assert set(rows) == set(levels) == {100, 300}
    for readers, (rps, timing, settled, paged, light, page_asset, failed) in rows.items():
        lvl, c = levels[readers], levels[readers]["classes"]
        assert float(rps) == lvl["throughput_rps"]
        p50, p95 = timing.split("/")
        assert _near(p50, c["api-timing"]["p50_ms"]) and _near(p95, c["api-timing"]["p95_ms"])
        assert _near(settled, c["api-timing"]["settled"]["p95_ms"])
        assert _near(paged, c["api-heavy"]["p95_ms"]) and _near(light, c["api-light"]["p95_ms"])
        page, asset = page_asset.split("/")
        assert _near(page, c["page"]["p95_ms"]) and _near(asset, c["asset"]["p95_ms"])
        assert int(failed) == sum(lvl["errors_by_status"].values()) == 0
        # 'every timing move was answered from the cache: ... their p95 was the lower'
        assert c["api-timing"]["cached_share"] == 1.0
        assert c["api-timing"]["p95_ms"] < c["api-light"]["p95_ms"]
    heavy_pages = {p.strip("/").split("/")[-1] for p in r["pages"]}
    assert heavy_pages == {"kv-cache", "cost", "paged-kv"}
    assert {m.split(".")[0] for m in r["moves"]} >= {"kv_decode", "attention_cost",
                                                     "generation_steps", "paged_kv"}


def test_a_timing_is_taken_one_at_a_time_on_the_host_and_kept_for_the_release(tmp_path):
    """'A setting no page offers is measured when a student first asks for it: one measurement
    at a time on the host (the replicas ... share one lock)'; the timings the pages offer are
    'measured once for the release and the device' and kept for BOOK_CACHE_TTL_SECONDS (a day),
    one no page offers 'kept ten minutes'. The lock is a file lock: a second holder, from
    another open of the file as another worker's would be, is turned away while the first holds
    it, and gets it once it is free (across containers: tests/deploy/test_timing_lock.py)."""
    import inspect

    from backend import settings
    from backend.app import offered
    from backend.compute import REGISTRY, measure
    from backend.errors import Busy

    lock = str(tmp_path / "timing.lock")
    with measure.timing_lock(path=lock):
        try:
            with measure.timing_lock(wait=0, path=lock):
                raise AssertionError("two timings at once")
        except Busy:
            pass
    with measure.timing_lock(wait=0, path=lock):
        pass
    timed = {n for n, m in REGISTRY.items() if m.SPEC.measured}
    for name in timed:
        assert "timing_lock()" in inspect.getsource(REGISTRY[name]), name
    assert {REGISTRY[n].SPEC.result_ttl for n in ("kv_decode", "generation_steps")} == {600}
    assert {n for n, m in REGISTRY.items() if m.SPEC.result_ttl is not None} == {"kv_decode", "generation_steps"}
    assert settings.get("BOOK_CACHE_TTL_SECONDS", {}) == 86400
    site = tmp_path / "site"  # no manifest: the baked points are what the page offers
    for name in ("kv_decode", "generation_steps"):
        module = REGISTRY[name]
        default = module.SPEC.resolve({})
        assert offered.result_ttl(site, module, name, default) is None  # the cache's TTL
    module = REGISTRY["kv_decode"]
    assert offered.result_ttl(site, module, "kv_decode", module.SPEC.resolve({"steps": 37})) == 600
