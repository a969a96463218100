"""Copy the answer checker (backend/reference/notebook_check.py) into every standalone notebook.

A standalone exercise notebook runs on a reader's laptop without the repository, so it carries
check() itself, in a cell of its own that starts with HEADER. This script rewrites that cell from
the one source; `--check` only reports the notebooks whose copy differs (exit status 1), as
tests/reference/test_notebook_check.py does. Notebooks that run from a clone import the module
instead and have no such cell.

    .venv/bin/python -m widgets.build.sync_check [--check]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "backend" / "reference" / "notebook_check.py"
NOTEBOOKS = ROOT / "docs" / "exercises"
HEADER = ("# The book's answer checker: a copy of backend/reference/notebook_check.py in the book's\n"
          "# repository, kept equal to it by widgets/build/sync_check.py. Run it; no need to read it.\n")


def checker_source() -> str:
    """What the checker cell must hold: the header, then the module's text as it is."""
    return HEADER + SOURCE.read_text(encoding="utf-8").rstrip("\n")


# Collapsed in Jupyter; the tag lets the book's page leave out the cell's text (mkdocs-jupyter's
# remove_tag_config: remove_input_tags), which the reader of the page has no use for.
METADATA = {"jupyter": {"source_hidden": True}, "tags": ["checker"]}


def checker_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"
            and "".join(c["source"]).startswith(HEADER.splitlines()[0])]


def as_lines(text: str) -> list[str]:
    """A notebook's way of storing a cell's text: its lines, each but the last with its newline."""
    return text.splitlines(keepends=True)


def dump(nb: dict) -> str:
    """The notebooks' own JSON layout (one-space indent, characters as they are)."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def sync(check_only: bool = False) -> list[Path]:
    """Rewrite (or, check_only, list) the notebooks whose checker cell differs from the module."""
    want = as_lines(checker_source())
    stale = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = checker_cells(nb)
        if len(cells) > 1:
            raise SystemExit(f"{path.name}: {len(cells)} checker cells; keep one")
        if not cells or (cells[0]["source"] == want and cells[0]["metadata"] == METADATA):
            continue
        stale.append(path)
        if not check_only:
            cells[0]["source"], cells[0]["metadata"] = want, METADATA
            path.write_text(dump(nb), encoding="utf-8")
    return stale


if __name__ == "__main__":
    check_only = "--check" in sys.argv[1:]
    changed = sync(check_only)
    for path in changed:
        print(("stale: " if check_only else "updated: ") + str(path.relative_to(ROOT)))
    sys.exit(1 if check_only and changed else 0)
