"""The HTTP contract of DESIGN.md, through Flask's test client."""

from __future__ import annotations

import json
import threading

import pytest

from backend.app import create_app
from backend.compute import REGISTRY

URL = "/api/widgets/attention_scaling"


def test_health(client):
    r = client.get("/api/health")
    assert r.status_code == 200
    body = r.get_json()
    assert body["status"] == "ok"
    assert body["device"].startswith(("cpu", "cuda"))
    assert body["torch"].startswith("2.")
    assert body["warming"] is False  # no background warm-up runs in the test client


def test_widget_list_comes_from_the_specs(client):
    body = client.get("/api/widgets").get_json()
    names = [w["name"] for w in body["widgets"]]
    assert names == list(REGISTRY)
    scaling = body["widgets"][names.index("attention_scaling")]
    d_k = next(p for p in scaling["params"] if p["name"] == "d_k")
    assert (d_k["type"], d_k["min"], d_k["max"], d_k["default"]) == ("int", 1, 1024, 64)


def test_compute_happy_path(client):
    r = client.post(URL, json={"d_k": 128, "n_positions": 16, "seed": 3})
    assert r.status_code == 200
    body = r.get_json()
    assert body["widget"] == "attention_scaling"
    assert body["params"] == {"d_k": 128, "n_positions": 16, "seed": 3}
    assert set(body) >= {"values", "figure", "device", "elapsed_ms"}
    assert body["figure"]["data"] and "layout" in body["figure"]
    assert 100 < body["values"]["var_unscaled"] < 160
    assert 0.8 < body["values"]["var_scaled"] < 1.2


def test_missing_params_take_defaults_and_results_are_cached(client):
    first = client.post(URL, json={}).get_json()
    assert first["params"] == REGISTRY["attention_scaling"].SPEC.defaults()
    assert first["cached"] is False
    again = client.post(URL, data="").get_json()  # an empty body means "all defaults"
    assert again["cached"] is True
    assert again["values"] == first["values"]


def test_a_cached_answer_does_not_report_a_fresh_compute_time(client):
    body = {"d_k": 512, "seed": 7}
    first = client.post(URL, json=body).get_json()
    again = client.post(URL, json=body).get_json()
    assert first["cached"] is False and again["cached"] is True
    assert first["elapsed_ms"] == first["computed_ms"]
    # the compute time is still reported, under its own name; elapsed_ms is the lookup
    assert again["computed_ms"] == first["computed_ms"]
    assert again["elapsed_ms"] < first["computed_ms"]


def test_optional_parts_of_a_result_pass_through(client, monkeypatch):
    module = REGISTRY["attention_scaling"]
    real = module.compute
    monkeypatch.setattr(module, "compute", lambda p: {**real(p), "notice": "a caveat",
                                                      "summary": "s", "table": {"rows": []}})
    body = client.post(URL, json={"seed": 4321}).get_json()
    assert body["notice"] == "a caveat" and body["summary"] == "s" and body["table"] == {"rows": []}


def test_json_float_that_is_an_integer_is_accepted(client):
    assert client.post(URL, json={"d_k": 64.0}).get_json()["params"]["d_k"] == 64


@pytest.mark.parametrize("body, fragment", [
    ({"d_k": "64"}, "'head dim d_k' must be an integer"),
    ({"d_k": True}, "'head dim d_k' must be an integer"),
    ({"d_k": 64.5}, "'head dim d_k' must be an integer"),
    ({"d_k": None}, "'head dim d_k' must be an integer"),
    ({"d_k": [64]}, "'head dim d_k' must be an integer"),
    ({"d_k": 0}, "'head dim d_k' must be from 1 to 1024"),
    ({"d_k": 1025}, "'head dim d_k' must be from 1 to 1024"),
    ({"d_k": 10 ** 400}, "'head dim d_k' must be from"),
    ({"n_positions": 1}, "'positions' must be from 2 to 512"),
    ({"seed": -1}, "'seed' must be from"),
    ({"head_dim": 64}, "unknown parameter 'head_dim'"),
])
def test_bad_parameters_are_400_naming_the_parameter(client, body, fragment):
    r = client.post(URL, json=body)
    assert r.status_code == 400, r.get_json()
    assert fragment in r.get_json()["error"]


@pytest.mark.parametrize("raw", [
    "{", "[1, 2]", "64", '"d_k"', "null", '{"d_k": NaN}', '{"d_k": Infinity}',
    b"\xff\xfe\x00", "[" * 100_00,
])
def test_malformed_or_non_object_bodies_are_400(client, raw):
    r = client.post(URL, data=raw, content_type="application/json")
    assert r.status_code in (400, 413)
    assert r.get_json()["error"]


def test_oversized_body_is_413(client):
    r = client.post(URL, data=json.dumps({"pad": "x" * 50_000}),
                    content_type="application/json")
    assert r.status_code == 413
    assert "limit is 16384 bytes" in r.get_json()["error"]


def test_unknown_widget_is_404_listing_the_known_ones(client):
    r = client.post("/api/widgets/no_such_widget", json={})
    assert r.status_code == 404
    assert "attention_scaling" in r.get_json()["error"]
    assert client.get("/api/nothing-here").status_code == 404
    assert client.get("/api/nothing-here").get_json()["error"]


@pytest.mark.parametrize("method, url", [
    ("put", URL), ("delete", URL), ("patch", URL), ("post", "/api/widgets"),
    ("post", "/api/health"),
])
def test_wrong_method_is_405_with_allow_header(client, method, url):
    r = getattr(client, method)(url, json={})
    assert r.status_code == 405
    assert "not allowed" in r.get_json()["error"]
    assert r.headers["Allow"]


def test_get_on_a_widget_returns_its_spec(client):
    spec = client.get(URL).get_json()
    assert spec["name"] == "attention_scaling"
    assert [o["name"] for o in spec["outputs"]][:2] == ["var_unscaled", "var_scaled"]


def test_concurrent_requests_all_succeed(tmp_path):
    app = create_app({"TESTING": True, "SITE_DIR": str(tmp_path)})
    results = []

    def hit(d):
        results.append(app.test_client().post(URL, json={"d_k": d}).status_code)

    threads = [threading.Thread(target=hit, args=(d,)) for d in (5, 6, 7, 8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 4


def test_openapi_document_covers_every_widget(client):
    doc = client.get("/api/openapi.json").get_json()
    assert doc["openapi"].startswith("3.")
    for name, module in REGISTRY.items():
        post = doc["paths"][f"/api/widgets/{name}"]["post"]
        props = post["requestBody"]["content"]["application/json"]["schema"]["properties"]
        assert set(props) == {p.name for p in module.SPEC.params}
        assert {"400", "413", "429", "503"} <= set(post["responses"])


def test_a_bug_in_a_widget_is_a_json_500_not_a_traceback(client, monkeypatch):
    module = REGISTRY["attention_scaling"]
    monkeypatch.setattr(module, "compute", lambda params: 1 / 0)
    r = client.post(URL, json={"d_k": 9})
    assert r.status_code == 500
    assert "bug in the book's server" in r.get_json()["error"]


@pytest.mark.parametrize("body, fragment", [
    ({"average": False, "layer": 4},
     "'layer' must be from 0 to 3 when model is book (the book's model has 4 layers), got 4"),
    ({"average": False, "head": 7}, "'head' must be from 0 to 3 when model is book"),
    ({"average": False, "model": "minilm", "layer": 6}, "from 0 to 5 when model is minilm"),
    ({"average": False, "model": "minilm", "head": 12}, "'head' must be from 0 to 11, got 12"),
])
def test_attention_map_ranges_follow_the_model(client, body, fragment):
    r = client.post("/api/widgets/attention_map", json=body)
    assert r.status_code == 400
    assert fragment in r.get_json()["error"]
    assert r.get_json()["param"] in ("layer", "head")


def test_openapi_describes_dependent_ranges(client):
    doc = client.get("/api/openapi.json").get_json()
    schema = doc["paths"]["/api/widgets/attention_map"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]["properties"]["layer"]
    assert "at most 3 when model is book" in schema["description"]
    assert "ignored when average is true" in schema["description"]
    assert schema["x-depends"][0]["on"] == "model"


def test_non_finite_numbers_are_sent_as_null_never_as_bare_infinity(client, monkeypatch):
    """`Infinity` is not JSON: one overflowing value would stop every widget on the page."""
    import json

    from backend.compute import REGISTRY

    module = REGISTRY["attention_scaling"]
    real = module.compute
    monkeypatch.setattr(module, "compute", lambda p: {**real(p), "values": {
        **real(p)["values"], "var_unscaled": float("inf"), "var_scaled": float("nan")}})
    resp = client.post("/api/widgets/attention_scaling", json={"d_k": 3})
    assert resp.status_code == 200
    text = resp.get_data(as_text=True)
    assert "Infinity" not in text and "NaN" not in text
    body = json.loads(text)
    assert body["values"]["var_unscaled"] is None and body["values"]["var_scaled"] is None


def test_a_number_past_pythons_digit_limit_is_a_400_in_the_apis_words(client):
    """Review L20: a 5,000-digit integer was refused in Python's words ("use
    sys.set_int_max_str_digits()") in a POST, and was a 500 in a GET's query."""
    huge = "1" * 5000
    answers = [client.post("/api/widgets/attention_scaling", data=f'{{"d_k": {huge}}}',
                           content_type="application/json"),
               client.get(f"/api/widgets/attention_scaling/result?d_k={huge}"),
               client.get(f"/api/widgets/attention_scaling/notebook?d_k=-{huge}")]
    for r in answers:
        assert r.status_code == 400, r.status_code
        error = r.get_json()["error"]
        assert "5,000 digits" in error and "at most 4,300" in error, error
        assert "sys." not in error
