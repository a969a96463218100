"""The decode_roofline widget through the API: the roofline's figures, the notices and the 400s."""

from __future__ import annotations

URL = "/api/widgets/decode_roofline"


def post(client, **params):
    r = client.post(URL, json=params)
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def test_defaults_are_llama3_8b_one_user_8k_on_an_a100_80(client):
    body = post(client)
    v = body["values"]
    assert (v["preset"], v["batch"], v["context_len"], v["card_name"]) == ("llama-3-8b", 1, 8192,
                                                                           "A100 80 GB")
    assert v["bound"] == "memory" and v["batch_fits"] and "notice" not in body
    assert f"{v['floor_ms']:.2g}" == "7.9" and round(v["ridge"]) == 153
    assert body["summary"].startswith("One decode step of 1 user at 8,192 tokens reads")


def test_the_figure_has_a_roof_a_ridge_and_the_operating_point(client):
    fig = post(client, batch=16)["figure"]
    names = [t["name"] for t in fig["data"]]
    assert names[0] == "roof: A100 80 GB" and names[1].startswith("ridge point (153")
    roof = fig["data"][0]
    assert roof["y"][1] == roof["y"][2] == 312 and roof["x"][1] == fig["data"][1]["x"][0]
    here = fig["data"][3]
    assert here["name"] == "your step" and here["y"][0] < 312
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    assert "narrow" in fig and fig["data"][-1]["name"] == "B = 16"


def test_a_batch_that_does_not_fit_is_said_and_left_off_the_curve(client):
    body = post(client, batch=65)
    assert "do not fit" in body["notice"] and "at most 64 users" in body["notice"]
    assert body["figure"]["data"][3]["name"].endswith("(does not fit in memory)")
    assert max(c[0] for c in body["values"]["curve"]) == 64
    assert all(t["name"] != "B = 65" for t in body["figure"]["data"])
    assert "(they do not fit in its memory)" in body["summary"]


def test_weights_that_do_not_fit_are_said(client):
    body = post(client, card="16")
    assert "do not fit in the T4 16 GB" in body["notice"]
    assert body["values"]["users_fit"] == 0 and body["values"]["curve"] == []
    body = post(client, preset="llama-3-70b", card="80")
    assert "do not fit" in body["notice"]


def test_the_table_is_the_curve(client):
    body = post(client)
    rows = body["table"]["rows"]
    assert [r[0] for r in rows] == ["1", "2", "4", "8", "16", "32", "64"]
    assert rows[-1][1] == "41.6" and rows[-1][4] == "memory"


def test_bad_input_is_a_400_naming_the_parameter(client):
    for bad in ({"card": "24"}, {"card": "h100"}, {"batch": 0}, {"batch": 2048},
                {"context_len": 0}, {"preset": "custom"}, {"preset": "transformer-base"}):
        r = client.post(URL, json=bad)
        assert r.status_code == 400, bad
        assert next(iter(bad)) in str(r.get_json())
