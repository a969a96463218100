"""The positions widget through the API: the handout's numbers, the RoPE invariance, bad input."""

import pytest

from tests.support.api import poster

post = poster("/api/widgets/positions")  # the answer must be a 200; its JSON
refuse = poster("/api/widgets/positions", 400, "error")  # the refusal's sentence


def test_the_handout_rows_come_back(client):
    body = post(client)
    rows = body["values"]["pe_rows"]
    assert [round(v, 3) + 0.0 for v in rows["50"][:4]] == [-0.262, 0.965, -0.959, 0.284]
    assert [round(v, 3) + 0.0 for v in rows["1"][:4]] == [0.841, 0.54, 0.1, 0.995]


def test_rope_score_depends_on_the_offset_only(client):
    dots = [post(client, m=m, n=n)["values"]["rope_dot"] for m, n in ((3, 1), (10, 8), (100, 98), (5, 3))]
    assert max(dots) - min(dots) < 1e-5
    assert abs(post(client, m=3, n=2)["values"]["rope_dot"] - dots[0]) > 1e-2


def test_order_blind_without_positions(client):
    v = post(client)["values"]
    assert max(abs(a - b) for a, b in zip(v["dog"]["without"], v["dog"]["without_swapped"])) < 1e-12
    assert v["order_gap_with"] > 0.5


def test_context_table(client):
    ctx = post(client)["values"]["context"]
    assert (ctx["16000"]["text"], ctx["16000"]["work"]) == (2.0, 4.0)
    assert (ctx["128000"]["text"], ctx["128000"]["work"]) == (16.0, 256.0)


@pytest.mark.parametrize("params, words", [
    ({"d_model": 7}, "width d"),
    ({"d_model": 2}, "width d"),
    ({"rope_theta": 0}, "RoPE base"),
    ({"m": -1}, "query position"),
])
def test_bad_input_is_a_400_that_names_the_control(client, params, words):
    # Errors name the control by its label, as the reader sees it on the page.
    assert words in refuse(client, **params)


def test_largest_settings_stay_small_and_quick(client):
    body = post(client, d_model=512, max_position=131072, m=131072, n=0, rope_theta=1e7)
    heat = body["figure"]["data"][0]["z"]
    assert len(heat) <= 128 and len(heat[0]) <= 64
    assert all(len(t.get("x", [])) <= 410 for t in body["figure"]["data"][1:])
