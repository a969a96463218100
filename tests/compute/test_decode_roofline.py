"""The decode_roofline widget through the API: the roofline's figures, the notices and the 400s."""

from __future__ import annotations

from tests.support.api import poster

URL = "/api/widgets/decode_roofline"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


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


def test_one_user_who_cannot_fit_is_said_in_the_singular(client):
    body = post(client, context_len=1_048_576)
    n = body["notice"]
    assert n.startswith("1 user at 1,048,576 tokens does not fit: ")
    assert "holds no user's cache at this length" in n and "at most 0" not in n
    assert "(it does not fit in its memory)" in body["summary"]


def test_a_context_past_the_presets_published_length_is_a_notice_not_an_error(client):
    assert "notice" not in post(client, context_len=8192)
    body = post(client, context_len=8193, batch=1)
    assert body["values"]["beyond_max_seq_len"] and body["values"]["step_ms"] > 0
    assert "published context is at most 8,192 tokens" in body["notice"]
    assert "arithmetic for its shapes at 8,193 tokens" in body["notice"]
    both = post(client, context_len=1_048_576)["notice"]        # both notices, one after another
    assert "does not fit" in both and "published context" in both
    assert "published context" not in post(client, preset="llama-2-7b", context_len=4096).get(
        "notice", "")


def test_tokens_per_second_in_all_keep_three_significant_figures(client):
    body = post(client, context_len=1_048_576, card="192")
    v = body["values"]
    assert f"{v['tok_s_user']:.3g}" in body["summary"]
    assert f"and {v['tok_s_total']:.3g} in all" in body["summary"]      # 1 user: 2.23, not 2
    assert post(client)["values"]["tok_s_total_shown"] == "119"
    rows = post(client)["table"]["rows"]
    assert rows[-1][3] == "1,540" and rows[3][3] == "662"
    assert post(client, context_len=1, batch=1024, card="192")["values"][
        "tok_s_total_shown"] == "81,400"


def test_the_card_menu_shows_card_names(client):
    r = client.get(URL)
    assert r.status_code == 200
    p = next(q for q in r.get_json()["params"] if q["name"] == "card")
    assert dict(zip(p["options"], p["option_labels"])) == {
        "16": "T4 16 GB", "40": "A100 40 GB", "48": "L40S 48 GB", "80": "A100 80 GB",
        "80-h100": "H100 80 GB", "141": "H200 141 GB", "192": "MI300X 192 GB"}
    assert "80-h100" not in p["help"] and "H200 141 GB: 4800 GB/s" in p["help"]


def test_tokens_per_second_in_all_has_ticks_to_read_values_off(client):
    """The right-hand panel's y axis (issue 33): a log axis over about one decade had one label,
    "100", for values from 119 to 1,540. Now at least three labelled ticks fall on the values'
    span, at 1-2-5 steps labelled as plotly.js labels its own (200, 1k: "1,000" in full widened
    the phone's margin until the x labels touched), or the axis is linear."""
    for setting in ({}, {"batch": 16}, {"context_len": 1024}, {"context_len": 65536}):
        fig = post(client, **setting)["figure"]
        y = [yy for t in fig["data"] if t.get("yaxis") == "y2" for yy in t["y"]]
        axis = fig["layout"]["yaxis2"]
        if axis["type"] == "linear":
            continue
        lo, hi = min(y), max(y)
        on_span = [t for t in axis["tickvals"] if lo / 1.25 <= t <= hi * 1.25]
        assert len(on_span) >= 3, (setting, lo, hi, axis["tickvals"])
        assert [float(x.replace("k", "e3").replace("M", "e6")) for x in axis["ticktext"]] == \
            axis["tickvals"] and all(len(x) <= 4 for x in axis["ticktext"])
