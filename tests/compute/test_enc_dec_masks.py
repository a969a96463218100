"""The enc_dec_masks widget through the API: the three masks, their shapes, the 9.8 check, bad input."""

from __future__ import annotations

import json

import pytest

from backend.compute import enc_dec_masks as w
from tests.support.api import poster

URL = "/api/widgets/enc_dec_masks"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


def test_default_masks_by_hand(client):
    """Source 6 with 2 pads, target 5 with 1 pad: the three grids of the padded pair, written out."""
    v = post(client)["values"]
    assert v["encoder_mask"] == [[1, 1, 1, 1, 0, 0]] * 6
    assert v["decoder_mask"] == [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0],
                                 [1, 1, 1, 1, 0], [1, 1, 1, 1, 0]]
    assert v["cross_mask"] == [[1, 1, 1, 1, 0, 0]] * 5
    assert (v["encoder_allowed"], v["decoder_allowed"], v["cross_allowed"]) == (24, 14, 20)
    assert v["decoder_allowed_full"] == 15  # 5 * 6 / 2: the plain causal triangle


def test_shapes_are_batch_q_len_k_len(client):
    v = post(client, src_len=9, tgt_len=4, src_pad=3, tgt_pad=2)["values"]
    assert (v["encoder_shape"], v["decoder_shape"], v["cross_shape"]) == ("(2, 9, 9)", "(2, 4, 4)", "(2, 4, 9)")
    assert (v["encoder_stored_shape"], v["decoder_stored_shape"], v["cross_stored_shape"]) == \
        ("(2, 1, 1, 9)", "(2, 1, 4, 4)", "(2, 1, 4, 9)")
    assert v["flow"]["cross-attention weights"] == "(2, 2, 4, 9)"
    assert v["flow"]["logits"] == "(2, 4, 16)"


def test_base_model_forward_check_values(client):
    """004 section 9.8 prints logits shape torch.Size([16, 50, 26])."""
    v = post(client)["values"]
    assert v["check"]["logits"] == "(16, 50, 26)"
    assert v["check"]["source"] == "(16, 100, 80)"
    assert v["check"]["cross-attention weights"] == "(16, 8, 50, 100)"
    assert (v["check_batch"], v["check_src_len"], v["check_fbank_dim"], v["check_tgt_len"],
            v["check_vocab"], v["check_d_model"], v["check_heads"]) == (16, 100, 80, 50, 26, 512, 8)
    assert v["check_parameters"] == 44_206_618


@pytest.mark.parametrize("params, label", [
    ({"src_len": 3, "src_pad": 3}, "'source padding'"),
    ({"src_len": 1, "src_pad": 1}, "'source padding'"),
    ({"tgt_len": 4, "tgt_pad": 7}, "'target padding'"),
    ({"src_len": 13}, "'source length'"),
    ({"tgt_len": 0}, "'target length'"),
    ({"src_pad": -1}, "'source padding'"),
    ({"tgt_pad": 2.5}, "'target padding'"),
])
def test_bad_input_is_a_400_naming_the_label(client, params, label):
    r = client.post(URL, json=params)
    assert r.status_code == 400
    assert label in r.get_json()["error"]


def test_pad_rule_names_the_length_and_the_range(client):
    msg = client.post(URL, json={"src_len": 3, "src_pad": 3}).get_json()["error"]
    assert "from 0 to 2" in msg and "source length" in msg


def test_unknown_param_is_a_400(client):
    assert client.post(URL, json={"batch": 4}).status_code == 400


def test_figure_three_heatmaps_stacked_on_a_phone(client):
    r = post(client, src_len=7, tgt_len=3, src_pad=1, tgt_pad=0)
    fig = r["figure"]
    heat = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert [(len(t["z"]), len(t["z"][0])) for t in heat] == [(7, 7), (3, 3), (3, 7)]
    assert [t["yaxis"] for t in heat] == ["y", "y2", "y3"]
    lay, narrow = fig["layout"], fig["narrow"]
    assert lay["xaxis"]["domain"][1] < lay["xaxis2"]["domain"][0] < lay["xaxis3"]["domain"][0]
    assert narrow["xaxis"]["domain"] == narrow["xaxis2"]["domain"] == narrow["xaxis3"]["domain"] == [0, 1]
    assert narrow["yaxis3"]["domain"][1] < narrow["yaxis2"]["domain"][0] < narrow["yaxis"]["domain"][0]
    # cross panel: the last source column is a pad, coded 2; the causal code 1 appears only in the decoder
    assert all(row[-1] == w.PAD for row in heat[2]["z"]) and heat[1]["z"][0][1] == w.CAUSAL
    assert not any(w.CAUSAL in row for row in heat[0]["z"] + heat[2]["z"])


def test_summary_and_table(client):
    r = post(client)
    assert "24 of 36" in r["summary"] and "14 of 25" in r["summary"] and "20 of 30" in r["summary"]
    assert [row[2] for row in r["table"]["rows"]] == ["(2, 6, 6)", "(2, 5, 5)", "(2, 5, 6)"]


def test_summary_says_token_in_the_singular(client):
    r = post(client, src_len=12, tgt_len=3, src_pad=11, tgt_pad=2)
    assert "1 real source token of 12" in r["summary"] and "1 real target token of 3" in r["summary"]


def test_phone_layout_leaves_room_between_panels(client):
    """Each gap between stacked panels holds vertical tick labels and the next two-line title; the
    'key' axis titles are dropped on phones, moved into each panel's title."""
    narrow = post(client, src_len=12, tgt_len=12, src_pad=4, tgt_pad=3)["figure"]["narrow"]
    bands = [narrow[a]["domain"] for a in ("yaxis", "yaxis2", "yaxis3")]
    gaps = [bands[0][0] - bands[1][1], bands[1][0] - bands[2][1]]
    assert min(gaps) * narrow["height"] >= 120  # px
    for a in ("xaxis", "xaxis2", "xaxis3"):
        assert narrow[a]["tickangle"] == -90 and narrow[a]["title"]["text"] == ""
    assert all("columns: key" in ann["text"] for ann in narrow["annotations"])


def test_payload_is_small(client):
    r = post(client, src_len=12, tgt_len=12, src_pad=4, tgt_pad=3)
    assert len(json.dumps(r)) < 40_000


def test_every_bake_point_resolves():
    for p in w.SPEC.bake_points():
        w.SPEC.resolve(p)


def test_concurrent_requests_each_get_their_own_worked_row():
    """gunicorn's gthread workers run requests in threads over one shared model: the worked
    cross-attention row must come from each request's own batch (a hook on the shared model
    once mixed requests up and broke forwards: a 500 under load)."""
    from concurrent.futures import ThreadPoolExecutor

    from backend.compute import enc_dec_masks as w

    settings = [w.SPEC.resolve({"src_len": s, "tgt_len": t}) for s in (3, 6, 9) for t in (2, 5, 8)]
    alone = [w.compute(p)["values"]["cross_example"] for p in settings]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda p: w.compute(p)["values"]["cross_example"], settings * 4))
    assert together == alone * 4
