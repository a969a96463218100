"""Shared fixtures: the Flask app and client (flaskr style), and the built book."""

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


@pytest.fixture()
def app(tmp_path):
    from backend.app import create_app

    return create_app({"TESTING": True, "SITE_DIR": str(tmp_path / "no-site")})


@pytest.fixture()
def client(app):
    return app.test_client()


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
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return out
