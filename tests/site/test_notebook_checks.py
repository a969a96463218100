"""The exercise pages as the build ran them: every task's check said "not done yet" for the answer
left at None, every solution's check said "right", and the page leaves out the checker's text
(mkdocs.yml: remove_input_tags: checker) while the downloadable notebook keeps it."""

import ast
import html
import json

from tests.conftest import ROOT

NOTEBOOKS = sorted((ROOT / "docs/exercises").glob("*.ipynb"))


def _solution_labels(nb: dict) -> list[str]:
    labels = []
    for cell in nb["cells"]:
        if "solution" in cell["metadata"].get("tags", []):
            for node in ast.walk(ast.parse("".join(cell["source"]))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check":
                    labels.append(ast.literal_eval(node.args[0]))
    return labels


def test_each_page_ran_its_tasks_and_solutions(built_site):
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        page = html.unescape((built_site / "exercises" / path.stem / "index.html").read_text(encoding="utf-8"))
        labels = _solution_labels(nb)
        assert labels, path.name
        for label in labels:
            assert f"… {label}: not done yet" in page, (path.name, label)   # the answer cell, None
            assert f"✓ {label}: right" in page, (path.name, label)          # the solution cell
        assert "✗ " not in page.replace('f"✗ ', ""), path.name                # no check said "off"


def test_the_page_leaves_the_checker_out_and_the_download_keeps_it(built_site):
    standalone = 0
    for path in NOTEBOOKS:
        page = (built_site / "exercises" / path.stem / "index.html").read_text(encoding="utf-8")
        download = (built_site / "exercises" / path.stem / path.name).read_text(encoding="utf-8")
        assert "class Verdict" not in page, path.name
        if "# The book's answer checker" in download:
            standalone += 1
            assert "Checking your answers" in page, path.name
    assert standalone == 12
