"""The values lists read as one list (ux review P1): one unit for the sizes of a list (kv_cache
said "1.07 GB" beside "1,073,741,824 bytes"), and a difference of exactly 0 is said to be one
("0 (identical)"), never "0.0e+00", in the list and in the summary alike."""

from __future__ import annotations

import pytest

from backend.compute import REGISTRY

SIZES = {"bytes", "kB", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB"}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_one_size_unit_per_list(name):
    units = {o.unit for o in REGISTRY[name].SPEC.outputs if o.unit in SIZES}
    assert len(units) <= 1, (name, units)


def test_parity_says_an_exact_zero_is_identical():
    m = REGISTRY["parity"]
    r = m.compute({p.name: p.default for p in m.SPEC.params})
    zero = [o for o in m.SPEC.outputs if r["values"][o.name] == 0]
    assert zero, "at the defaults, some difference is exactly 0 (the same weights, float32)"
    assert all(o.zero == "0 (identical)" for o in zero)
    assert "e+00" not in r["summary"] and "0 (identical)" in r["summary"], r["summary"]
    assert all(o.to_json().get("zero") == "0 (identical)" for o in zero)  # the page gets it
