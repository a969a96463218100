"""Shared fixtures: the Flask app and client (flaskr style), and the built book; the markers
that `make test-fast` deselects, applied by folder, file and fixture."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The suite states CPU facts (the CPU's memory budget, "measured on cpu"): on a GPU host it
# still computes on the CPU unless told otherwise. The GPU has its own check,
# tests/container/gpu_smoke.sh.
os.environ.setdefault("BOOK_DEVICE", "cpu")

# Markers by where a test lives and what it asks for (pyproject.toml describes each), so that
# a new test in these places is marked without a decorator. Paths relative to tests/: a folder
# (ending in /) or one file.
BY_FIXTURE = {
    "built_site": ("build",),  # and everything that uses it: server, page, phone, ...
    "browser": ("browser",),
    "start_gunicorn": ("slow",),
    "slow_server": ("slow",),
}
BY_PATH = {
    "container/": ("container", "slow"),
    "deploy/test_compose.py": ("container", "slow"),
    "faults/": ("slow",),
    "app/test_schemathesis.py": ("slow",),
    # the attention-sink study: both models over the held-out sentences (a minute or more)
    "claims/test_attention_maps.py": ("slow",),
    # the training chapter: a dozen tiny models trained (about half a minute of one thread)
    "claims/test_training.py": ("slow",),
    "compute/test_train_live.py": ("slow",),
    # the files of the measured widgets (attention_cost, kv_decode, sequential_vs_parallel):
    # their values come with timings taken on this machine
    "claims/test_cost.py": ("timing",),
    "claims/test_cost_memory_time.py": ("timing",),
    "claims/test_kv_cache.py": ("timing",),
    "claims/test_recurrence.py": ("timing",),
    "compute/test_attention_cost.py": ("timing",),
    "compute/test_kv_decode.py": ("timing",),
    "compute/test_sequential_vs_parallel.py": ("timing",),
    # the book model's tests reproduce its training bit for bit, on its two threads
    "bookmodel/": ("threads",),
}


def _measured_widgets() -> set[str]:
    """The widgets that time themselves on this machine (`WidgetSpec.measured`)."""
    from backend.compute import REGISTRY

    return {name for name, module in REGISTRY.items() if module.SPEC.measured}


def pytest_collection_modifyitems(config, items):
    tests = ROOT / "tests"
    gpu = None
    measured = _measured_widgets()
    for item in items:
        path = Path(item.path)
        rel = path.relative_to(tests).as_posix() if path.is_relative_to(tests) else ""
        names = {n for where, marks in BY_PATH.items()
                 if rel == where or (where.endswith("/") and rel.startswith(where)) for n in marks}
        names |= {n for fixture, marks in BY_FIXTURE.items() if fixture in item.fixturenames
                  for n in marks}
        # a test parametrized over widgets, at a measured one (test_registry's, for instance);
        # not one that drives the built book, which checks the page, not the measured values
        params = getattr(item, "callspec", None)
        if (params and "build" not in names
                and measured & {v for v in params.params.values() if isinstance(v, str)}):
            names.add("timing")
        for name in sorted(names - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
        marks = {m.name for m in item.iter_markers()}
        if "build" in marks and marks & {"timing", "threads"}:
            # only the book lane builds the book: the timing lane, alone on the machine, would
            # spend its minutes building it again (it did: ten minutes of CI for six tests)
            raise pytest.UsageError(f"{item.nodeid}: marked {' and '.join(sorted(marks & {'timing', 'threads'}))} "
                                    "but needs the built book (tests/lanes.py runs those in the book lane)")
        if item.get_closest_marker("gpu"):
            if gpu is None:
                import torch

                gpu = torch.cuda.is_available()
            if not gpu:
                item.add_marker(pytest.mark.skip(reason="needs CUDA: torch sees no GPU here"))


@pytest.fixture()
def app(tmp_path):
    from backend.app import create_app

    return create_app({"TESTING": True, "SITE_DIR": str(tmp_path / "no-site")})


@pytest.fixture()
def client(app):
    return app.test_client()


@pytest.fixture()
def private_timing_lock(tmp_path, monkeypatch):
    """A timing lock of this test's own, so that a server's or another test's timings on this
    host never make a measurement here wait (or answer 503)."""
    from backend.compute import measure

    monkeypatch.setattr(measure, "LOCK_PATH", str(tmp_path / "timing.lock"))


@pytest.fixture()
def fresh_timings(private_timing_lock):
    """A private timing lock, and no timing remembered by a measured widget before or after."""
    from backend.compute import REGISTRY

    caches = [fn for fn in (getattr(m, "measure", None) for m in REGISTRY.values())
              if hasattr(fn, "cache_clear")]
    for fn in caches:
        fn.cache_clear()
    yield
    for fn in caches:
        fn.cache_clear()


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """`mkdocs build --strict` into a temporary folder, once per test session.

    The build executes every notebook and bakes every widget, so a failure here is a real
    failure of the book, reported with MkDocs' own output.

    `BOOK_TEST_SITE=<dir>` runs the tests against a book already built there instead (while
    working on one test: a full build takes minutes); `make test` never sets it."""
    given = os.environ.get("BOOK_TEST_SITE")
    if given:
        if not (Path(given) / "index.html").is_file():
            pytest.fail(f"BOOK_TEST_SITE={given} is not a built book")
        return Path(given)
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
    )
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return out
