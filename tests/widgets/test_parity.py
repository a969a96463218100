"""The parity widget through the API: the named values, the cross-control rules, the budget."""

from __future__ import annotations

import pytest

from backend.reference.llama_compare import ATTENTION_TOLERANCE, LOGIT_TOLERANCE

URL = "/api/widgets/parity"


def post(client, **params):
    r = client.post(URL, json=params)
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def error(client, **params):
    r = client.post(URL, json=params)
    assert r.status_code == 400, r.get_json()
    return r.get_json()["error"]


def test_named_values_and_contract(client):
    out = post(client)
    v = out["values"]
    for name in ("max_abs_logit_diff", "max_abs_attention_diff", "cached_vs_uncached_diff"):
        assert isinstance(v[name], float)
    assert v["max_abs_logit_diff"] <= LOGIT_TOLERANCE
    assert v["max_abs_attention_diff"] <= ATTENTION_TOLERANCE
    assert v["cached_vs_uncached_diff"] <= LOGIT_TOLERANCE
    assert v["n_params"] == v["hf_n_params"]  # the same modules on both sides, counted twice
    assert v["ok"] is True
    assert out["summary"] and out["table"]["rows"] and len(out["figure"]["data"][0]["y"]) == 5
    assert "narrow" in out["figure"]


def test_the_weights_really_reach_llama(client):
    """Different seeds give different losses: the comparison is not of two untouched inits."""
    a, b = post(client, seed=0)["values"], post(client, seed=1)["values"]
    assert a["hf_loss"] != b["hf_loss"]
    assert a["loss"] == pytest.approx(a["hf_loss"], abs=LOGIT_TOLERANCE)


def test_head_count_must_divide_width(client):
    msg = error(client, d_model=48, n_heads=5)
    assert "query heads h" in msg and "width d_model" in msg


def test_head_dim_must_be_even(client):
    msg = error(client, d_model=48, n_heads=16)  # d_head = 3
    assert "even" in msg and "query heads h" in msg


def test_kv_heads_must_divide_heads(client):
    msg = error(client, n_heads=8, n_kv=3)
    assert "key/value heads" in msg and "query heads h" in msg


def test_slider_range_named(client):
    msg = error(client, seq_len=65)
    assert "tokens T" in msg and "64" in msg


def test_parameter_budget(client):
    msg = error(client, n_layers=4, d_model=256, n_heads=8, n_kv=8, d_ff=1024, vocab=4096)
    assert "1,000,000" in msg and "vocabulary |Σ|" in msg
