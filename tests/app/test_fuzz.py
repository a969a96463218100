"""Property test: nothing a client can send to any widget makes the server answer 5xx.

Hypothesis generates arbitrary JSON (and arbitrary bytes) and a mix of valid and invalid
parameter values drawn from each widget's spec; every answer must be a JSON 2xx or 4xx. The bulk
(`EXAMPLES` a widget) runs against canned computations (`canned_compute`: what the server does
with a request, not the computation, is under test there); a sample of `REAL_EXAMPLES` a widget
computes for real.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.app import create_app
from backend.compute import REGISTRY

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8),
                                                                       children, max_size=4),
    max_leaves=10,
)


def param_values(p):
    """Around the edges of a parameter's allowed values, plus junk of every JSON type."""
    valid = {
        "int": st.integers(int(p.min or 0) - 3, int(p.max or 0) + 3) if p.type == "int" else None,
        "float": st.floats(p.min - 1, p.max + 1) if p.type == "float" else None,
        "bool": st.booleans(),
        "choice": st.sampled_from(list(p.options) + ["", "nope"]) if p.options else None,
        "text": st.text(max_size=80),
    }[p.type]
    return st.one_of(valid, json_values)


def bodies(spec):
    return st.fixed_dictionaries({}, optional={p.name: param_values(p) for p in spec.params}) \
        | json_values


@pytest.fixture(scope="module")
def fuzz_client(tmp_path_factory):
    app = create_app({"TESTING": True, "RATE_LIMIT": "",
                      "SITE_DIR": str(tmp_path_factory.mktemp("site"))})
    return app.test_client()


LIGHT = [n for n, m in REGISTRY.items() if m.SPEC.cost_hint == "light"]
EXAMPLES, REAL_EXAMPLES = 150, 20


def _fuzz(client, name, examples):
    spec = REGISTRY[name].SPEC

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(body=bodies(spec))
    def check(body):
        r = client.post(f"/api/widgets/{name}", data=json.dumps(body),
                        content_type="application/json")
        assert r.status_code in (200, 400), (body, r.status_code, r.get_data(as_text=True))
        assert ("error" in r.get_json()) == (r.status_code == 400)

    check()


@pytest.mark.parametrize("name", LIGHT)
def test_no_client_input_makes_a_5xx(fuzz_client, canned_compute, name):
    _fuzz(fuzz_client, name, EXAMPLES)


@pytest.mark.parametrize("name", LIGHT)
def test_no_client_input_makes_a_5xx_computed_for_real(tmp_path, name):
    # an app of its own: the canned answers cached by fuzz_client's never answer here
    app = create_app({"TESTING": True, "RATE_LIMIT": "", "SITE_DIR": str(tmp_path / "site")})
    _fuzz(app.test_client(), name, REAL_EXAMPLES)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(raw=st.binary(max_size=200))
def test_arbitrary_bytes_are_answered_with_json(fuzz_client, raw):
    r = fuzz_client.post("/api/widgets/attention_scaling", data=raw,
                         content_type="application/json")
    assert r.status_code in (200, 400)
    assert r.is_json
