"""GET /api/widgets/<name>/result: the POST's answer as a request browsers and nginx may keep.

The pages send every slider move through it (widgets/runtime/scheduler.js), so these tests hold
what caching it relies on: the same answer as the POST, one URL per setting as the runtime writes
it (checked by running the runtime's own `settingQuery` in node), headers that let a cache keep
it, and a 304 that costs no computation."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from werkzeug.datastructures import MultiDict

from backend.app import result_cache
from backend.app.query import params_from_query
from backend.compute import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
LIGHT = [n for n, m in REGISTRY.items() if m.SPEC.cost_hint == "light"]


def _get(client, name: str, query: str = "", **headers):
    return client.get(f"/api/widgets/{name}/result" + (f"?{query}" if query else ""),
                      headers=headers)


@pytest.mark.parametrize("name, query, body", [
    ("attention_scaling", "d_k=256", {"d_k": 256}),
    ("rmsnorm", "offset=5&upcast=false", {"offset": 5, "upcast": False}),
    ("multi_head", "", {}),
])
def test_the_answer_is_the_posts(client, name, query, body):
    got = _get(client, name, query)
    assert got.status_code == 200, got.get_json()
    post = client.post(f"/api/widgets/{name}", json=body).get_json()
    got = got.get_json()
    assert got["params"] == post["params"]
    assert got["values"] == post["values"] and got["figure"] == post["figure"]
    assert post["cached"] is True  # the GET computed it, the POST found it: one result cache


def test_a_cache_may_keep_it_and_a_304_costs_no_computation(client, monkeypatch):
    module = REGISTRY["attention_scaling"]
    calls = []
    real = module.compute
    monkeypatch.setattr(module, "compute", lambda p: calls.append(p) or real(p))
    first = _get(client, "attention_scaling", "d_k=32")
    assert first.status_code == 200 and len(calls) == 1
    assert first.headers["Cache-Control"] in ("public, max-age=600", "max-age=600, public")
    tag = first.headers["ETag"]
    assert tag.startswith('W/"')
    with client.application.app_context():  # a revalidation needs no result, cached or not
        result_cache.get().cache.clear()
    again = _get(client, "attention_scaling", "d_k=32", **{"If-None-Match": tag})
    assert again.status_code == 304 and again.data == b"" and len(calls) == 1
    assert again.headers["ETag"] == tag and "max-age=600" in again.headers["Cache-Control"]
    # another setting is another validator, and a stale one gets the answer
    other = _get(client, "attention_scaling", "d_k=64", **{"If-None-Match": tag})
    assert other.status_code == 200 and other.headers["ETag"] != tag and len(calls) == 2


def test_the_validator_names_the_setting_not_how_it_was_written(client):
    a = _get(client, "rmsnorm", "upcast=false&offset=5")
    b = _get(client, "rmsnorm", "offset=5.0&upcast=0&scale=1")
    assert a.status_code == b.status_code == 200
    assert a.headers["ETag"] == b.headers["ETag"]


def test_a_measured_widget_is_kept_no_longer_than_the_server_keeps_it(client, monkeypatch):
    """A widget whose answer is a timing of one moment (`result_ttl`, as kv_decode's) is kept by
    browsers and proxies no longer than by the server's own cache."""
    module = REGISTRY["rmsnorm"]
    monkeypatch.setattr(module, "SPEC", dataclasses.replace(module.SPEC, result_ttl=30))
    r = _get(client, "rmsnorm", "offset=7")
    assert r.status_code == 200
    assert "max-age=30" in r.headers["Cache-Control"]


# Bad settings (400, the POST's words, not kept by a cache): tests/app/test_notebook.py, for
# both routes that read a setting from a query.


def test_unknown_widget_is_404(client):
    assert _get(client, "no_such_widget").status_code == 404


def _runtime_queries(cases: list[dict]) -> list[str]:
    """The runtime's own settingQuery (widgets/runtime/spec.js), run by node."""
    script = ("import { settingQuery } from './widgets/runtime/spec.js';\n"
              "let s = ''; process.stdin.on('data', d => s += d).on('end', () => {\n"
              "  const cases = JSON.parse(s);\n"
              "  process.stdout.write(JSON.stringify(cases.map(c => settingQuery(c.spec, c.params))));\n"
              "});\n")
    out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=ROOT,
                         input=json.dumps(cases), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_runtimes_query_is_the_setting_it_was_made_from():
    """Every widget's defaults and bake points (the settings the pages start from and fall back
    to), written by the runtime's settingQuery and read by the server, are the same setting:
    JavaScript's String() of a number, a bool or a sentence parses back to the same value."""
    cases = []
    for name, module in sorted(REGISTRY.items()):
        spec = module.SPEC
        settings = [spec.defaults(), *spec.bake_points()]
        for params in settings:
            resolved = spec.resolve(params)
            cases.append({"name": name, "spec": spec.to_json(), "params": resolved})
    assert len(cases) > 60
    queries = _runtime_queries(cases)
    for case, q in zip(cases, queries, strict=True):
        spec = REGISTRY[case["name"]].SPEC
        pairs = parse_qsl(q, keep_blank_values=True)
        assert [k for k, _ in pairs] == [p.name for p in spec.params]  # all of them, in order
        assert params_from_query(spec, MultiDict(pairs)) == case["params"], (case["name"], q)
