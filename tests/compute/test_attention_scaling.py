"""The attention_scaling figure as a reader sees it: what is drawn on top, which trace marks
the current setting, the rank axis at the ends of the positions slider, the values panel's
order, the screen-reader summary and table, colours from the shared style."""

from __future__ import annotations

import json

import pytest

from backend.compute import REGISTRY
from backend.compute.style import COLORS

MODULE = REGISTRY["attention_scaling"]


def result(**params):
    return MODULE.compute({**MODULE.SPEC.defaults(), **params})


def names(fig):
    return [t.get("name") for t in fig["data"]]


def test_theory_line_is_drawn_over_the_red_curve_and_visible():
    fig = result()["figure"]
    order = names(fig)
    assert order.index("d_k (theory)") > order.index("Var(q·k)")  # later = drawn on top
    theory = fig["data"][order.index("d_k (theory)")]
    red = fig["data"][order.index("Var(q·k)")]
    assert theory["mode"] == "lines+markers" and theory["line"]["dash"] in ("dash", "dot")
    assert theory["line"]["width"] >= red["line"]["width"]
    assert theory["marker"]["symbol"].endswith("-open")  # hollow: the red point shows through
    assert theory["line"]["color"] != red["line"]["color"]


@pytest.mark.parametrize("d_k", [1, 64, 1000])
def test_current_point_is_the_first_legendless_marker_trace(d_k):
    """tests/site/test_browser.py finds it as the first trace with mode 'markers' and
    showlegend false; it must carry the reader's d_k, in the accent colour, not black."""
    fig = result(d_k=d_k)["figure"]
    ring = next(t for t in fig["data"] if t["mode"] == "markers" and t["showlegend"] is False)
    assert ring["x"] == [d_k, d_k]
    assert ring["marker"]["color"] == COLORS["accent"]


def test_rank_axis_has_whole_ranks_only_at_two_positions():
    fig = result(n_positions=2)["figure"]
    assert fig["layout"]["xaxis2"]["type"] == "category"
    for name in ("softmax(q·k)", "softmax(q·k/√d_k)", "even split"):
        assert fig["data"][names(fig).index(name)]["x"] == ["1", "2"]


@pytest.mark.parametrize("n_positions", [17, 256, 512])
def test_many_positions_show_the_top_ranks_and_one_summed_tail_bar(n_positions):
    out = result(n_positions=n_positions)
    fig = out["figure"]
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    assert len(bars) == 2
    for bar in bars:
        assert len(bar["x"]) == MODULE.TOP_RANKS + 1  # never hundreds of hairlines
        assert bar["x"][:3] == ["1", "2", "3"]
        assert sum(bar["y"]) == pytest.approx(1.0, abs=1e-9)  # the tail bar carries the rest
    assert bars[0]["x"][-1] == (f"17–{n_positions}" if n_positions > 17 else "17")
    assert "summed" in fig["layout"]["xaxis2"]["title"]["text"]
    even = fig["data"][names(fig).index("even split")]["y"]
    assert even[-1] == pytest.approx((n_positions - MODULE.TOP_RANKS) / n_positions)
    assert len(json.dumps(fig)) < 12_000  # small payload


def test_outputs_come_in_unscaled_then_scaled_pairs():
    outputs = [o.name for o in MODULE.SPEC.outputs]
    paired = [n for n in outputs if n.endswith(("_unscaled", "_scaled"))]
    assert outputs[:len(paired)] == paired  # pairs first, references after
    for a, b in zip(paired[::2], paired[1::2]):
        assert a.endswith("_unscaled") and b == a.replace("_unscaled", "_scaled")


def test_summary_and_table_say_what_the_figure_shows():
    out = result(d_k=512, n_positions=512)
    v = out["values"]
    assert "512" in out["summary"] and f"{v['var_unscaled']:.1f}" in out["summary"]
    table = out["table"]
    assert table["columns"][1:3] == ["unscaled q·k", "scaled q·k/√d_k"]
    assert all(len(row) == len(table["columns"]) for row in table["rows"])
    assert f"{v['n_pairs']:,} pairs" in table["caption"]
    assert any(r[0].startswith("weight on ranks 17–512") for r in table["rows"])
    assert [r for r in table["rows"] if r[0] == "mean largest weight"][0][1] == \
        f"{v['max_prob_unscaled']:.4f}"


def test_figure_colours_come_from_the_shared_palette():
    blob = json.dumps(result(n_positions=64)["figure"])
    palette = {c.lower() for c in COLORS.values()}
    import re
    used = {c.lower() for c in re.findall(r"#[0-9a-fA-F]{3,6}\b", blob)}
    assert used <= palette
    layout = result()["figure"]["layout"]
    assert "paper_bgcolor" not in layout and "plot_bgcolor" not in layout and "font" not in layout


def test_api_returns_summary_and_table(client):
    r = client.post("/api/widgets/attention_scaling", json={"d_k": 32, "n_positions": 3})
    assert r.status_code == 200
    body = r.get_json()
    assert body["summary"] and body["table"]["rows"]
    r = client.post("/api/widgets/attention_scaling", json={"n_positions": 1})
    assert r.status_code == 400 and "from 2 to 512" in r.get_json()["error"]


@pytest.mark.parametrize("n_positions", [8, 512])
def test_phone_layout_keeps_titles_clear(n_positions):
    """At 390 px (checked by screenshot when written): a label at each power of ten only on the
    log axis (no stray minor "2"/"5"), a short variance title, the legend below the bottom
    axis title with room in the margin, and a rank title that fits the width."""
    fig = result(n_positions=n_positions)["figure"]
    assert fig["layout"]["yaxis"]["dtick"] == 1 and fig["layout"]["yaxis"]["type"] == "log"
    narrow = fig["narrow"]
    assert len(narrow["yaxis"]["title"]["text"]) <= 10
    assert narrow["legend"]["y"] <= -0.14 and narrow["legend"]["yanchor"] == "top"
    assert narrow["margin"]["b"] >= 150
    assert len(narrow["xaxis2"]["title"]["text"]) <= 36
