"""The instructors' page (docs/instructors.md): its sentences about what the book's measurements
cover, asserted over the code that makes them. (Its ceilings are Appendix B's:
test_how_widgets_compute.py.)"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def heavy_widgets() -> set[str]:
    from backend.compute import REGISTRY

    return {name for name, m in REGISTRY.items() if m.SPEC.cost_hint == "heavy"}


def test_what_the_capacity_table_leaves_out():
    """'Its heavy moves went to four widgets only ...: attention_map, sampling, parity and
    sequential_vs_parallel ... The other heavy widgets were not in the run: three more on the
    attention-maps page (attention_sink, head_roles, induction_lab), the training chapter's live
    run (train_live), and four in Part III: ...
    kv_decode, generation_steps, ... attention_cost and ... paged_kv.' The load plan's heavy
    moves against the registry's heavy widgets, and each left-out widget's chapter."""
    sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
    try:
        from load_plan import HEAVY_MOVES
    finally:
        sys.path.remove(str(ROOT / "tests" / "benchmarks"))
    run = {"attention_map", "sampling", "parity", "sequential_vs_parallel"}
    left_out = {"attention_sink", "head_roles", "induction_lab", "kv_decode", "generation_steps",
                "attention_cost", "paged_kv", "train_live"}
    assert set(HEAVY_MOVES) == run
    assert heavy_widgets() - run == left_out
    chapter = {"attention_sink": "attention-maps", "head_roles": "attention-maps",
               "induction_lab": "attention-maps", "kv_decode": "kv-cache",
               "generation_steps": "kv-cache", "attention_cost": "cost", "paged_kv": "paged-kv",
               "train_live": "training"}
    for name, page in chapter.items():
        assert f"name: {name}\n" in (ROOT / f"docs/chapters/{page}.md").read_text(encoding="utf-8"), name


def test_a_timing_is_taken_one_at_a_time_on_the_host_and_kept_ten_minutes(tmp_path):
    """'A widget that times itself takes one timing at a time on the whole host (every worker
    waits for the same lock)'; 'the KV-cache chapter's decode timing (kv_decode) and the
    generation steps (generation_steps) keep theirs ten minutes', the other results a day. The
    lock is a file lock: a second holder, from another open of the file as another worker's
    would be, is turned away while the first holds it, and gets it once it is free."""
    import inspect

    from backend import settings
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
