"""The values panel (widgets/runtime/format.js `formatValue`) spells a number as the prose does
(Python's `format`), for every format the specs use: the JS mirror is run in node against Python
itself."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from backend.compute import REGISTRY

FORMAT_JS = Path(__file__).resolve().parents[2] / "widgets" / "runtime" / "format.js"


def spec_formats() -> set[str]:
    return {o.fmt for m in REGISTRY.values() for o in m.SPEC.outputs if o.fmt} | {".3g", ".4g"}


def numbers() -> list[float]:
    rng = random.Random(7)
    fixed = [0.0, 1.0, -1.0, 0.5, 2.5, 999.5, 999.95, 1234.5, 0.125, 0.375, 2.5e-7, 2.68e8, 1e-4, 9.9999e-5,
             0.00012345, 123456789.0, 131072.0, 1073741824.0, 0.0731, 41.99, 99.999, 1e15,
             12.345, 0.999, 1e-12, 3.0517578125e-05]
    drawn = [rng.choice([-1, 1]) * 10 ** rng.uniform(-9, 12) for _ in range(400)]
    drawn += [float(rng.randint(0, 10 ** rng.randint(1, 10))) for _ in range(100)]
    return fixed + drawn


@pytest.mark.skipif(not shutil.which("node"), reason="node is not installed")
def test_format_value_matches_python_for_every_spec_format():
    cases = []
    for fmt in sorted(spec_formats()):
        for x in numbers():
            if fmt.endswith("d") and not float(x).is_integer():
                continue
            value = int(x) if fmt.endswith("d") else x
            cases.append([x, fmt, format(value, fmt)])
    script = ("const { formatValue } = await import(process.argv[1]);\n"
              "const { readFileSync } = await import('node:fs');\n"
              "const cases = JSON.parse(readFileSync(0, 'utf8'));\nconst bad = cases.filter(([x, f, want]) => "
              "formatValue(x, f) !== want).map(([x, f, want]) => [x, f, want, formatValue(x, f)]);"
              "\nconsole.log(JSON.stringify({n: cases.length, bad: bad}));")
    out = subprocess.run(["node", "--input-type=module", "-e", script, FORMAT_JS.as_uri()],
                         input=json.dumps(cases), capture_output=True, text=True, timeout=60,
                         check=True)
    result = json.loads(out.stdout)
    assert result["n"] > 3000
    # Exact binary ties (0.5, 1234.5, 0.125) round half-even in both.
    assert result["bad"] == [], result["bad"][:10]
    assert math.isfinite(result["n"])
