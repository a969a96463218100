"""`make serve` builds the book only when something the build reads changed
(widgets/build/inputs.py): here on a small tree of its own, every kind of input is changed once
and must make the built site stale; a failed build records nothing."""

from __future__ import annotations

import sys

import pytest

from widgets.build import inputs


@pytest.fixture
def tree(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    for rel in ["mkdocs.yml", "docs/chapters/a.md", "widgets/build/hooks.py", "backend/compute/w.py",
                "requirements.txt", "package-lock.json"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"{rel}\n")
    (root / "site").mkdir()
    monkeypatch.setattr(inputs, "ROOT", root)
    monkeypatch.setattr(inputs, "RECORD", root / ".cache" / "site-inputs")
    monkeypatch.delenv("BOOK_API_URL", raising=False)
    return root


def _build(root, ok=True):
    """A stand-in for mkdocs: writes the site's index, or fails."""
    code = f"import pathlib; pathlib.Path({str(root / 'site' / 'index.html')!r}).write_text('x')"
    return inputs.main(["--build", str(root / "site"), "--",
                        sys.executable, "-c", code if ok else "raise SystemExit(3)"])


def _current(root) -> bool:
    return inputs.main(["--check", str(root / "site")]) == 0


def test_an_unchanged_tree_needs_no_build(tree):
    assert not _current(tree)  # never built
    assert _build(tree) == 0
    assert _current(tree) and _current(tree)


@pytest.mark.parametrize("change", ["docs/chapters/a.md", "widgets/build/hooks.py",
                                    "backend/compute/w.py", "mkdocs.yml", "requirements.txt",
                                    "docs/exercises/new.ipynb"])
def test_a_changed_input_needs_a_build(tree, change):
    _build(tree)
    (tree / change).parent.mkdir(parents=True, exist_ok=True)
    (tree / change).write_text("changed\n")
    assert not _current(tree)


def test_a_book_setting_in_the_environment_needs_a_build(tree, monkeypatch):
    _build(tree)
    monkeypatch.setenv("BOOK_API_URL", "https://api.example.edu/api")
    assert not _current(tree)


def test_bytecode_and_a_missing_site_are_told_apart(tree):
    _build(tree)
    (tree / "backend/compute/__pycache__").mkdir()
    (tree / "backend/compute/__pycache__/w.cpython-311.pyc").write_bytes(b"\0")
    assert _current(tree)  # Python's own caches are not inputs
    (tree / "site" / "index.html").unlink()
    assert not _current(tree)


def test_a_failed_build_records_nothing(tree):
    assert _build(tree) == 0
    (tree / "docs/chapters/a.md").write_text("changed\n")
    assert _build(tree, ok=False) == 3
    assert not _current(tree)
    (tree / "docs/chapters/a.md").write_text("docs/chapters/a.md\n")
    assert not _current(tree)  # the failed build dropped the old record: the site may be half-written
