"""The three positions widgets through the API: the handout's numbers, the RoPE invariance, bad
input, and the old single widget's name answered with a 404 that names the new ones."""

import pytest

from tests.support.api import poster

order = poster("/api/widgets/positions_order")  # the answer must be a 200; its JSON
table = poster("/api/widgets/positions_sinusoids")
rope = poster("/api/widgets/positions_rope")


def refuse(widget):
    return poster(f"/api/widgets/{widget}", 400, "error")  # the refusal's sentence


def test_the_handout_rows_come_back(client):
    rows = table(client)["values"]["pe_rows"]
    assert [round(v, 3) + 0.0 for v in rows["50"][:4]] == [-0.262, 0.965, -0.959, 0.284]
    assert [round(v, 3) + 0.0 for v in rows["1"][:4]] == [0.841, 0.54, 0.1, 0.995]


def test_rope_score_depends_on_the_offset_only(client):
    dots = [rope(client, m=m, n=n, max_position=128)["values"]["rope_dot"]
            for m, n in ((3, 1), (10, 8), (100, 98), (5, 3))]
    assert max(dots) - min(dots) < 1e-5
    assert abs(rope(client, m=3, n=2)["values"]["rope_dot"] - dots[0]) > 1e-2


def test_order_blind_without_positions(client):
    v = order(client)["values"]
    assert max(abs(a - b) for a, b in zip(v["dog"]["without"], v["dog"]["without_swapped"])) < 1e-12
    assert v["order_gap_with"] > 0.5
    assert order(client, strength=0.0)["values"]["order_gap_with"] < 1e-12


@pytest.mark.parametrize("widget, params, words", [
    ("positions_sinusoids", {"d_model": 7}, "model width d"),
    ("positions_sinusoids", {"d_model": 2}, "model width d"),
    ("positions_rope", {"d_head": 7}, "head width"),
    ("positions_rope", {"rope_theta": 0}, "RoPE base"),
    ("positions_rope", {"m": -1}, "query position"),
    # a position lies within the sequence: at the default length 64, 0 to 63
    ("positions_rope", {"m": 64}, "'query position m' must be from 0 to 63 at sequence length = 64"),
    ("positions_rope", {"n": 200, "max_position": 128}, "from 0 to 127 at sequence length = 128"),
    # both ends name the sequence's bound, for m and n alike (-1 read "from 0 to 131,071")
    ("positions_rope", {"n": -1}, "'key position n' must be from 0 to 63 at sequence length = 64"),
    ("positions_rope", {"m": -1}, "'query position m' must be from 0 to 63 at sequence length = 64"),
    ("positions_rope", {"n": -1, "max_position": 131072}, "'key position n' must be from 0 to "
                                                          "131,071, got -1"),
    # and above the slider's own top: the sequence binds first (it read "from 0 to 131,071")
    ("positions_rope", {"n": 200000}, "'key position n' must be from 0 to 63 at sequence length = 64"),
    ("positions_rope", {"m": 131072, "max_position": 131072},  # both at once: the plain range
     "'query position m' must be from 0 to 131,071, got 131072"),
    ("positions_order", {"strength": 3}, "position signal strength"),
])
def test_bad_input_is_a_400_that_names_the_control(client, widget, params, words):
    # Errors name the control by its label, as the reader sees it on the page.
    assert words in refuse(widget)(client, **params)


def test_largest_settings_stay_small_and_quick(client):
    heat = table(client, d_model=512, max_position=131072)["figure"]["data"][0]["z"]
    assert len(heat) <= 128 and len(heat[0]) <= 64
    body = rope(client, d_head=512, max_position=131072, m=131071, n=0, rope_theta=1e7)
    assert all(len(t.get("x", [])) <= 410 for t in body["figure"]["data"])


def test_the_old_single_widget_is_a_404_naming_the_new_ones(client):
    """Before the split the chapter had one widget, `positions`. A client (or a notebook) still
    asking for it gets a clear 404 that lists the widgets there are, never a 500."""
    for resp in (client.post("/api/widgets/positions", json={"rope_theta": 500000}),
                 client.get("/api/widgets/positions/result?rope_theta=500000"),
                 client.get("/api/widgets/positions")):
        assert resp.status_code == 404
        text = resp.get_data(as_text=True)
        assert "no widget named 'positions'" in text and "positions_rope" in text


def test_the_sinusoid_summary_names_the_dimensions_drawn_in_words():
    """It read "every 2th dimension" at d = 128 (a baked setting) and "every 3th" at 130."""
    from backend.compute import positions_sinusoids as w
    for d in (128, 130):
        summary = w.compute(w.SPEC.resolve({"d_model": d}))["summary"]
        assert "th dimension" not in summary and "one dimension in " in summary, summary
