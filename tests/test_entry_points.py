"""The server and the notebooks import the book's code without editing sys.path: the server runs
from the repository root (`python -m backend.serve`, gunicorn started there), and a downloaded
notebook registers the package it writes by name (backend/app/notebook.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# an insert, append or assignment, in code or in the code a notebook is given (a string here)
EDIT = re.compile(r"\bsys\.path\s*(?:\.\s*(?:insert|append|extend)\s*\(|\+?=[^=])")


def test_no_module_of_the_server_edits_sys_path():
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "backend").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if EDIT.search(line)]
    assert not found, f"sys.path edited in {found}"


def test_the_pattern_sees_the_edits_it_forbids():
    assert EDIT.search('sys.path.insert(0, str(ROOT))')
    assert EDIT.search('    sys.path.append(str(SRC))')
    assert EDIT.search('sys.path += ["x"]') and EDIT.search("sys.path = [p]")
    assert not EDIT.search("if str(SRC) not in sys.path:") and not EDIT.search("sys.path == x")
