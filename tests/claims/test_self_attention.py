"""Every qualitative sentence of docs/chapters/self-attention.md, asserted over computed values:
at the settings the text names, and across the sliders where it invites the reader to move them.
From "in matrices" on, the chapter's sentences are in test_self_attention_matrices.py."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from backend.compute import river_bank as w
from backend.reference import river_bank as rb

# three words of four numbers: one torch thread (tests/claims/conftest.py)
pytestmark = pytest.mark.usefixtures("one_torch_thread")


GRID = (-3.0, -1.5, -0.2, 0.0, 0.7, 1.6, 2.6, 3.0)   # across each custom slider's range


def run(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def custom(water=2.6, money=0.0, generic=0.5, fourth=0.0, **kw):
    return run(neighbour="custom", water=water, money=money, generic=generic, fourth=fourth, **kw)


RIVER, SAVINGS, UNSCALED = run(), run(neighbour="savings"), run(scaled=False)


def custom_grid():
    yield from itertools.product(GRID, GRID, (-3.0, 0.0, 0.5, 3.0))


# ---------------------------------------------------------------- intro and the three words

def test_bank_after_depends_on_its_neighbour():
    """'the vector for "bank" after the step depends on what stood next to it'"""
    assert RIVER["bank_after_vector"] != SAVINGS["bank_after_vector"]
    assert RIVER["vectors"][2] == SAVINGS["vectors"][2]  # same bank going in


def test_fourth_number_is_zero_and_bank_starts_between_the_senses():
    """'a fourth number that is 0 for every word here'; 'bank starts exactly between the two
    senses'; 'the river should pull it towards water'."""
    assert all(rb.WORDS[word][3] == 0 for word in rb.WORDS)
    assert RIVER["bank_before"]["water"] == RIVER["bank_before"]["money"]
    assert RIVER["leans"] == "water" and RIVER["water_after"] > RIVER["money_after"]


# ---------------------------------------------------------------- step 1

def test_river_outscores_the_through_the_water_position():
    """'River outscores "the" because the two share the water position ...: that one product
    alone is larger than bank's whole score with "the", which shares only the generic position
    with bank. bank's highest score is with itself.'"""
    the, river, bank = RIVER["vectors"]
    s_the, s_river, s_bank = RIVER["scores"]
    assert s_river > s_the
    assert bank[0] * river[0] > s_the
    the_terms = [b * t for b, t in zip(bank, the)]
    assert max(the_terms) == the_terms[2]  # generic is the only sizeable overlap
    assert the_terms[2] > the_terms[0] + the_terms[1]
    assert s_bank == max(RIVER["scores"])


# ---------------------------------------------------------------- steps 2 and 3, the flip

def test_weights_positive_and_sum_to_one_and_bank_leans_water():
    assert all(p > 0 for p in RIVER["weights"]) and math.isclose(sum(RIVER["weights"]), 1)
    assert RIVER["leans"] == "water"


def test_subtracting_the_largest_score_gives_the_same_weights_and_never_overflows():
    """"Code that computes a softmax first subtracts the row's largest score ... is the same
    weight ... every exponential is then at most 1 ... On this chapter's scores the two give the
    same weights. They part when the scores are large: e^x is more than float32 can hold once x
    passes 88.7 (float16 once it passes 11.09). That term's weight is then ∞/∞, which is not a
    number, and every other weight in its row is a finite number over ∞, which is 0 ...
    PyTorch's torch.softmax subtracts the largest score for you." (The chapter once taught only
    the written-out softmax, then said one such term makes its whole row ∞/∞.)"""
    from backend.compute import attention_scaling

    for v in (RIVER, SAVINGS, UNSCALED):
        divided = torch.tensor(v["divided"], dtype=torch.float64)
        torch.testing.assert_close(rb.softmax_stable(divided), rb.softmax_written_out(divided))
        torch.testing.assert_close(rb.softmax_stable(divided),
                                   torch.tensor(v["weights"], dtype=torch.float64))
    limits = attention_scaling.facts(attention_scaling.SPEC.resolve({}))
    for dtype in (torch.float32, torch.float16):
        x = limits[f"exp_limit_{str(dtype).removeprefix('torch.')}"]
        below, above = torch.tensor([x - 0.01, x + 0.01], dtype=torch.float64).to(dtype).exp()
        assert torch.isfinite(below) and torch.isinf(above)
        big = torch.tensor([x + 1, 0.5, -2.0]).to(dtype)  # one score past the limit
        written = rb.softmax_written_out(big)
        assert torch.isnan(written[0]) and (written[1:] == 0).all()  # ∞/∞, and finite/∞
        stable = rb.softmax_stable(big)
        assert torch.isfinite(stable).all() and rb.softmax_written_out(big - big.max()).equal(stable)
        assert torch.isfinite(torch.softmax(big, -1)).all()
        assert torch.allclose(torch.softmax(big.float(), -1), stable.float(), atol=1e-3)


def test_the_savings_flip_is_exact():
    """'The flip is exact, not approximate ... savings gets the same weight ... the whole
    weighted average is the river result with its first two numbers swapped.'
    Widget: 'The weights do not move at all, and water and money trade places.'"""
    assert SAVINGS["weights"] == RIVER["weights"]
    assert SAVINGS["scores"][1] == RIVER["scores"][1]
    r, s = RIVER["bank_after_vector"], SAVINGS["bank_after_vector"]
    assert (s[0], s[1], s[2], s[3]) == (r[1], r[0], r[2], r[3])
    assert SAVINGS["leans"] == "money"


@pytest.mark.parametrize("scaled", [True, False])
def test_swapping_water_and_money_swaps_the_result_at_every_custom_setting(scaled):
    """The reason given for the flip holds for any neighbour, not only river."""
    for water, money, generic in custom_grid():
        a = custom(water, money, generic, scaled=scaled)
        b = custom(money, water, generic, scaled=scaled)
        # exact in real arithmetic; in float64 the sums are added in another order
        assert a["weights"] == pytest.approx(b["weights"], abs=1e-12)
        assert a["water_after"] == pytest.approx(b["money_after"], abs=1e-12)
        assert a["money_after"] == pytest.approx(b["water_after"], abs=1e-12)


# ---------------------------------------------------------------- "things to try"

def test_a_neighbour_with_banks_own_numbers_ties():
    """'The custom word now scores as high as bank itself, the two share the largest weight
    ..., and bank ends on the diagonal. A neighbour with no preference cannot give bank one.'"""
    v = custom(1.6, 1.6, 0.8, 0.0)
    assert v["scores"][1] == v["scores"][2]
    assert v["weights"][1] == v["weights"][2] == max(v["weights"])
    assert v["water_after"] == v["money_after"] and v["leans"].startswith("neither")


@pytest.mark.parametrize("scaled", [True, False])
def test_any_neighbour_without_preference_leaves_bank_on_the_diagonal(scaled):
    # exact: every word's water and money are equal, so the two columns' sums are the same
    # products added in the same order
    for water, generic in itertools.product(GRID, (-3.0, 0.0, 0.5, 3.0)):
        v = custom(water, water, generic, scaled=scaled)
        assert v["water_after"] == v["money_after"]


def test_raising_water_with_money_zero():
    """'Set the custom word's money to 0 and raise its water from 0 to 3. The lean towards
    water grows the whole way, from none at water 0 ... Go below 0 and bank tilts, only
    slightly, towards money: a word that is "anti-water" takes a little weight.'"""
    ups = [custom(x / 10, 0.0) for x in range(0, 31)]
    leans = [v["lean"] for v in ups]
    assert leans[0] == 0.0
    assert all(b > a for a, b in zip(leans, leans[1:]))
    assert all(b["weight_neighbour"] > a["weight_neighbour"] for a, b in zip(ups, ups[1:]))
    at_zero = ups[0]
    for x in range(-30, 0):
        v = custom(x / 10, 0.0)
        assert v["lean"] < 0 and v["leans"] == "money"
        assert abs(v["lean"]) < 0.1 * RIVER["lean"]            # only slightly
        assert v["weight_neighbour"] < at_zero["weight_neighbour"]  # a little weight


def test_the_fourth_number_is_handed_over_but_not_scored():
    """'Its score does not change, because bank's fourth number is 0, yet **bank after: fourth**
    climbs away from 0 ...; the table's last column shows it is the custom word's weight times
    its fourth number.'"""
    base = custom(fourth=0.0)
    assert base["fourth_after"] == 0
    prev = 0.0
    for f in (0.5, 1.0, 2.0, 3.0):
        v = custom(fourth=f)
        assert v["scores"] == base["scores"] and v["weights"] == base["weights"]
        assert v["fourth_after"] > prev  # climbs
        prev = v["fourth_after"]
    assert custom(fourth=-2.0)["fourth_after"] < 0
    out = w.compute(w.SPEC.resolve({"neighbour": "custom", "fourth": 3.0}))
    rows = out["table"]["rows"]
    assert out["table"]["columns"][-1] == "weight × fourth"
    assert [r[-1] for r in rows[:3]] == ["0.000", format(out["values"]["weights"][1] * 3.0, ".3f"), "0.000"]
    assert rows[3][-1] == format(out["values"]["fourth_after"], ".3f")
    labels = [o.label for o in w.SPEC.outputs]
    assert "bank after: fourth" in labels


def _inside_triangle(p, a, b, c, eps=1e-9):
    def cross(o, u, v):
        return (u[0] - o[0]) * (v[1] - o[1]) - (u[1] - o[1]) * (v[0] - o[0])
    area = cross(a, b, c)
    if abs(area) < 1e-12:  # the three words on a line: bank lies between the extremes
        return all(min(q[i] for q in (a, b, c)) - eps <= p[i] <= max(q[i] for q in (a, b, c)) + eps
                   for i in range(2))
    s = [cross(a, b, p) / area, cross(b, c, p) / area, cross(c, a, p) / area]
    return all(x >= -eps for x in s)


def test_a_weight_can_show_as_zero_but_is_not():
    """'none is ever exactly 0, though one can get small enough to show as 0.000: with the
    custom word at (3, 3, 3, 3) and no division, "the" gets ...'"""
    v = custom(3.0, 3.0, 3.0, 3.0, scaled=False)
    assert 0 < v["weight_the"] and format(v["weight_the"], ".3f") == "0.000"


def test_the_triangle_is_drawn_and_collapses_on_the_diagonal():
    """'inside the shaded triangle of the three words'; 'or on a line, when the three points
    line up, as they do whenever the custom word's water and money are equal'."""
    for params in ({}, {"neighbour": "custom", "water": -2.0, "money": 1.0}):
        out = w.compute(w.SPEC.resolve(params))
        tri = next(t for t in out["figure"]["data"] if t.get("fill") == "toself")
        corners = [row[:2] for row in out["values"]["vectors"]]
        assert list(zip(tri["x"], tri["y"])) == [tuple(c) for c in corners + corners[:1]]
    for x in GRID:
        v = custom(x, x, 0.5)
        (ax, ay), (bx, by), (cx, cy) = (row[:2] for row in v["vectors"])
        assert (bx - ax) * (cy - ay) - (by - ay) * (cx - ax) == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("scaled", [True, False])
def test_weights_positive_and_bank_inside_the_triangle_at_every_setting(scaled):
    """'Whatever numbers you type, the three weights add up to 1 and none is ever exactly 0 ...
    bank after ... always lands inside the shaded triangle they make (or on a line ...)'."""
    for water, money, generic in custom_grid():
        v = custom(water, money, generic, scaled=scaled)
        assert all(p > 0 for p in v["weights"]) and math.isclose(sum(v["weights"]), 1)
        a, b, c = (row[:2] for row in v["vectors"])
        assert _inside_triangle((v["water_after"], v["money_after"]), a, b, c)


# ---------------------------------------------------------------- without the division

def test_without_the_division_bank_copies_more_of_itself():
    """'Dividing every score by 2 halves the gaps ... the largest score takes a bigger share:
    here bank itself ... bank copies more of itself and mixes less. It moves ... less ..., and
    its lean towards water shrinks.'"""
    assert RIVER["divided"] == [s / 2 for s in RIVER["scores"]]
    assert RIVER["scores"].index(max(RIVER["scores"])) == 2
    assert UNSCALED["weight_bank"] > RIVER["weight_bank"]
    assert UNSCALED["moved"] < RIVER["moved"]
    assert UNSCALED["moved_plane"] < RIVER["moved_plane"]
    assert 0 < UNSCALED["lean"] < RIVER["lean"]


def test_the_arrow_and_the_lean_as_the_text_prints_them():
    """'In the figure's water/money plane its arrow is ... long' (the plane distance, which
    differs from the distance over all four numbers); 'water − money = lean' at three decimals
    subtracts correctly, where the two-decimal values above do not."""
    for v in (RIVER, UNSCALED):
        before, after = v["bank_before"], v["bank_after"]
        assert v["moved_plane"] == pytest.approx(math.hypot(after["water"] - before["water"],
                                                            after["money"] - before["money"]))
        assert format(round(v["water_after"], 3) - round(v["money_after"], 3), ".3f") == format(v["lean"], ".3f")
    assert format(RIVER["moved_plane"], ".2f") != format(RIVER["moved"], ".2f")
    rounded_lean = round(RIVER["water_after"], 2) - round(RIVER["money_after"], 2)
    assert format(rounded_lean, ".2f") != format(RIVER["lean"], ".2f")


def test_float32_prints_the_same_three_decimals():
    """'float32 would print the same three decimals here'"""
    for name in ("river", "savings"):
        for scaled in (True, False):
            words = rb.sentence(rb.WORDS[name])
            a = rb.bank_in_context(words, scaled=scaled)
            b = rb.bank_in_context(words.float(), scaled=scaled)
            for x, y in ((a.weights, b.weights), (a.after, b.after), (a.scores, b.scores)):
                assert [format(t, ".3f") for t in x.tolist()] == [format(t, ".3f") for t in y.tolist()]


def test_every_word_in_context_keeps_float64():
    """The matrix form runs through attention.py, whose softmax must not downcast float64."""
    out, A = rb.every_word_in_context(rb.sentence(rb.WORDS["river"]))
    assert A.dtype == out.dtype == torch.float64
    torch.testing.assert_close(A[2], rb.bank_in_context(rb.sentence(rb.WORDS["river"])).weights,
                               atol=1e-15, rtol=0)


def test_one_number_goes_the_other_way():
    """'bank's water number is slightly higher unscaled. The weight bank takes back for itself
    comes from "the" as much as from river, and "the" has far less water than bank, so giving it
    less weight raises the average water by more than giving river less lowers it.'"""
    assert UNSCALED["water_after"] > RIVER["water_after"]
    assert UNSCALED["water_after"] - RIVER["water_after"] < 0.1  # slightly
    d = [u - s for u, s in zip(UNSCALED["weights"], RIVER["weights"])]
    assert d[0] < 0 and d[1] < 0 and d[2] > 0
    assert math.isclose(d[0], d[1], rel_tol=0.15)  # as much from "the" as from river
    water = [row[0] for row in RIVER["vectors"]]
    from_the = d[0] * (water[0] - water[2])       # > 0: less of a low-water word
    from_river = d[1] * (water[1] - water[2])     # < 0: less of a high-water word
    assert from_the > -from_river > 0
    assert math.isclose(from_the + from_river, UNSCALED["water_after"] - RIVER["water_after"])


@pytest.mark.parametrize("name", ["river", "savings"])
def test_switching_the_division_off_never_lowers_the_top_words_weight(name):
    """'at every setting of the widget, switching the division off gives the highest-scoring
    word at least as much weight as before'"""
    settings = [run(neighbour=name, scaled=s) for s in (True, False)]
    settings_custom = [(custom(x, m, g, scaled=True), custom(x, m, g, scaled=False))
                       for x, m, g in custom_grid()]
    for on, off in [tuple(settings)] + settings_custom:
        top = on["scores"].index(max(on["scores"]))
        assert off["weights"][top] >= on["weights"][top] - 1e-12
