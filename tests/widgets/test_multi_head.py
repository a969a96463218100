"""The multi_head widget through the API: handout numbers, counts from the modules, 400s."""

from __future__ import annotations

import pytest

from backend.reference.config import ModelConfig
from backend.reference.grouped_query import GroupedQueryAttention
from backend.widgets import multi_head as mh

URL = "/api/widgets/multi_head"


def post(client, **params):
    r = client.post(URL, json=params)
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def test_handout_two_heads_digits(client):
    ex = post(client)["values"]["two_heads"]
    two = {k: [f"{x:.2f}" for x in d.values()] for k, d in ex.items()}
    assert two["one_head"] == ["0.14", "0.31", "0.56"]
    assert two["head_a"] == ["0.03", "0.33", "0.64"]
    assert two["head_b"] == ["0.59", "0.19", "0.22"]
    assert two["head_a_try"][0] == "0.30"
    assert ex["head_b_try"] == ex["head_b"]


def test_handout_head_table(client):
    rows = post(client)["values"]["head_table"]
    assert [(r["d_model"], r["n_heads"], r["d_head"]) for r in rows] == [
        (512, 8, 64), (4096, 32, 128), (12288, 96, 128)]


@pytest.mark.parametrize("h, n_kv, d", [(8, 8, 512), (8, 2, 512), (8, 1, 512), (4, 2, 128), (16, 4, 1024)])
def test_counts_come_from_the_module(client, h, n_kv, d):
    v = post(client, n_heads=h, n_kv=n_kv, d_model=d)["values"]
    cfg = ModelConfig(vocab_size=1, d_model=d, n_layers=1, n_heads=h, n_kv_heads=n_kv, d_ff=1)
    layer = GroupedQueryAttention(cfg)  # an independent build of the reference module
    assert v["params_attention"] == sum(p.numel() for p in layer.parameters())
    assert v["params_attention"] == 2 * d * d + 2 * d * n_kv * (d // h)  # hand arithmetic
    assert v["params_kv"] == 2 * d * n_kv * (d // h)
    assert v["kv_bytes_per_token"] == 2 * n_kv * (d // h) * 2  # K and V, bf16
    assert v["kv_fraction"] == n_kv / h
    assert v["d_head"] == d // h and v["n_rep"] == h // n_kv


def test_maps_are_causal_softmax_rows(client):
    v = post(client, n_heads=4, n_kv=2, d_model=128)["values"]
    T = len(v["words"])
    assert v["words"][0] == "the" and v["words"][-1] == "table" and T == 9
    assert len(v["maps"]) == 4 and v["groups"] == [0, 0, 1, 1]
    for m in v["maps"]:
        for q, row in enumerate(m):
            assert abs(sum(row) - 1) < 2e-3 and all(x == 0 for x in row[q + 1:])


def test_result_has_summary_table_and_phone_layout(client):
    body = post(client, n_heads=8, n_kv=2)
    assert "8 attention maps" in body["summary"] and "grouped-query" in body["summary"]
    assert len(body["table"]["rows"]) == 8 and body["table"]["columns"][:2] == ["head", "KV head"]
    assert len(body["figure"]["data"]) == 8
    assert body["figure"]["narrow"]["xaxis2"]["domain"][0] > 0.5  # two columns on a phone


@pytest.mark.parametrize("params, label", [
    ({"n_heads": 8, "n_kv": 3}, "key/value heads n_kv"),
    ({"n_heads": 4, "n_kv": 8}, "key/value heads n_kv"),
    ({"n_heads": 6, "d_model": 512}, "model width d"),
])
def test_cross_parameter_rules_are_400s_naming_both_labels(client, params, label):
    r = client.post(URL, json=params)
    assert r.status_code == 400
    msg = r.get_json()["error"]
    assert label in msg and "query heads h" in msg


def test_divisor_message_lists_the_choices(client):
    msg = client.post(URL, json={"n_heads": 8, "n_kv": 3}).get_json()["error"]
    assert "1, 2, 4, 8" in msg


@pytest.mark.parametrize("params", [{"n_heads": 0}, {"n_heads": 17}, {"d_model": 2048},
                                    {"n_kv": "two"}, {"d_model": 100.5}])
def test_out_of_range_is_400(client, params):
    assert client.post(URL, json=params).status_code == 400


def test_every_bake_point_is_valid():
    for point in mh.SPEC.bake_points():
        mh.check(point)
