"""`GET /api/widgets` and `GET /api/widgets/<name>`: the serving process's own spec (the pages
adopt it over the one baked at build time, see widgets/runtime/live-spec.js `liveSpecs`),
cacheable for a few minutes, made once per process."""

from __future__ import annotations

import gzip
import importlib

from backend.compute import REGISTRY, attention_cost
from backend.compute import attention_map as am
from backend.compute.spec import WidgetSpec


def _param(spec: dict, name: str) -> dict:
    return next(p for p in spec["params"] if p["name"] == name)


def test_every_spec_answer_is_this_process_spec(client):
    listing = client.get("/api/widgets").get_json()["widgets"]
    assert [w["name"] for w in listing] == list(REGISTRY)
    for w in listing:
        assert w == client.get(f"/api/widgets/{w['name']}").get_json()
        assert w == REGISTRY[w["name"]].SPEC.to_json()
    # the ceiling this device sets, as the API validates with it and /api/health reports it
    context = _param(client.get("/api/widgets/attention_cost").get_json(), "context_len")
    health = client.get("/api/health").get_json()
    assert context["max"] == attention_cost.CEILING == \
        health["limits"]["attention_cost"]["max_context_len"]
    over = client.post("/api/widgets/attention_cost", json={"context_len": context["max"] + 1})
    assert over.status_code == 400


def test_spec_answers_are_cacheable_for_minutes_and_revalidate(client):
    for url in ("/api/widgets", "/api/widgets/attention_cost"):
        r = client.get(url)
        assert r.status_code == 200 and r.mimetype == "application/json"
        assert r.cache_control.public and r.cache_control.max_age == 300
        etag, _weak = r.get_etag()
        assert etag
        again = client.get(url, headers={"If-None-Match": f'"{etag}"'})
        assert again.status_code == 304 and again.data == b""
        assert client.get(url, headers={"If-None-Match": '"other"'}).status_code == 200


def test_spec_answers_are_gzipped_for_clients_that_accept_it(client):
    plain = client.get("/api/widgets")
    packed = client.get("/api/widgets", headers={"Accept-Encoding": "gzip, deflate"})
    assert packed.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in packed.headers["Vary"] and "Accept-Encoding" in plain.headers["Vary"]
    assert gzip.decompress(packed.data) == plain.data
    assert len(packed.data) < len(plain.data) / 3
    assert packed.get_etag()[0] != plain.get_etag()[0]  # one validator per representation
    assert "Content-Encoding" not in client.get(
        "/api/widgets", headers={"Accept-Encoding": "gzip;q=0"}).headers


def test_a_spec_is_serialised_once_per_process(client, monkeypatch):
    client.get("/api/widgets")
    client.get("/api/widgets/attention_map")

    def fail(self):
        raise AssertionError("serialised again")

    monkeypatch.setattr(WidgetSpec, "to_json", fail)
    assert client.get("/api/widgets").status_code == 200
    assert client.get("/api/widgets/attention_map").status_code == 200


def test_the_openapi_document_is_made_once_cached_and_gzipped(client, monkeypatch):
    """Review L10: the 529 KB document was built again for every request (13 to 57 ms), with no
    validator, cache lifetime or compression. It is the spec answers' kind now."""
    from backend.app import openapi

    first = client.get("/api/openapi.json")
    assert first.status_code == 200 and first.get_json()["paths"]
    assert first.cache_control.public and first.cache_control.max_age == 300
    etag, _weak = first.get_etag()
    assert client.get("/api/openapi.json",
                      headers={"If-None-Match": f'"{etag}"'}).status_code == 304
    packed = client.get("/api/openapi.json", headers={"Accept-Encoding": "gzip"})
    assert packed.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.data) == first.data and len(packed.data) < len(first.data) / 5

    def fail(_registry):
        raise AssertionError("built again")

    monkeypatch.setattr(openapi, "document", fail)
    assert client.get("/api/openapi.json").data == first.data


def test_an_unknown_widget_spec_is_a_json_404(client):
    r = client.get("/api/widgets/no_such_widget")
    assert r.status_code == 404 and "attention_map" in r.get_json()["error"]


def test_a_checkpoint_configured_at_serve_time_is_offered(client, monkeypatch):
    """BOOK_HF_CHECKPOINT is set where the server runs (an image, compose, k8s), after the pages
    were built: the served spec offers `local`, under a new ETag. (The module is reloaded, as in
    tests/compute/test_attention_map.py: its options are read when a server process imports it;
    tests/site/test_runtime_live_spec.py checks a real gunicorn started with the variable.)"""
    before = client.get("/api/widgets/attention_map")
    assert "local" not in _param(before.get_json(), "model")["options"]
    monkeypatch.setenv(am.ENV_CHECKPOINT, str(am.minilm_dir()))
    importlib.reload(am)
    try:
        after = client.get("/api/widgets/attention_map")
        assert _param(after.get_json(), "model")["options"] == ["book", "smollm2", "minilm", "local"]
        assert after.get_etag() != before.get_etag()
        listed = client.get("/api/widgets").get_json()["widgets"]
        assert "local" in _param(next(w for w in listed if w["name"] == "attention_map"),
                                 "model")["options"]
    finally:
        monkeypatch.undo()
        importlib.reload(am)
    assert "local" not in _param(client.get("/api/widgets/attention_map").get_json(),
                                 "model")["options"]


def test_cross_parameter_rules_are_in_the_spec_and_refused_before_computing(client, monkeypatch):
    """A spec's `check`/`limits` hooks: their rules in words in the spec answer and the OpenAPI
    document, and a request that breaks one is a 400 before any computation starts."""
    from backend.compute import paged_kv

    spec = client.get("/api/widgets/multi_head").get_json()
    assert spec["rules"] and "cross-parameter rules" in spec["rules"][0]
    doc = client.get("/api/openapi.json").get_json()
    assert spec["rules"][0] in doc["paths"]["/api/widgets/multi_head"]["post"]["description"]
    context = doc["paths"]["/api/widgets/attention_cost"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]["properties"]["context_len"]
    assert context["x-limits"] == _param(client.get("/api/widgets/attention_cost").get_json(),
                                         "context_len")["limits"]

    def never(params):
        raise AssertionError("computed a request its spec refuses")

    monkeypatch.setattr(paged_kv, "compute", never)
    r = client.post("/api/widgets/paged_kv", json={"mean_len": 2000, "max_len": 1024})
    assert r.status_code == 400 and r.get_json()["param"] == "mean_len"
    assert "at maximum request length = 1024 (the mean is at most the maximum)" in \
        r.get_json()["error"]
