"""The model_params widget through the API: real models' counts, preset/field rules, 400s."""

from __future__ import annotations

import pytest

from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM
from tests.support.api import poster

URL = "/api/widgets/model_params"
PUBLISHED = {  # the published sizes of the real models
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "llama-3-8b": 8_030_261_248,
}


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


error = poster(URL, 400, "error")  # the refusal's sentence


@pytest.mark.parametrize("preset", PUBLISHED)
def test_published_totals(client, preset):
    v = post(client, preset=preset)["values"]
    assert v["total_params"] == PUBLISHED[preset]
    assert v["total_params"] == v["embedding"] + v["attention"] + v["mlp"] + v["norms"] + v["lm_head"]


def test_handout_figures_llama2_7b(client):
    v = post(client)["values"]  # the page starts at Llama-2-7B
    assert v["embedding"] == v["lm_head"] == 32000 * 4096 == 131_072_000
    assert v["per_layer"] == 2 * 4096 + 4 * 4096**2 + 3 * 4096 * 11008 == 202_383_360  # not ~201M
    assert v["params_in_blocks"] == 6_476_267_520  # not ~6,432M
    assert f"{v['fraction_in_blocks']:.1%}" == "96.1%"  # not 95.5%
    assert f"{v['fraction_embedding']:.1%}" == "1.9%"  # "~2%"
    assert v["tied_saving"] == 131_072_000
    assert v["approx_12d2"] == 32 * 12 * 4096**2 + 2 * 32000 * 4096


def test_handout_figures_llama3_and_ratios(client):
    v = post(client, preset="llama-3-8b")["values"]
    assert v["embedding"] == 128256 * 4096 == 525_336_576  # the "525M" shared by tying
    assert v["logits_shape_full"] == [1, 4096, 128256] and v["logits_shape_last"] == [1, 1, 128256]
    assert v["logits_mib_full"] == 4096 * 128256 * 4 / 2**20
    assert f"{v['ratio_13b_over_7b']:.2f}" == "1.93" and f"{v['ratio_70b_over_13b']:.2f}" == "5.30"  # not 5.4


def test_tying_presets(client):
    small = post(client, preset="llama-3.2-1b")["values"]
    assert small["tied"] is True and small["lm_head"] == 0 and small["total_params"] == 1_235_814_400
    assert post(client, preset="llama-3-8b")["values"]["tied"] is False
    assert post(client, preset="llama-2-7b")["values"]["tied"] is False


def test_book_preset_matches_the_shipped_weights(client):
    from safetensors.torch import load_file

    from backend.bookmodel import WEIGHTS_DIR

    stored = sum(t.numel() for t in load_file(str(WEIGHTS_DIR / "model.safetensors")).values())
    assert post(client, preset="book")["values"]["total_params"] == stored  # tied: stored once


@pytest.mark.parametrize("fields", [
    dict(n_layers=3, d_model=64, n_heads=4, n_kv=2, d_ff=96, vocab=300, tied=False),
    dict(n_layers=2, d_model=128, n_heads=8, n_kv=8, d_ff=160, vocab=257, tied=True),
    dict(n_layers=1, d_model=64, n_heads=1, n_kv=1, d_ff=16, vocab=256, tied=False),
])
def test_custom_counts_equal_a_materialized_model(client, fields):
    v = post(client, preset="custom", **fields)["values"]
    cfg = ModelConfig(vocab_size=fields["vocab"], d_model=fields["d_model"], n_layers=fields["n_layers"],
                      n_heads=fields["n_heads"], n_kv_heads=fields["n_kv"], d_ff=fields["d_ff"],
                      tie_embeddings=fields["tied"])
    assert v["total_params"] == sum(p.numel() for p in DecoderLM(cfg).parameters())


def test_preset_fills_fields_and_forbids_contradictions(client):
    assert post(client, preset="llama-2-70b", n_layers=80)["values"]["total_params"] == PUBLISHED["llama-2-70b"]
    msg = error(client, preset="llama-2-13b", n_layers=10)
    assert "'layers L' must be from 40 to 40" in msg and "custom" in msg
    # the checkbox has no slider for the page to move: under a preset it is ignored, not refused
    for preset, ties in (("llama-3.2-1b", True), ("book", True), ("llama-2-7b", False)):
        for sent in (True, False):
            body = post(client, preset=preset, tied=sent)
            assert body["values"]["tied"] is ties and body["params"]["tied"] is ties
            # one sentence (issue 17, H10): what the preset does; the page's checkbox shows it
            assert body["notice"] == (f"Preset {preset} {'ties' if ties else 'does not tie'} its "
                                      "LM head to the embedding.")
    assert "notice" not in post(client, preset="custom")
    # custom starts from the fields it is given
    assert post(client, preset="custom", n_layers=64)["values"]["total_params"] != PUBLISHED["llama-2-7b"]


@pytest.mark.parametrize("params, label", [
    # divisibility is spec data (Depends): the 400 lists the counts the page's slider offers
    (dict(preset="custom", n_heads=24), "'query heads h' must be one of 1, 2, 4, 8, 16, 32, 64, "
                                        "128 when width d_model is 4096"),
    (dict(preset="custom", d_model=64, n_heads=64), "'query heads h' must be one of 1, 2, 4, 8, "
                                                    "16, 32 when width d_model is 64"),
    (dict(preset="custom", n_kv=3), "'key/value heads' must be one of 1, 2, 4, 8, 16, 32 when "
                                    "query heads h is 32"),
    (dict(preset="custom", n_layers=0), "'layers L' must be from 1 to 128"),
    (dict(preset="gpt-5"), "'model' must be one of"),
])
def test_clear_400s(client, params, label):
    assert label in error(client, **params)


def test_result_has_summary_table_and_phone_layout(client):
    body = post(client, preset="llama-3-8b")
    assert "8,030,261,248" in body["summary"]
    assert body["table"]["rows"][-1][1] == "8,030,261,248"
    assert "narrow" in body["figure"]
    data = body["figure"]["data"]  # one stacked segment per part: Q/K/V/O and gate/up/down split
    assert [t["name"] for t in data] == ["embedding", "Q", "K", "V", "O", "gate", "up", "down",
                                         "norms", "LM head"]
    assert {t["y"][0] for t in data} == {"embedding", "attention", "MLP", "norms", "LM head"}
    # drawn in billions (its MLP bar is 5.6 B), as the axis says
    assert body["figure"]["layout"]["xaxis"]["title"]["text"] == "parameters (billions)"
    assert sum(t["x"][0] for t in data) * 1e9 == pytest.approx(8_030_261_248)
    assert body["figure"]["layout"]["barmode"] == "stack"


def test_tied_head_draws_nothing_and_says_so(client):
    """A 0-wide bar shows no text, so the label is an annotation on the head's row."""
    body = post(client, preset="llama-3.2-1b")
    head = body["figure"]["data"][-1]
    assert head["x"] == [0]
    notes = body["figure"]["layout"]["annotations"]
    assert [(n["y"], n["x"]) for n in notes] == [("LM head", 0)] and notes[0]["text"].startswith("tied: counted once")
    assert body["summary"].endswith("the LM head is tied to the embedding (counted once).")
    assert "separate LM head" not in body["summary"]
    untied = post(client, preset="llama-3-8b")
    assert untied["figure"]["layout"]["annotations"] == [] and "in a separate LM head" in untied["summary"]


def test_one_layer_reads_singular(client):
    body = post(client, preset="custom", n_layers=1, d_model=64, n_heads=1, n_kv=1, d_ff=16, vocab=256)
    assert "sit in its one block (" in body["summary"] and "blocks" not in body["summary"]


@pytest.mark.parametrize("params, word", [
    (dict(preset="custom", n_layers=1, d_model=64, n_heads=1, n_kv=1, d_ff=16, vocab=256),
     "thousands"),
    (dict(preset="smollm2-135m"), "millions"),
    (dict(preset="custom", n_layers=128, d_model=16384, n_heads=128, n_kv=128, d_ff=65536,
          vocab=262144), "billions"),
])
def test_the_axis_unit_keeps_the_longest_bar_under_a_thousand(client, params, word):
    """The axis names one unit and its ticks are plain numbers: the longest bar, in that unit,
    is from 1 to 1,000 (over it plotly writes its own suffix: "4k" millions)."""
    fig = post(client, **params)["figure"]
    assert fig["layout"]["xaxis"]["title"]["text"] == f"parameters ({word})"
    rows: dict[str, float] = {}
    for t in fig["data"]:
        rows[t["y"][0]] = rows.get(t["y"][0], 0) + t["x"][0]
    assert 1 <= max(rows.values()) < 1000


def test_part_colours_are_the_diagrams(client):
    """The bars use the colours Fig. param-share gives the same parts; K and V each their own."""
    from backend.diagrams.palette import TONE_COLORS
    from backend.diagrams.param_share import PARTS

    tone = {part: TONE_COLORS[t] for part, _, t in PARTS}
    colour = {t["name"]: t["marker"]["color"] for t in post(client, preset="llama-3-8b")["figure"]["data"]}
    assert colour["embedding"] == tone["embedding"] and colour["LM head"] == tone["lm_head"]
    assert colour["gate"] == colour["up"] == colour["down"] == tone["mlp"]
    assert colour["Q"] == tone["attention"]
    assert len({colour[k] for k in ("Q", "K", "V", "O", "embedding", "LM head", "gate", "norms")}) == 8


@pytest.mark.parametrize("params, title", [
    (dict(preset="book"), "book: 1.31M parameters (head tied)"),
    (dict(preset="llama-2-7b"), "llama-2-7b: 6.74B parameters"),
    # 2*256*64 + (2*64 + 4*64*64 + 3*64*16) + 64 = 52,416
    (dict(preset="custom", n_layers=1, d_model=64, n_heads=1, n_kv=1, d_ff=16, vocab=256),
     "custom config: 52.4K parameters"),
    (dict(preset="custom", n_layers=32, d_model=4096, n_heads=32, n_kv=8, d_ff=14336, vocab=128256),
     "custom (as llama-3-8b): 8.03B parameters"),
])
def test_title_units_and_custom_label(client, params, title):
    assert post(client, **params)["figure"]["layout"]["title"]["text"] == title
