"""Every widget's notebook, downloaded at a setting other than the defaults and executed offline
(nbclient, this venv's `python3` kernel, in a fresh folder): its last cell's JSON holds the same
values the API's POST returns for the same setting.

Slow (a kernel and a torch import per widget, a few minutes in all): `-m "not slow"` leaves it
out."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from backend.compute import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

# Values that are measurements of the machine at one moment, not results of the setting: the
# notebook measures the reader's machine (its first cell says so), so these may differ between
# two runs even on one machine and are left out of the comparison, by name, with why. Every
# other value of these widgets (sizes, FLOPs, the gradient product, the tokens) must match.
TIMED = {
    "sequential_vs_parallel": (
        {"ms_sequential", "ms_parallel", "speedup", "us_per_step",
         "runs_sequential", "runs_parallel", "median_sequential", "median_parallel",
         "spread_sequential", "spread_parallel",
         # how many runs it took before the fastest run repeated (measure.settled)
         "repeats", "settled"},
        "wall-clock times of the loop and the product, and what is derived from them"),
    "attention_cost": (
        {"ms_eager", "ms_fused", "fastest_eager", "fastest_fused", "slowest_eager",
         "slowest_fused", "spread_eager", "spread_fused", "runs_eager", "runs_fused",
         "ladder_fastest_eager", "ladder_fastest_fused", "ladder_ms_eager", "ladder_ms_fused",
         "ladder_slowest_eager", "ladder_slowest_fused"},
        "wall-clock times of explicit and fused attention along the context ladder"),
    "kv_decode": (
        {"step_ms_no_cache", "step_ms_cache", "step_ms_early_no_cache", "step_ms_early_cache",
         "step_ms_late_no_cache", "step_ms_late_cache", "step_growth_no_cache",
         "step_growth_cache", "step_slope_us_no_cache", "step_slope_us_cache", "runs_no_cache",
         "runs_cache", "ms_no_cache", "ms_cache", "spread_no_cache", "spread_cache",
         "prefill_ms", "gap_early", "gap_late", "speedup", "timing_ms",
         # how many runs it took before the per-step times settled
         "repeats"},
        "per-step and total decode times with and without the cache"),
    "generation_steps": (
        {"cached_ms", "full_ms", "speedup"},
        "the chosen step timed with the cache and as a full recompute"),
}


def _setting(name: str) -> dict:
    """The first setting the build bakes for this widget that is not its defaults."""
    spec = REGISTRY[name].SPEC
    return next(p for p in spec.bake_points() if p != spec.defaults())


@pytest.mark.parametrize("name", list(REGISTRY))
def test_the_notebook_finds_the_apis_values(client, name, tmp_path, monkeypatch):
    setting = _setting(name)
    spec = REGISTRY[name].SPEC
    query = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in setting.items()
             if v != spec.param(k).default}
    r = client.get(f"/api/widgets/{name}/notebook", query_string=query)
    assert r.status_code == 200, r.get_data(as_text=True)
    nb = nbformat.reads(r.get_data(as_text=True), as_version=4)
    api = client.post(f"/api/widgets/{name}", json=setting).get_json()

    # The kernel is this venv's python3 and inherits this environment: the book's weights from
    # the repository, as the first cell of a model widget's notebook tells a reader to do.
    monkeypatch.setenv("BOOK_WEIGHTS", str(ROOT / "backend/bookmodel/weights"))
    NotebookClient(nb, timeout=900, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    shown = [o for o in last.outputs if "application/json" in o.get("data", {})]
    assert len(shown) == 1, last.outputs
    got = json.loads(json.dumps(shown[0]["data"]["application/json"]))
    # The figure cell drew a Plotly figure.
    assert any("application/vnd.plotly.v1+json" in o.get("data", {})
               for c in nb.cells if c.cell_type == "code" for o in c.outputs)

    assert got["widget"] == name
    assert got["params"] == api["params"] == setting
    excluded = TIMED.get(name, (set(), ""))[0]
    assert excluded <= set(api["values"]), excluded - set(api["values"])  # no stale names
    want = {k: v for k, v in api["values"].items() if k not in excluded}
    have = {k: v for k, v in got["values"].items() if k not in excluded}
    assert have == want, {k: (have.get(k), want.get(k)) for k in set(have) | set(want)
                          if have.get(k) != want.get(k)}
