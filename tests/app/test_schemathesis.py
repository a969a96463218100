"""Generated bad (and good) input from the OpenAPI document: schemathesis drives every
operation of `/api/openapi.json` through the WSGI app, offline, in positive and negative
modes: no 5xx, and every response (status, content type, body) conforms to the document.
Each widget's POST gets at least 1,000 generated requests; operations without parameters
(GET /api/health, /api/widgets, a widget's spec) have nothing to vary and get what
schemathesis generates for them.

`BOOK_SCHEMATHESIS_EXAMPLES` overrides the number of examples per operation (default 1000)."""

from __future__ import annotations

import os
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from backend.app import create_app
from backend.widgets import REGISTRY

EXAMPLES = int(os.environ.get("BOOK_SCHEMATHESIS_EXAMPLES", "1000"))
APP = create_app({"TESTING": True, "RATE_LIMIT": "", "SITE_DIR": "/nonexistent",
                  "HEAVY_WAIT_SECONDS": 120.0, "COMPUTE_WAIT_SECONDS": 120.0})
schema = schemathesis.openapi.from_wsgi("/api/openapi.json", APP)
SENT: Counter = Counter()


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_every_response_conforms_and_none_is_a_5xx(case):
    SENT[f"{case.method} {case.path}"] += 1
    # Schema-valid input may still break a rule between parameters (heads must divide the
    # width; a layer index within the chosen model): the document states those in words and
    # in x-depends and lists 400 for them, which JSON Schema cannot express, so the check that
    # every schema-valid body is accepted is the one left out.
    response = case.call_and_validate(excluded_checks=[positive_data_acceptance])
    assert response.status_code < 500


def test_each_widget_post_got_a_thousand_requests():
    if not SENT:
        pytest.skip("the schemathesis tests did not run in this session")
    print({k: v for k, v in sorted(SENT.items())})
    for name in REGISTRY:
        assert SENT[f"POST /api/widgets/{name}"] >= min(EXAMPLES, 1000), name
