"""The training_signal widget through the API: the handout's numbers, the real tokenizer, bad input."""

from __future__ import annotations

import pytest

from backend.compute import training_signal as w
from tests.support.api import poster

URL = "/api/widgets/training_signal"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


def test_handout_512_tokens_at_15_percent(client):
    v = post(client)["values"]
    assert (v["tokens"], v["decoder_predictions"], v["encoder_predictions"]) == (512, 511, 77)
    assert v["ratio"] == 511 / 77 and f"{v['ratio']:.1f}" == "6.6"
    assert f"{v['expected_ratio']:.1f}" == "6.7"  # the handout's figure: 511 / 76.8


def test_exercise_06_passage_counts_46_cl100k_tokens(client):
    v = post(client, use_text=True)["values"]
    assert v["text_tokens"] == v["tokens"] == 46
    assert (v["decoder_predictions"], v["encoder_predictions"]) == (45, 7)
    assert f"{v['expected_ratio']:.1f}" == "6.5" and f"{v['ratio']:.2f}" == "6.43"
    assert v["tokenizer"] == "cl100k_base (bpe-openai 0.1.4)"


def test_exercise_06_try_paragraph_counts_57(client):
    v = post(client, use_text=True, text=w.TRY_PARAGRAPH)["values"]
    assert (v["tokens"], v["decoder_predictions"], v["encoder_predictions"]) == (57, 56, 9)
    assert f"{v['expected_ratio']:.1f}" == "6.5" and f"{v['ratio']:.2f}" == "6.22"


def test_tokenizer_is_the_real_cl100k_base():
    """Independent of the handout: cl100k_base's published ids for 'hello world', and its size."""
    enc = w._encoding()
    assert enc.encode("hello world") == [15339, 1917]
    assert enc.n_vocab == 100277
    assert enc.decode(enc.encode(w.PASSAGE)) == w.PASSAGE


def test_length_is_ignored_when_a_passage_is_counted(client):
    a = post(client, use_text=True, length=4096)["values"]
    b = post(client, use_text=True, length=2)["values"]
    assert a["tokens"] == b["tokens"] == 46


def test_figure_summary_table(client):
    r = post(client, length=46)
    fig = r["figure"]
    assert fig["data"][0]["y"] == [45, 7]
    marker = fig["data"][-1]
    assert marker["x"] == [46] and marker["y"] == [45 / 7]
    assert all(len(t["x"]) <= w.CURVE_POINTS + 1 for t in fig["data"])
    assert "narrow" in fig and "45" in r["summary"] and "7" in r["summary"]
    assert r["table"]["rows"][0][1] == "45" and r["table"]["rows"][1][1] == "7"


@pytest.mark.parametrize("params, label", [
    ({"length": 1}, "'passage length' must be from 2 to 4096"),
    ({"length": 5000}, "'passage length' must be from 2 to 4096"),
    ({"mask_rate": 0}, "'share of tokens hidden' must be from 0.01 to 0.5"),
    ({"mask_rate": "x"}, "'share of tokens hidden' must be a number"),
    ({"use_text": True, "text": "x" * 4001}, "'passage' is 4001 characters long"),
    ({"use_text": True, "text": "   "}, "'passage' must not be empty"),
    ({"use_text": True, "text": "a"}, "'passage' counts 1 token"),
])
def test_bad_input_is_a_400_naming_the_control(client, params, label):
    r = client.post(URL, json=params)
    assert r.status_code == 400
    assert label in r.get_json()["error"]


def test_every_baked_point_computes(client):
    for point in w.SPEC.bake_points():
        assert post(client, **point)["values"]["decoder_predictions"] >= 1


def test_summary_speaks_of_the_unrounded_ratio_and_the_real_peak(client):
    """At 1% the staircase peaks at 148× (149 tokens), above the limit of 100: the summary must
    not say the ratio approaches 100 without saying which ratio."""
    r = post(client, mask_rate=0.01)
    assert "ratio before rounding climbs towards 1 / 0.01 = 100.00" in r["summary"]
    assert "peaks at 148.00 at 149 tokens" in r["summary"]


def test_length_axis_ticks_reach_4096(client):
    axis = post(client)["figure"]["layout"]["xaxis2"]
    assert axis["tickvals"][-1] == 4096 and axis["ticktext"][-1] == "4,096"
    assert 10 ** axis["range"][1] > 4096


def test_ratio_outputs_carry_the_unit_in_the_label():
    """'6.64 ×' wrapped at 1200 px: the × lives in the label, not as a spaced unit."""
    for name in ("ratio", "expected_ratio"):
        out = next(o for o in w.SPEC.outputs if o.name == name)
        assert "×" in out.label and not out.unit


# Review part2 W3: each of these answered HTTP 500 (bpe-openai's ValueError on a disallowed
# special token). The expected counts are cl100k_base's plain-text encodings, checked by hand:
# '<|endoftext|>' alone is '<', '|', 'endo', 'ftext', '|', '>' ... = 7 ordinary tokens.
@pytest.mark.parametrize("text, tokens, found", [
    ("hello <|endoftext|> world", 8, ["<|endoftext|>"]),
    ("<|endoftext|>", 7, ["<|endoftext|>"]),
    ("<|fim_prefix|> x y", 9, ["<|fim_prefix|>"]),
    ("hello <|endofprompt|>", 7, ["<|endofprompt|>"]),
    ("<|fim_suffix|><|fim_middle|><|endoftext|>", None,
     ["<|endoftext|>", "<|fim_middle|>", "<|fim_suffix|>"]),
])
def test_special_token_strings_count_as_plain_text(client, text, tokens, found):
    """A passage that spells a special token is counted as the characters it is, never a 500:
    a student pasting a paragraph about `<|endoftext|>` pastes text, and a training pipeline
    inserts the real marker itself, between documents, never by reading it out of a document."""
    r = client.post(URL, json={"use_text": True, "text": text})
    assert r.status_code == 200, r.get_json()
    v = r.get_json()["values"]
    assert v["tokens"] == v["text_tokens"] == len(w._encoding().encode(text, disallowed_special=()))
    if tokens is not None:
        assert v["tokens"] == tokens
    assert 100257 not in w._encoding().encode(text, disallowed_special=())  # no <|endoftext|> id
    assert v["special_as_text"] == found
    summary = r.get_json()["summary"]
    assert all(t in summary for t in found) and "counted as ordinary characters" in summary


def test_plain_passage_reports_no_special_strings(client):
    r = post(client, use_text=True)
    assert r["values"]["special_as_text"] == [] and "special token" not in r["summary"]
    assert post(client)["values"]["special_as_text"] == []
