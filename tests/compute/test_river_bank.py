"""The river_bank widget through the API: the handout's numbers, its table, and bad input."""

from __future__ import annotations

import json

import pytest

from backend.compute import river_bank as rbw
from tests.support.api import poster

URL = "/api/widgets/river_bank"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


def rounded(xs, nd):
    return [round(x, nd) for x in xs]


def test_river_reproduces_the_handout(client):
    """003: weights 0.137 / 0.306 / 0.557; bank (1.60, 1.60) -> water 1.73, money 0.93."""
    v = post(client)["values"]
    assert v["words"] == ["the", "river", "bank"]
    assert rounded(v["scores"], 2) == [2.96, 4.56, 5.76]
    assert rounded(v["weights"], 3) == [0.137, 0.306, 0.557]
    assert rounded([v["bank_before"]["water"], v["bank_before"]["money"]], 2) == [1.6, 1.6]
    assert rounded([v["bank_after"]["water"], v["bank_after"]["money"]], 2) == [1.73, 0.93]
    assert v["leans"] == "water"


def test_savings_flips_water_and_money(client):
    """003 exercise 03's Try: with savings, water and money flip (0.93 / 1.73)."""
    river = post(client)["values"]
    v = post(client, neighbour="savings")["values"]
    assert rounded([v["bank_after"]["water"], v["bank_after"]["money"]], 2) == [0.93, 1.73]
    assert v["weights"] == river["weights"] and v["leans"] == "money"
    assert v["bank_after"]["water"] == river["bank_after"]["money"]  # an exact swap


def test_without_the_division(client):
    """003: without / sqrt(4) the weights become 0.045 / 0.221 / 0.734."""
    v = post(client, scaled=False)["values"]
    assert rounded(v["weights"], 3) == [0.045, 0.221, 0.734]
    assert v["divided"] == v["scores"]


def test_the_table_is_the_handouts_arithmetic_filled_in(client):
    """003 prints: score, score ÷ 2, e^x, weight per word, then the sums 31.98 and 1.000; the
    mix columns add to bank's new numbers."""
    out = post(client)
    table = out["table"]
    assert table["columns"][2:6] == ["score bank·word", "score ÷ 2", "eˣ", "weight"]
    assert [row[:6] for row in table["rows"][:3]] == [
        ["the", "0.3, 0.3, 2.5, 0", "2.96", "1.48", "4.39", "0.137"],
        ["river", "2.6, 0, 0.5, 0", "4.56", "2.28", "9.78", "0.306"],
        ["bank", "1.6, 1.6, 0.8, 0", "5.76", "2.88", "17.81", "0.557"],
    ]
    assert table["rows"][3][4:6] == ["31.98", "1.000"]
    assert table["columns"][6:] == ["weight × water", "weight × money", "weight × generic",
                                    "weight × fourth"]
    # the sum row is bank's whole new vector: each mix column adds up to its number
    assert [float(c) for c in table["rows"][3][6:]] == [round(x, 3) for x in out["values"]["bank_after_vector"]]
    assert [round(float(c), 2) for c in table["rows"][3][6:8]] == [1.73, 0.93]
    for col in range(6, 10):
        assert sum(float(row[col]) for row in table["rows"][:3]) == pytest.approx(
            float(table["rows"][3][col]), abs=2e-3)
    unscaled = post(client, scaled=False)["table"]
    assert unscaled["columns"][3] == "score (not divided)"
    assert [row[5] for row in unscaled["rows"][:3]] == ["0.045", "0.221", "0.734"]


def test_summary_says_what_the_figure_shows(client):
    s = post(client)["summary"]
    assert s.startswith("In 'the river bank'")
    assert "0.137" in s and "0.306" in s and "0.557" in s and "1.73" in s and "leans water" in s
    assert "not divided" in post(client, scaled=False)["summary"]
    c = post(client, neighbour="custom", water=-3.0, money=-3.0, generic=-3.0)["summary"]
    assert c.startswith("With the custom word (-3, -3, -3, 0) between 'the' and bank")
    assert "custom word bank" not in c


def test_custom_word_uses_the_four_numbers(client):
    v = post(client, neighbour="custom", water=1.6, money=1.6, generic=0.8, fourth=0.0)["values"]
    assert v["vectors"][1] == [1.6, 1.6, 0.8, 0.0] and v["words"][1] == "custom word"
    assert v["bank_after"]["water"] == v["bank_after"]["money"] and v["leans"].startswith("neither")
    start = post(client, neighbour="custom")["values"]  # the custom sliders start at river's numbers
    assert start["weights"] == post(client)["values"]["weights"]
    fourth = post(client, neighbour="custom", fourth=2.0)["values"]
    assert fourth["scores"][1] == start["scores"][1]  # bank's fourth number is 0: no effect on the score
    assert fourth["bank_after_vector"][3] > 0          # but the mix carries it into bank
    assert fourth["fourth_after"] == fourth["bank_after_vector"][3]  # shown in the values panel
    assert "fourth_after" in [o.name for o in rbw.SPEC.outputs]


def test_custom_sliders_are_out_of_play_while_a_named_word_is_chosen(client):
    """The select says which word sits in the sentence; the sliders define the custom word. With
    river or savings chosen they keep their values (so switching back restores the custom word),
    change nothing, and the summary says so."""
    plain, moved = post(client), post(client, water=-2.0, money=3.0, generic=1.0, fourth=1.0)
    same = {k: v for k, v in moved["values"].items() if k != "custom_moved"}
    assert same == {k: v for k, v in plain["values"].items() if k != "custom_moved"}
    assert moved["table"] == plain["table"] and moved["figure"] == plain["figure"]
    assert "not used" not in plain["summary"]
    assert "not used" in moved["summary"] and not moved["values"]["custom_in_play"]
    custom = post(client, neighbour="custom", water=-2.0, money=3.0, generic=1.0, fourth=1.0)
    assert custom["values"]["custom_in_play"] and "not used" not in custom["summary"]
    assert custom["values"]["vectors"][1] == [-2.0, 3.0, 1.0, 1.0]


def test_custom_sliders_are_disabled_unless_the_neighbour_is_custom():
    """The page greys them out through the spec's dependent state (spec.Depends)."""
    labels = {p.name: p.label for p in rbw.SPEC.params}
    for name in ("water", "money", "generic", "fourth"):
        p = rbw.SPEC.param(name)
        for neighbour, disabled in (("river", True), ("savings", True), ("custom", False)):
            eff = p.effective({"neighbour": neighbour}, labels)
            assert eff["disabled"] is disabled, (name, neighbour)
        assert p.to_json()["depends"][0]["on"] == "neighbour"


@pytest.mark.parametrize("body,fragment", [
    ({"neighbour": "lake"}, "'neighbour word' must be one of 'river', 'savings', 'custom'"),
    ({"scaled": "yes"}, "'divide by √d' must be true or false"),
    ({"neighbour": "custom", "water": 3.5}, "'custom: water' must be from -3 to 3"),
    ({"neighbour": "custom", "money": "a lot"}, "'custom: money' must be a number"),
    ({"bank": [1, 2]}, "unknown parameter"),
])
def test_bad_input_is_a_400_with_the_rule(client, body, fragment):
    r = client.post(URL, json=body)
    assert r.status_code == 400 and fragment in r.get_json()["error"]


def test_bake_points_cover_the_chapters_settings():
    """The page works with no API at every setting the chapter names."""
    points = rbw.SPEC.bake_points()
    for want in ({"neighbour": "river", "scaled": True}, {"neighbour": "river", "scaled": False},
                 {"neighbour": "savings", "scaled": True}, {"neighbour": "savings", "scaled": False},
                 {"neighbour": "custom", "water": 1.6, "money": 1.6, "generic": 0.8}):
        assert any(all(p[k] == v for k, v in want.items()) for p in points), want
    for p in points:  # every baked point is itself a valid request
        rbw.compute(rbw.SPEC.resolve(p))


def test_figure_is_small_themeable_and_has_a_phone_layout():
    out = rbw.compute(rbw.SPEC.defaults())
    fig = out["figure"]
    text = json.dumps(fig)
    assert len(text) < 8000
    for key in ("paper_bgcolor", "plot_bgcolor", "font"):
        assert key not in fig["layout"]
    assert fig["narrow"]["xaxis"]["domain"] == [0, 1]
    assert fig["data"][0]["y"] == out["values"]["weights"]


@pytest.mark.parametrize("corner", [-3.0, 3.0])
def test_word_labels_face_the_middle_and_have_room_at_the_slider_extremes(corner):
    """A label at the panel's edge sits on its inner side, and the axes leave room around the
    farthest point (the browser test checks the drawn labels stay inside the panel)."""
    v = rbw.compute(rbw.SPEC.resolve({"neighbour": "custom", "water": corner, "money": corner,
                                      "generic": corner, "fourth": corner}))
    fig = v["figure"]
    words = next(t for t in fig["data"] if t.get("mode") == "markers+text")
    lo, hi = fig["layout"]["xaxis2"]["range"]
    custom_side = words["textposition"][1]
    assert custom_side == ("top right" if corner < 0 else "bottom left")
    assert (lo <= corner - 0.5) if corner < 0 else (hi >= corner + 0.5)
    assert words["cliponaxis"] is False
