"""/api/health describes the device and its limits; CORS only for the configured origins."""

from __future__ import annotations

import pytest
import torch

from backend import device

ALLOWED = "http://127.0.0.1:9001"


def test_health_reports_the_device_kind_and_its_limits(client):
    body = client.get("/api/health").get_json()
    facts = body["accelerator"]
    assert facts["kind"] == device.kind() == ("cuda" if device.device().startswith("cuda") else "cpu")
    from backend.compute import REGISTRY, attention_cost

    assert body["limits"] == {name: m.device_limits() for name, m in REGISTRY.items()
                              if hasattr(m, "device_limits")}
    # the longest context is the attention-cost widget's own ceiling, the slider's top
    cost = body["limits"]["attention_cost"]
    slider = next(p for p in client.get("/api/widgets/attention_cost").get_json()["params"]
                  if p["name"] == "context_len")
    assert cost["max_context_len"] == slider["max"] == attention_cost.ceiling()
    if facts["kind"] == "cpu":
        # no GPU: the GPU fields are null, not zero or a guess
        assert facts["name"] is facts["memory_total_bytes"] is facts["memory_free_bytes"] is None
        assert facts["cuda_version"] is None
        assert cost["memory_budget_bytes"] == device.CPU_MEMORY_BYTES * attention_cost.MEMORY_SHARE
    else:
        assert facts["cuda_version"] == torch.version.cuda
        assert 0 < facts["memory_free_bytes"] <= facts["memory_total_bytes"]


def test_health_shows_a_widgets_own_device_limits(client, monkeypatch):
    from backend.compute import REGISTRY

    module = REGISTRY["attention_scaling"]
    monkeypatch.setattr(module, "device_limits", lambda: {"max_context": 123}, raising=False)
    body = client.get("/api/health").get_json()
    assert body["limits"]["attention_scaling"] == {"max_context": 123}


@pytest.fixture()
def cors_client(tmp_path):
    from backend.app import create_app

    app = create_app({"TESTING": True, "SITE_DIR": str(tmp_path), "CORS_ORIGINS": f" {ALLOWED}/ ,"})
    return app.test_client()


def test_an_allowed_origin_may_post_after_a_preflight(cors_client):
    pre = cors_client.options("/api/widgets/attention_scaling", headers={
        "Origin": ALLOWED, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert pre.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert "POST" in pre.headers["Access-Control-Allow-Methods"]
    r = cors_client.post("/api/widgets/attention_scaling", json={}, headers={"Origin": ALLOWED})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == ALLOWED


def test_an_allowed_origin_may_get_a_result_and_read_its_timing(cors_client):
    """The pages' GET needs no preflight; the answer names the origin for CORS and for
    Resource Timing (how the runtime tells a browser-cached answer from a fresh one)."""
    r = cors_client.get("/api/widgets/attention_scaling/result?d_k=32", headers={"Origin": ALLOWED})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert r.headers["Timing-Allow-Origin"] == ALLOWED and "Origin" in r.headers["Vary"]


@pytest.mark.parametrize("origin", ["http://127.0.0.1:9002", "https://evil.example", "null"])
def test_any_other_origin_gets_no_cors_header(cors_client, origin):
    pre = cors_client.options("/api/widgets/attention_scaling", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST"})
    assert "Access-Control-Allow-Origin" not in pre.headers
    r = cors_client.post("/api/widgets/attention_scaling", json={}, headers={"Origin": origin})
    assert "Access-Control-Allow-Origin" not in r.headers
    r = cors_client.get("/api/widgets/attention_scaling/result", headers={"Origin": origin})
    assert "Access-Control-Allow-Origin" not in r.headers and "Timing-Allow-Origin" not in r.headers


def test_without_configured_origins_there_are_no_cors_headers(client):
    r = client.post("/api/widgets/attention_scaling", json={}, headers={"Origin": ALLOWED})
    assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers
