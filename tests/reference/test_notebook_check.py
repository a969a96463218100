"""check() (backend/reference/notebook_check.py), the answer checker of the exercise notebooks,
and its copies: every standalone notebook carries the module's text as it is."""

import json
import math
import subprocess
import sys

import numpy as np
import torch

from backend.reference.notebook_check import check
from tests.conftest import ROOT
from widgets.build import sync_check

NOTEBOOKS = sorted((ROOT / "docs/exercises").glob("*.ipynb"))


def _said(capsys, *args, **kw):
    verdict = check(*args, **kw)
    out = capsys.readouterr().out.strip()
    assert out == verdict.message
    return verdict, out


# ------------------------------------------------------------------ what check() says

def test_right_within_the_tolerance(capsys):
    verdict, out = _said(capsys, "Var", 64, 64.03, rel=0.1)
    assert verdict and verdict.state == "right"
    assert out == "✓ Var: right. Yours 64, the book's 64.03."


def test_too_high_says_by_how_much_and_the_tolerance(capsys):
    verdict, out = _said(capsys, "x", 3.3, 3.0, rel=0.05)
    assert not verdict and verdict.state == "off"
    assert "0.3 (10.00%) too high" in out and "the book's is 3" in out and "±0.15" in out


def test_too_low_says_low(capsys):
    verdict, out = _said(capsys, "x", 2.0, 3.0, abs=0.5)
    assert not verdict
    assert "1 (33.33%) too low" in out and "±0.5" in out


def test_none_and_ellipsis_are_not_done_yet_never_an_error(capsys):
    for stub in (None, ...):
        verdict, out = _said(capsys, "the loss", stub, 5.5)
        assert verdict.state == "not done" and not verdict
        assert out.startswith("… the loss: not done yet")


def test_whole_numbers_are_exact_unless_told(capsys):
    assert _said(capsys, "rows", 80_200, 80_200)[0]
    verdict, out = _said(capsys, "rows", 80_201, 80_200)
    assert not verdict and "wants it exact" in out and "80,201" in out
    verdict, out = _said(capsys, "rows", 80_200.0, 80_200)   # a float that is the whole number
    assert verdict and out == "✓ rows: right (80,200)."      # written the same: said once
    assert _said(capsys, "rows", 80_201, 80_200, abs=1)[0]


def test_floats_without_a_tolerance_match_up_to_rounding(capsys):
    assert _said(capsys, "p", 0.1 + 0.2, 0.3)[0]          # not bit for bit: 0.30000000000000004
    assert not _said(capsys, "p", 0.3001, 0.3)[0]


def test_tensors_and_arrays_element_by_element(capsys):
    assert _said(capsys, "w", torch.tensor([0.1373, 0.3057, 0.557]), [0.137, 0.306, 0.557], abs=1e-3)[0]
    assert _said(capsys, "w", np.array([[1, 2], [3, 4]]), torch.tensor([[1, 2], [3, 4]]))[0]
    verdict, out = _said(capsys, "w", np.array([[1, 2], [3, 5]]), [[1, 2], [3, 4]])
    assert not verdict and "1 of 4 entries are off; entry 3: yours, 5, is 1 (25.00%) too high" in out
    assert _said(capsys, "shape", torch.Size([16, 50, 26]), (16, 50, 26))[0]
    assert _said(capsys, "0-d", torch.tensor(5), 5)[0] and _said(capsys, "np", np.float64(2.5), 2.5)[0]


def test_a_wrong_length_is_said_not_raised(capsys):
    verdict, out = _said(capsys, "w", [1, 2], [1, 2, 3])
    assert not verdict and "yours has 2 numbers, the book's 3" in out
    assert not _said(capsys, "w", 1.0, [1.0, 2.0])[0]


def test_nan(capsys):
    assert _said(capsys, "pad row", [math.nan] * 4, [float("nan")] * 4)[0]
    assert _said(capsys, "pad row", torch.full((4,), float("nan")), [float("nan")] * 4)[0]
    verdict, out = _said(capsys, "pad row", [0.25] * 4, [float("nan")] * 4)
    assert not verdict and "nan" in out
    verdict, out = _said(capsys, "loss", float("nan"), 2.7, abs=0.1)
    assert not verdict and "yours is nan" in out


def test_infinity_only_equals_itself(capsys):
    assert _said(capsys, "s", float("-inf"), float("-inf"))[0]
    assert not _said(capsys, "s", 1e308, float("inf"), rel=0.5)[0]


def test_words_and_choices(capsys):
    assert _said(capsys, "word", " Bank", "bank")[0]
    assert not _said(capsys, "word", "river", "bank")[0]
    assert _said(capsys, "differ", False, False)[0]
    assert not _said(capsys, "differ", True, False)[0]
    assert not _said(capsys, "differ", 0, False)[0]       # a number is not the answer False
    verdict, out = _said(capsys, "n", "twelve", 12)
    assert not verdict and "'twelve'" in out


def test_jupyter_shows_no_second_line():
    """A check on a cell's last line returns the Verdict; Jupyter calls _ipython_display_ and
    shows nothing more (the message is printed already)."""
    assert check("x", 1, 1)._ipython_display_() is None


# ------------------------------------------------------------------ one source, copied

def test_every_standalone_notebook_carries_the_module_as_it_is():
    want = sync_check.as_lines(sync_check.checker_source())
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        cells = sync_check.checker_cells(nb)
        if "backend.reference" in code or "backend.bookmodel" in code:
            assert not cells, f"{path.name} runs from a clone: import check, carry no copy"
            assert "from backend.reference.notebook_check import check" in code, path.name
            continue
        assert len(cells) == 1, f"{path.name}: one checker cell (run widgets/build/sync_check.py)"
        assert cells[0]["source"] == want, (
            f"{path.name}: its check() differs from backend/reference/notebook_check.py; "
            "run .venv/bin/python -m widgets.build.sync_check")
        assert cells[0]["metadata"] == sync_check.METADATA  # collapsed, and tagged "checker"


def test_sync_check_reports_a_stale_copy_and_rewrites_it(tmp_path, monkeypatch):
    """The script finds a copy that differs (--check) and rewrites it from the module."""
    for path in NOTEBOOKS:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    monkeypatch.setattr(sync_check, "NOTEBOOKS", tmp_path)
    assert sync_check.sync(check_only=True) == []
    target = tmp_path / "01-variance.ipynb"
    nb = json.loads(target.read_text(encoding="utf-8"))
    cell = sync_check.checker_cells(nb)[0]
    cell["source"] = [line.replace("rel = 1e-6", "rel = 1e-2") for line in cell["source"]]
    target.write_text(sync_check.dump(nb), encoding="utf-8")
    assert sync_check.sync(check_only=True) == [target]
    assert sync_check.sync() == [target]
    assert sync_check.sync(check_only=True) == []
    assert target.read_bytes() == (ROOT / "docs/exercises/01-variance.ipynb").read_bytes()


def test_the_copy_runs_with_the_standard_library_alone():
    """A reader's laptop has no repository: the copied text must need nothing but Python."""
    probe = sync_check.checker_source() + "\nassert check('x', 2, 2)\n"
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "✓ x: right (2)."


def test_every_notebook_has_checked_tasks_with_collapsed_solutions():
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        checks = sum("".join(c["source"]).count("check(") for c in code
                     if c not in sync_check.checker_cells(nb))
        solutions = [c for c in code if "solution" in c["metadata"].get("tags", [])]
        assert checks >= 2 and solutions, path.name
        for c in solutions:
            assert c["metadata"]["jupyter"]["source_hidden"] is True, path.name
            assert "assert check(" in "".join(c["source"]), path.name  # the build runs it
        assert all(not c.get("outputs") for c in code), f"{path.name}: outputs are the build's"
