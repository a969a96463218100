"""The mlp widget through the API: the handout's figures, errors by label, the palette."""

import pytest

from tests.support.api import poster

URL = "/api/widgets/mlp"

values = poster(URL, field="values")  # POST to the widget: a 200's named values


def test_llama3_8b_counts_through_the_api(client):
    """000 §6.5: 3 d d_ff = 176,160,768 gated vs 2 d d_ff = 117,440,512 plain at d = 4096, 14336."""
    v = values(client, d_model=4096, d_ff=14336)
    assert v["params_gated"] == 176_160_768
    assert v["params_plain"] == 117_440_512
    assert v["d_ff_equal_params"] == pytest.approx(2 * 14336 / 3)


def test_meta_rule_and_real_figures(client):
    """Facts only the prose quotes (review L19: they went out with every answer, 39 values the
    page never reads); the answer carries the slider's values alone."""
    from backend.compute import mlp

    v = mlp.facts({})
    assert not set(v) & set(values(client))
    assert v["l2_7b_d_ff"] == v["meta_rule_l2_7b"] == 11008
    assert v["l3_8b_d_ff"] == v["meta_rule_l3_8b"] == 14336
    assert v["two_thirds_4d_4096"] == pytest.approx(10922.667, abs=1e-3)
    assert v["l3_8b_mlp_per_layer"] == 176_160_768


def test_share_by_hand(client):
    v = values(client, d_model=512, d_ff=2048, kind="plain", n_kv_heads=4)
    assert v["mlp_share"] == pytest.approx(2 * 512 * 2048 / (2 * 512 * 2048 + 4 * 512 ** 2 + 2 * 512))


@pytest.mark.parametrize("body, label", [({"d_ff": 10}, "MLP width d_ff"),
                                         ({"d_model": 70000}, "model width d"),
                                         ({"kind": "moe"}, "MLP kind"),
                                         ({"d_model": 512}, "key/value heads"),
                                         ({"n_kv_heads": 3}, "key/value heads")])
def test_bad_input_is_a_400_naming_the_label(client, body, label):
    r = client.post(URL, json=body)
    assert r.status_code == 400 and label in r.get_json()["error"]


def test_result_contract_and_palette(client):
    from backend.compute.style import COLORS, SERIES
    body = client.post(URL, json={}).get_json()
    assert body["summary"] and body["table"]["rows"] and body["figure"]["narrow"]
    import json
    import re
    used = {c.lower() for c in re.findall(r"#[0-9a-fA-F]{3,6}\b", json.dumps(body["figure"]))}
    assert used <= {c.lower() for c in (*COLORS.values(), *SERIES)}
    assert "paper_bgcolor" not in body["figure"]["layout"]


def test_gqa_attention_by_hand(client):
    """Llama-3-8B: q and o are d x d, k and v are d x (8 heads x 128): 41,943,040 per layer."""
    v = values(client)
    assert v["attention_params"] == 2 * 4096 ** 2 + 2 * 4096 * 8 * 128 == 41_943_040


def test_every_baked_point_is_strict_json():
    import json

    from backend.compute import mlp
    for point in mlp.SPEC.bake:
        json.dumps(mlp.compute(mlp.SPEC.resolve(point)), allow_nan=False)


def test_one_head_reads_singular(client):
    body = client.post(URL, json={"d_model": 128, "d_ff": 256, "n_kv_heads": 1}).get_json()
    assert "With 1 query head and 1 key/value head," in body["summary"]
    assert "With 32 query heads and 8 key/value heads," in client.post(URL, json={}).get_json()["summary"]


def test_phone_layout_keeps_the_share_label_off_the_legend_and_segment_labels_unrotated(client):
    """On a phone the 'MLP = …' label sits between the legend (above) and the block chart;
    a segment label is never rotated, and one that does not fit is hidden (hover stays)."""
    fig = client.post(URL, json={}).get_json()["figure"]
    narrow = fig["narrow"]
    share = narrow["annotations"][1]
    assert share["text"].startswith("MLP = ") and share["yanchor"] == "bottom"
    assert narrow["yaxis2"]["domain"][1] < share["y"] < narrow["legend"]["y"] - 0.15
    segments = [t for t in fig["data"] if t.get("xaxis") == "x2" and t.get("text")]
    assert segments and all(t["textangle"] == 0 for t in segments)
    assert fig["layout"]["uniformtext"] == {"minsize": 9, "mode": "hide"}
    assert all("hovertemplate" in t for t in segments)


def test_the_figures_share_label_agrees_with_the_value(client):
    """At d = 128, d_ff = 65,536 the label said 100% over a value of 99.7%."""
    body = poster(URL)(client, d_model=128, d_ff=65536, n_kv_heads=1)
    label = [a["text"] for a in body["figure"]["layout"]["annotations"] if a["text"].startswith("MLP = ")]
    assert label == [f"MLP = {body['values']['mlp_share']:.1%} of the block"]
    assert label != ["MLP = 100.0% of the block"]
