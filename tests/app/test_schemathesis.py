"""Generated bad (and good) input from the OpenAPI document: schemathesis drives every
operation of `/api/openapi.json` through the WSGI app, offline, in positive and negative
modes: no 5xx, and every response (status, content type, body) conforms to the document.
Each widget's POST gets at least 1,000 generated requests; operations without parameters
(GET /api/health, /api/widgets, a widget's spec) have nothing to vary and get what
schemathesis generates for them.

The light widgets' thousands run against canned computations (`canned_compute`, an app of
their own): what is fuzzed there is what the server does with a request (parsing, validation,
errors, the document's schemas), not the arithmetic. A sample of `REAL_EXAMPLES` per operation
computes for real.

`BOOK_SCHEMATHESIS_EXAMPLES` overrides the number of examples per operation (default 1000),
`BOOK_SCHEMATHESIS_EXAMPLES_REAL` the real sample's (default 50)."""

from __future__ import annotations

import os
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from backend.app import create_app
from backend.compute import REGISTRY

EXAMPLES = int(os.environ.get("BOOK_SCHEMATHESIS_EXAMPLES", "1000"))
REAL_EXAMPLES = int(os.environ.get("BOOK_SCHEMATHESIS_EXAMPLES_REAL", "50"))
# Widgets that run whole models (or time real decoding) cost up to seconds a request: each
# still gets EXAMPLES generated requests, in negative mode (bodies the document forbids, which
# never reach a model), plus HEAVY_EXAMPLES valid ones that do compute
# (BOOK_SCHEMATHESIS_EXAMPLES_HEAVY=1000 for a full positive run).
HEAVY_EXAMPLES = int(os.environ.get("BOOK_SCHEMATHESIS_EXAMPLES_HEAVY", "25"))
HEAVY = [n for n, m in REGISTRY.items() if m.SPEC.cost_hint == "heavy"]
HEAVY_PATHS = "^/api/widgets/(" + "|".join(HEAVY) + ")$"
# Findings of this fuzzer not yet fixed: none. (It found a whitespace-only body answered with
# every default as if it were empty; only a body of zero bytes means "the defaults" now.)
KNOWN: dict[str, str] = {}
CONFIG = {"TESTING": True, "RATE_LIMIT": "", "SITE_DIR": "/nonexistent",
          "HEAVY_WAIT_SECONDS": 120.0, "COMPUTE_WAIT_SECONDS": 120.0}
# Two apps, so that the answers cached while computations are canned never answer a real run.
CANNED_APP, APP = create_app(CONFIG), create_app(CONFIG)


def _schema(app, negative_only: bool = False):
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", app)
    # Strings a client can send: encodable as UTF-8. Otherwise the fuzzer counts a lone
    # surrogate pair as two characters that JSON delivers as one, and calls 4,001 "characters"
    # accepted when the server (rightly) counted 4,000.
    schema.config.generation.update(
        codec="utf-8", **({"modes": [schemathesis.GenerationMode.NEGATIVE]} if negative_only else {}))
    # A body over the size limit is refused before it is parsed, with 413 (documented): that
    # is a rejection too, and the negative-data check counts it as one.
    reject = schema.config.checks.negative_data_rejection
    reject.expected_statuses = [*reject.expected_statuses, "413"]
    return schema


# A notebook (GET .../notebook) computes nothing but is a 100-200 KB answer to build: its
# query parameters get NOTEBOOK_EXAMPLES requests per widget, in both modes.
NOTEBOOK_EXAMPLES = int(os.environ.get("BOOK_SCHEMATHESIS_EXAMPLES_NOTEBOOK", "100"))
NOTEBOOK_PATHS = "^/api/widgets/[a-z_]+/notebook$"
notebook_schema = _schema(APP).include(path_regex=NOTEBOOK_PATHS)
# A widget's GET .../result?<setting> runs the POST's code after reading the query: its parsing
# gets RESULT_EXAMPLES requests per widget against canned light computations, both modes; the
# heavy widgets' only in negative mode (refused before any model runs). The POSTs above it keep
# their thousand each, and the real sample is theirs.
RESULT_EXAMPLES = int(os.environ.get("BOOK_SCHEMATHESIS_EXAMPLES_RESULT", "100"))
RESULT_PATHS = "^/api/widgets/[a-z_]+/result$"
HEAVY_RESULT_PATHS = "^/api/widgets/(" + "|".join(HEAVY) + ")/result$"
result_canned = (_schema(CANNED_APP).include(path_regex=RESULT_PATHS)
                 .exclude(path_regex=HEAVY_RESULT_PATHS))
result_heavy_negative = _schema(APP, negative_only=True).include(path_regex=HEAVY_RESULT_PATHS)
light_canned = (_schema(CANNED_APP).exclude(path_regex=HEAVY_PATHS)
                .exclude(path_regex=NOTEBOOK_PATHS).exclude(path_regex=RESULT_PATHS))
light_schema = (_schema(APP).exclude(path_regex=HEAVY_PATHS)
                .exclude(path_regex=NOTEBOOK_PATHS).exclude(path_regex=RESULT_PATHS))
heavy_schema = _schema(APP).include(path_regex=HEAVY_PATHS)  # both modes, HEAVY_EXAMPLES each
heavy_negative = _schema(APP, negative_only=True).include(path_regex=HEAVY_PATHS)
SENT: Counter = Counter()


def _check(case):
    op = f"{case.method} {case.path}"
    if op in KNOWN:
        pytest.xfail(KNOWN[op])
    SENT[op] += 1
    # Schema-valid input may still break a rule between parameters (heads must divide the
    # width; a layer index within the chosen model): the document states those in words and
    # in x-depends and lists 400 for them, which JSON Schema cannot express, so the check that
    # every schema-valid body is accepted is the one left out.
    response = case.call_and_validate(excluded_checks=[positive_data_acceptance])
    assert response.status_code < 500


SETTINGS = dict(deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))


@pytest.fixture()
def sends_every_example():
    """After a test of a widget's POST: it sent all EXAMPLES requests (Hypothesis stops early
    when it runs out of new inputs, and would then pass having sent fewer)."""
    before = SENT.copy()
    yield
    for op, n in (SENT - before).items():
        if op.startswith("POST /api/widgets/"):
            assert n >= EXAMPLES, f"{op}: {n} requests"


def _fuzz(schema, examples: int, canned: bool = False, counted: bool = False):
    """A test that sends up to `examples` generated requests to each operation of `schema` and
    checks every answer (`_check`); `canned`: against canned computations (`canned_compute`);
    `counted`: each widget's POST must get all EXAMPLES (`sends_every_example`)."""
    @schema.parametrize()
    @settings(max_examples=examples, **SETTINGS)
    def test(case):
        _check(case)
    fixtures = ["canned_compute"] * canned + ["sends_every_example"] * counted
    return pytest.mark.usefixtures(*fixtures)(test) if fixtures else test


# The two tests that send each widget's POST its thousand requests, counted.
COUNTED = (light_canned, heavy_negative)
test_every_response_conforms_and_none_is_a_5xx = _fuzz(light_canned, EXAMPLES, canned=True, counted=True)
test_every_response_conforms_computed_for_real = _fuzz(light_schema, REAL_EXAMPLES)
test_result_queries_conform_and_none_is_a_5xx = _fuzz(result_canned, RESULT_EXAMPLES, canned=True)
test_model_widgets_result_queries_refuse_what_the_document_forbids = _fuzz(
    result_heavy_negative, RESULT_EXAMPLES)
test_notebook_queries_conform_and_none_is_a_5xx = _fuzz(notebook_schema, NOTEBOOK_EXAMPLES)
test_model_widgets_refuse_what_the_document_forbids = _fuzz(heavy_negative, EXAMPLES, counted=True)
test_model_widgets_answer_valid_bodies = _fuzz(heavy_schema, HEAVY_EXAMPLES)


def test_each_widget_post_is_in_a_counted_test():
    """Every widget's POST is an operation of one of the COUNTED tests, which fail if it gets
    fewer than EXAMPLES requests."""
    counted = {op.ok().label for schema in COUNTED for op in schema.get_all_operations()}
    posts = {f"POST /api/widgets/{name}" for name in REGISTRY}
    assert posts - set(KNOWN) <= counted, sorted(posts - counted)
