"""The node tests' shared cases (tests/js/cases/*.json) are what Python answers today: its own
`format` and backend/compute/spec.py. A spec, a rule or a format that changes makes this fail
until the cases are written again (`.venv/bin/python tests/js/cases.py`), so the runtime is then
checked against the new answers by `node --test tests/js` (run by `make test`)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("js_cases", Path(__file__).with_name("cases.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


def _close(value):
    """Floats to 4 significant figures: a question's expected answer computed by torch moves in
    its 6th figure from one CPU to another (attention-maps.3: 8.06092 here, 8.06087 there); a
    case that changes matters at the tolerances questions use (1 % and up)."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, list):
        return [_close(v) for v in value]
    if isinstance(value, dict):
        return {k: _close(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name", sorted(cases.GENERATORS))
def test_the_shared_cases_are_what_python_answers(name):
    on_disk = json.loads((cases.HERE / name).read_text(encoding="utf-8"))
    now = json.loads(json.dumps(cases.GENERATORS[name]()))
    assert _close(on_disk) == _close(now), \
        f"tests/js/cases/{name} is stale: run .venv/bin/python tests/js/cases.py"

