"""The paged_kv and kv_levers widgets through the API: the numbers, the picture, the 400s."""

from __future__ import annotations

import re

import pytest

from backend.compute import paged_kv
from backend.reference.paged_replay import SLOT
from tests.support.api import poster

URL = "/api/widgets/paged_kv"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON
levers = poster("/api/widgets/kv_levers")


def test_defaults_every_slot_is_accounted_and_paging_holds_more_tokens(client):
    out = post(client)
    v = out["values"]
    for s in ("contiguous", "paged"):
        assert v[f"{s}_token_share"] + v[f"{s}_empty_share"] + v[f"{s}_free_share"] == \
            pytest.approx(1)
        assert 0 <= v[f"{s}_never_share"] <= v[f"{s}_empty_share"]
    assert v["paged_token_share"] > v["contiguous_token_share"]
    assert v["running_ratio"] == pytest.approx(v["paged_running"] / v["contiguous_running"])
    assert v["bytes_per_token"] == 131_072
    assert v["arena_gb"] == pytest.approx(16384 * 131_072 / 1e9)
    assert "run at once" in out["summary"] and len(out["table"]["rows"]) == 2
    assert all(len(r) == len(out["table"]["columns"]) for r in out["table"]["rows"])


def test_the_picture_is_the_arena_in_cells(client):
    fig = post(client)["figure"]
    heat = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert len(heat) == 2
    for h in heat:
        cells = [c for row in h["z"] for c in row]
        assert len(cells) == paged_kv.CELLS and all(len(r) == paged_kv.COLUMNS for r in h["z"])
        assert set(cells) <= set(SLOT.values())
    contiguous, paged = ([c for row in h["z"] for c in row] for h in heat)
    assert SLOT["never"] in contiguous and SLOT["never"] not in paged
    assert SLOT["shared"] not in paged  # one sample: nothing shared


def test_parallel_samples_share_blocks_and_copy_on_write(client):
    v = post(client, samples=4)["values"]
    assert v["paged_shared_share"] > 0 and v["paged_copies"] > 0


@pytest.mark.parametrize("params, name", [
    ({"mean_len": 2048, "max_len": 1024}, "mean_len"),
    ({"samples": 8, "max_len": 4096}, "max_len"),
    ({"block_size": 0}, "block_size"),
    ({"budget_tokens": 100_000}, "budget_tokens"),
])
def test_bad_settings_are_400s_naming_the_parameter(client, params, name):
    r = client.post(URL, json=params)
    assert r.status_code == 400 and r.get_json()["param"] == name


def test_levers_widget_table_and_bars(client):
    out = levers(client, context_len=32768)
    v = out["values"]
    assert v["gqa_bytes_per_token"] == 131_072 and v["gqa_cut"] == 1
    assert v["window_user_bytes"] == 4096 * 131_072
    assert len(out["table"]["rows"]) == len(out["figure"]["data"][0]["y"]) == 8
    assert client.post("/api/widgets/kv_levers", json={"context_len": 10}).status_code == 400


def test_the_free_swatch_is_a_visible_palette_colour_and_the_headings_are_short(client):
    from backend.compute.style import COLORS
    fig = post(client)["figure"]
    free = [t for t in fig["data"] if t.get("name") == "free"][0]
    assert free["marker"]["color"] == COLORS["guide"]
    # at 390 px a heading longer than this is cut before its cell size
    assert all(len(a["text"]) <= 50 for a in fig["layout"]["annotations"])
    assert "8 slots" in fig["layout"]["annotations"][0]["text"]


def test_levers_bars_are_linear_and_labelled_and_the_table_says_larger_or_smaller(client):
    out = levers(client, context_len=32768)
    bar, layout = out["figure"]["data"][0], out["figure"]["layout"]
    assert layout["xaxis"].get("type", "linear") == "linear"
    assert len(bar["text"]) == 8 and all(t.endswith(" GB") for t in bar["text"])
    assert len(layout["xaxis"]["title"]["text"]) <= 32  # not cut at 390 px
    col = out["table"]["columns"].index("against as built")
    by_name = {r[0]: r[col] for r in out["table"]["rows"]}
    assert by_name["multi-head (n_kv = h)"] == "4× larger"
    assert by_name["grouped-query (as built)"] == "same"
    assert by_name["sliding window, 4,096"] == "8× smaller"


def test_the_grids_say_what_a_row_and_a_cell_are(client):
    """Review P7: both grids had no axis labels; what is a row, what is a column?"""
    body = poster("/api/widgets/paged_kv")(client)
    fig = body["figure"]
    assert "(cell = " in fig["layout"]["annotations"][0]["text"]
    assert body["summary"].endswith("Each grid is the arena read row by row, left to right.")
    assert all(fig["layout"][ax]["ticks"] == "" for ax in ("xaxis", "yaxis", "xaxis2", "yaxis2"))


def test_both_grids_have_axis_titles_and_say_how_many_slots_a_cell_holds(client):
    """Issue 33 (P7, re-tried): the grids had no axis titles, and only the contiguous one said
    what a cell holds. Every axis of both grids is titled, and each grid's heading names the
    slots in a cell, on a desktop and in the phone's patch."""
    for setting in ({}, {"block_size": 32}):
        fig = post(client, **setting)["figure"]
        lay = fig["layout"]
        titles = {ax: lay[ax].get("title", {}).get("text", "") for ax in
                  ("xaxis", "yaxis", "xaxis2", "yaxis2")}
        assert all(titles.values()), titles
        assert "cells a row" in titles["xaxis"] and titles["xaxis"] == titles["xaxis2"]
        for notes in (lay["annotations"], fig["narrow"]["annotations"]):
            assert len(notes) == 2
            assert all(re.search(r"cell = [\d,]+ slots", a["text"]) for a in notes)
