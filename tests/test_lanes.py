"""`make test`'s lanes (tests/lanes.py) run every test exactly once: for every combination of the
suite's markers exactly one lane's `-m` expression selects it, and a `timing` test's lane is
the one that runs alone, as is a `threads` test's."""

from __future__ import annotations

import itertools
import sys
import tomllib
from pathlib import Path

from _pytest.mark.expression import Expression

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import lanes  # noqa: E402

MARKERS = [m.split(":")[0] for m in tomllib.loads((ROOT / "pyproject.toml").read_text())
           ["tool"]["pytest"]["ini_options"]["markers"]]


def _selects(expression: str, marks: set[str]) -> bool:
    return Expression.compile(expression).evaluate(lambda name, **_: name in marks)


def test_every_combination_of_markers_runs_in_exactly_one_lane():
    assert {"build", "browser", "container", "timing", "threads", "slow", "gpu"} <= set(MARKERS)
    every = {**lanes.SIDE_BY_SIDE, **lanes.ALONE}
    for n in range(len(MARKERS) + 1):
        for marks in map(set, itertools.combinations(MARKERS, n)):
            chosen = [name for name, mark in every.items() if _selects(mark, marks)]
            assert len(chosen) == 1, (sorted(marks), chosen)
            if marks & {"timing", "threads"}:
                assert chosen[0] in lanes.ALONE, sorted(marks)
            elif marks & {"build", "browser", "container"}:  # only that lane builds the book
                assert chosen == ["book"], sorted(marks)



def test_every_path_the_markers_name_exists():
    """conftest marks by path; a moved test file would otherwise leave its lane silently."""
    import conftest

    for where in conftest.BY_PATH:
        assert (ROOT / "tests" / where).exists(), where


def test_a_failed_lanes_summary_is_its_short_test_summary():
    log = ("tests/a.py F.\n=== FAILURES ===\n_ test_x _\nE   assert 1 == 2\n"
           "=========================== short test summary info ============================\n"
           "FAILED tests/a.py::test_x - assert 1 == 2\n=== 1 failed, 1 passed in 2.00s ===\n")
    got = lanes.summary(log)
    assert got.startswith("=====") and "FAILED tests/a.py::test_x - assert 1 == 2" in got
    assert "E   assert" not in got
    assert lanes.summary("collection crashed\n" * 400).endswith("collection crashed")


def test_the_slowest_files_add_up_each_files_tests(tmp_path):
    junit = tmp_path / "lane.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.site.test_print" name="test_a" time="2.5" />'
        '<testcase classname="tests.app.test_x.TestGroup" name="test_b" time="4.0" />'
        '<testcase classname="tests.site.test_print" name="test_c" time="2.0" />'
        '<testcase classname="tests.test_lanes" name="test_d" />'
        '</testsuite></testsuites>')
    assert lanes.by_file(junit) == [("tests/site/test_print.py", 4.5),
                                    ("tests/app/test_x.py", 4.0), ("tests/test_lanes.py", 0.0)]
