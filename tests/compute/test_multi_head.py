"""The multi_head widget: handout numbers (its build-time facts), and through the API counts
from the modules and 400s."""

from __future__ import annotations

import pytest

from backend.compute import multi_head as mh
from backend.compute.style import TICK_PX
from backend.reference.config import ModelConfig
from backend.reference.grouped_query import GroupedQueryAttention
from tests.support.api import poster

URL = "/api/widgets/multi_head"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


def _facts() -> dict:
    """The values only the chapter quotes: worked out when the book is built (`facts`), not
    per request."""
    return mh.facts(mh.SPEC.resolve({}))


def test_handout_two_heads_digits():
    ex = _facts()["two_heads"]
    two = {k: [f"{x:.2f}" for x in d.values()] for k, d in ex.items()}
    assert two["one_head"] == ["0.14", "0.31", "0.56"]
    assert two["head_a"] == ["0.03", "0.33", "0.64"]
    assert two["head_b"] == ["0.59", "0.19", "0.22"]
    assert two["head_a_try"][0] == "0.30"
    assert ex["head_b_try"] == ex["head_b"]


def test_handout_head_table():
    rows = _facts()["head_table"]
    assert [(r["d_model"], r["n_heads"], r["d_head"]) for r in rows] == [
        (512, 8, 64), (4096, 32, 128), (12288, 96, 128)]


@pytest.mark.parametrize("h, n_kv, d", [(8, 8, 512), (8, 2, 512), (8, 1, 512), (4, 2, 128), (16, 4, 1024)])
def test_counts_come_from_the_module(client, h, n_kv, d):
    v = post(client, n_heads=h, n_kv=n_kv, d_model=d)["values"]
    cfg = ModelConfig(vocab_size=1, d_model=d, n_layers=1, n_heads=h, n_kv_heads=n_kv, d_ff=1)
    layer = GroupedQueryAttention(cfg)  # an independent build of the reference module
    assert v["params_attention"] == sum(p.numel() for p in layer.parameters())
    assert v["params_attention"] == 2 * d * d + 2 * d * n_kv * (d // h)  # hand arithmetic
    assert v["params_kv"] == 2 * d * n_kv * (d // h)
    assert v["kv_bytes_per_token"] == 2 * n_kv * (d // h) * 2  # K and V, bf16
    assert v["kv_fraction"] == n_kv / h
    assert v["d_head"] == d // h and v["n_rep"] == h // n_kv


def test_maps_are_causal_softmax_rows(client):
    body = post(client, n_heads=4, n_kv=2, d_model=128)
    v, maps = body["values"], [tr["z"] for tr in body["figure"]["data"]]
    T = len(v["words"])
    assert v["words"][0] == "the" and v["words"][-1] == "table" and T == 9
    assert len(maps) == 4 and v["groups"] == [0, 0, 1, 1]
    for m in maps:
        for q, row in enumerate(m):
            assert abs(sum(row) - 1) < 2e-3 and all(x == 0 for x in row[q + 1:])


def test_result_has_summary_table_and_phone_layout(client):
    body = post(client, n_heads=8, n_kv=2)
    assert "8 attention maps" in body["summary"] and "grouped-query" in body["summary"]
    assert len(body["table"]["rows"]) == 8 and body["table"]["columns"][:2] == ["head", "KV head"]
    assert len(body["figure"]["data"]) == 8
    assert body["figure"]["narrow"]["xaxis2"]["domain"][0] > 0.5  # two columns on a phone


@pytest.mark.parametrize("params, label", [
    ({"n_heads": 8, "n_kv": 3}, "key/value heads n_kv"),
    ({"n_heads": 4, "n_kv": 8}, "key/value heads n_kv"),
    ({"n_heads": 6, "d_model": 512}, "model width d"),
])
def test_cross_parameter_rules_are_400s_naming_both_labels(client, params, label):
    r = client.post(URL, json=params)
    assert r.status_code == 400
    msg = r.get_json()["error"]
    assert label in msg and "query heads h" in msg


@pytest.mark.parametrize("params", [
    {"n_heads": 8, "d_model": 40},            # off the step: d/h = 5 would be odd, RoPE refuses
    {"n_heads": 1, "n_kv": 1, "d_model": 48},
])
def test_a_width_off_the_step_is_a_400_naming_it(client, params):
    r = client.post(URL, json=params)
    assert r.status_code == 400
    assert r.get_json()["error"].startswith("'model width d' must be a multiple of 32")


def test_divisor_message_lists_the_choices(client):
    msg = client.post(URL, json={"n_heads": 8, "n_kv": 3}).get_json()["error"]
    assert "1, 2, 4, 8" in msg


@pytest.mark.parametrize("params", [{"n_heads": 0}, {"n_heads": 17}, {"d_model": 2048},
                                    {"n_kv": "two"}, {"d_model": 100.5}])
def test_out_of_range_is_400(client, params):
    assert client.post(URL, json=params).status_code == 400


def test_every_bake_point_is_valid():
    for point in mh.SPEC.bake_points():
        mh.check(point)


def test_controls_follow_the_head_count():
    """The page's n_kv control offers only the divisors of h; d only multiples of 32 and h."""
    n_kv, d = mh.SPEC.param("n_kv"), mh.SPEC.param("d_model")
    for h in range(1, mh.MAX_HEADS + 1):
        eff = n_kv.effective({"n_heads": h})
        assert eff["allowed"] == [k for k in range(1, h + 1) if h % k == 0] and eff["max"] == h
        widths = d.effective({"n_heads": h})["allowed"]
        assert widths and all(w % 32 == 0 and w % h == 0 and (w // h) % 2 == 0 for w in widths)
        assert len(widths) == len([w for w in range(32, 1025, 32) if w % h == 0])


def test_every_allowed_setting_is_a_200_not_a_500(client):
    for h in range(1, mh.MAX_HEADS + 1):
        for d in mh.SPEC.param("d_model").effective({"n_heads": h})["allowed"][:2]:
            assert client.post(URL, json={"n_heads": h, "n_kv": 1, "d_model": d}).status_code == 200


def test_title_colours_name_groups_without_repeats():
    for h, n_kv in [(16, 8), (16, 1), (8, 2), (16, 16), (12, 12)]:
        fig = mh.compute(mh.SPEC.resolve({"n_heads": h, "n_kv": n_kv, "d_model": 384 if h == 12 else 512}))["figure"]
        colors = [a["font"].get("color") for a in fig["layout"]["annotations"]]
        params = {"n_heads": h, "n_kv": n_kv, "d_model": 384 if h == 12 else 512}
        groups = mh.compute(mh.SPEC.resolve(params))["values"]["groups"]
        if n_kv == h:
            assert colors == [None] * h  # every head its own KV head: no group to colour
        else:
            by_group = {g: c for g, c in zip(groups, colors)}
            assert len(set(by_group.values())) == n_kv  # one colour per KV head, none repeated
            assert all(by_group[g] == c for g, c in zip(groups, colors))


def test_phone_panels_keep_their_height_at_16_heads():
    fig = mh.compute(mh.SPEC.resolve({"n_heads": 16, "n_kv": 4}))["figure"]
    narrow = fig["narrow"]
    plot_px = narrow["height"] - mh.TOP_PX - mh.BOTTOM_PX
    for i in range(16):
        n = "" if i == 0 else str(i + 1)
        lo, hi = narrow[f"yaxis{n}"]["domain"]
        assert (hi - lo) * plot_px >= 140  # room for nine word labels of size 9
    assert sum(narrow[f"xaxis{'' if i == 0 else i + 1}"]["showticklabels"] for i in range(16)) == 2


def test_hover_names_words_not_positions():
    fig = mh.compute(mh.SPEC.resolve({}))["figure"]
    assert fig["data"][0]["x"] == ["the₁", "keys", "to", "the₂", "cabinet", "were", "on", "the₃",
                                   "table"]
    assert "%{y} looks at %{x}" in fig["data"][0]["hovertemplate"]


def test_tick_labels_are_at_least_the_shared_size_on_every_layout(client):
    """The maps' word labels (issue 33, P12): 9 px on every screen before; now the shared
    figure style's TICK_PX (11 px), on the desktop layout and the phone's patch alike."""
    for h in (4, 8, 16):
        fig = post(client, n_heads=h, n_kv=h // 2)["figure"]
        for layout in (fig["layout"], fig["narrow"]):
            sizes = {k: a.get("tickfont", {}).get("size") for k, a in layout.items()
                     if k.startswith(("xaxis", "yaxis"))}
            assert len(sizes) >= h
            assert all(s is not None and s >= TICK_PX == 11 for s in sizes.values()), sizes
