"""The causal_mask widget through the API: the handout's matrices, digit for digit, and bad input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from backend.compute import causal_mask as cm
from backend.compute.style import COLORS
from tests.support.api import poster

URL = "/api/widgets/causal_mask"
FLOODED = "the river bank flooded"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


def rounded(weights, digits=2):
    return [[round(w, digits) for w in row] for row in weights]


def test_exercise_05_encoder_and_decoder(client):
    """003 exercise 05: encoder [[0.78 0.09 0.14] [0.06 0.73 0.21] [0.14 0.31 0.56]],
    decoder [[1.00 0.00 0.00] [0.08 0.92 0.00] [0.14 0.31 0.56]]."""
    enc = post(client, mask="none")["values"]
    dec = post(client, mask="causal")["values"]
    assert rounded(enc["weights"]) == [[0.78, 0.09, 0.14], [0.06, 0.73, 0.21], [0.14, 0.31, 0.56]]
    assert rounded(dec["weights"]) == [[1.00, 0.00, 0.00], [0.08, 0.92, 0.00], [0.14, 0.31, 0.56]]
    assert enc["tokens"] == dec["tokens"] == ["the", "river", "bank"]


def test_exercise_05_flooded_try(client):
    """The "Try": with flooded = [2.4, 0, 0.6, 0] only the flooded row matches between the two."""
    enc = rounded(post(client, words=FLOODED, mask="none")["values"]["weights"])
    dec = rounded(post(client, words=FLOODED, mask="causal")["values"]["weights"])
    assert enc[3] == dec[3] == [0.05, 0.44, 0.15, 0.36]
    assert all(enc[i] != dec[i] for i in range(3))
    assert enc[2] == [0.11, 0.24, 0.44, 0.21]  # bank now sees flooded
    assert dec[:3] == [[1.0, 0.0, 0.0, 0.0], [0.08, 0.92, 0.0, 0.0], [0.14, 0.31, 0.56, 0.0]]


@pytest.mark.parametrize("words", cm.SENTENCES)
@pytest.mark.parametrize("mask", cm.MASKS)
@pytest.mark.parametrize("form", ["additive", "additive_min", "additive_min_fp32", "boolean", "fill_1e4"])
def test_weights_match_pytorch_sdpa_on_every_row_with_something_to_see(client, words, mask, form):
    """Oracle: F.scaled_dot_product_attention with the same boolean mask (True = takes part)."""
    v = post(client, words=words, mask=mask, form=form)["values"]
    E = torch.tensor([cm.EMBEDDINGS[t] for t in v["tokens"]])[None, None]  # (1, 1, T, 4)
    allowed = torch.tensor(v["allowed"])
    T = len(v["tokens"])
    oracle = F.scaled_dot_product_attention(E, E, torch.eye(T), attn_mask=allowed)[0, 0]
    rows = [i for i in range(T) if allowed[i].any()]
    ours = torch.tensor([v["weights"][i] for i in rows])
    torch.testing.assert_close(ours, oracle[rows], atol=1e-4, rtol=0)  # values are rounded to 4
    if mask != "causal_padding":
        assert v["empty_rows"] == 0 and v["nan_rows"] == 0
    causal = F.scaled_dot_product_attention(E, E, torch.eye(T), is_causal=True)[0, 0]
    if mask == "causal":
        torch.testing.assert_close(torch.tensor(v["weights"]), causal, atol=1e-4, rtol=0)


def test_padding_rows_are_the_unpadded_rows(client):
    """The padding mask's job: the real words' rows are exactly those of the unpadded sentence."""
    for padded, plain, cut in (("padding", "none", slice(0, 3)), ("causal_padding", "causal", slice(1, 4))):
        p = post(client, mask=padded)["values"]
        u = post(client, mask=plain)["values"]
        real = [row[cut] for row in p["weights"][cut]]
        assert real == u["weights"]
        pad = p["tokens"].index("<pad>")
        assert all(row[pad] == 0 for i, row in enumerate(p["weights"]) if i != pad)


def test_figure_summary_and_table(client):
    r = post(client, mask="causal_padding")
    v, fig = r["values"], r["figure"]
    assert [t["name"] for t in fig["data"]] == ["weight", "masked", "NaN", "labels", "row sum"]
    # every cell's text is drawn once, by the text trace, in the theme's colour (none hard-coded)
    assert all("text" not in t and "texttemplate" not in t for t in fig["data"][:3])
    labels = fig["data"][3]
    assert len(labels["text"]) == 16 and "color" not in labels["textfont"]
    assert labels["text"][0] == "NaN" and labels["text"][5] == "1.00"  # pad row; 'the' on itself
    # the empty row's bar has its own colour, not the green of a proper distribution
    colors = fig["data"][4]["marker"]["color"]
    assert colors[0] == COLORS["accent"] and set(colors[1:]) == {COLORS["good"]}
    boolean = post(client, mask="causal_padding", form="boolean")["figure"]["data"][4]
    assert boolean["marker"]["color"][0] == COLORS["accent"] and boolean["text"][0] == "1.00 (empty)"
    masked = fig["data"][1]["z"]
    assert sum(c == 1 for row in masked for c in row) == sum(not a for row in v["allowed"][1:] for a in row)
    assert fig["data"][2]["z"][0] == [1, 1, 1, 1]  # the NaN row drawn in its own colour
    assert "NaN" in r["summary"] and r["table"]["columns"][-1] == "row sum"
    assert r["table"]["rows"][0][-1] == "NaN" and len(r["table"]["rows"]) == 4
    assert "narrow" in fig


@pytest.mark.parametrize("body,fragment", [
    ({"mask": "triangle"}, "'mask' must be one of 'none', 'causal', 'padding', 'causal_padding'"),
    ({"form": True}, "'how the mask is applied' must be one of 'additive', 'additive_min', "
                     "'additive_min_fp32', 'boolean', 'fill_1e4', 'after_softmax', got True"),
    ({"dtype": "float64"}, "'score dtype' must be one of 'float32', 'float16', 'bfloat16'"),
    ({"words": "the savings bank"}, "'sentence' must be one of"),
    ({"heads": 2}, "unknown parameter 'heads'"),
])
def test_bad_input_is_a_clear_400(client, body, fragment):
    r = client.post(URL, json=body)
    assert r.status_code == 400 and fragment in r.get_json()["error"]


def test_every_baked_point_is_valid_json_without_nan(client):
    import json

    for point in cm.SPEC.bake_points():
        out = cm.compute(point)
        json.dumps(out, allow_nan=False)  # NaN travels as null, never as an invalid NaN literal
    assert len(cm.SPEC.bake_points()) == 144


def test_the_three_mask_shapes_of_the_encoder_decoder(client):
    """004 §9.1's table (b, enc_len, enc_len) / (b, dec_len, dec_len) / (b, dec_len, enc_len), as
    the book's broadcastable masks: batch 2, source 5, target 4."""
    v = post(client)["values"]
    assert (v["shape_encoder"], v["shape_decoder"], v["shape_cross"]) == ("(2, 1, 1, 5)", "(4, 4)", "(2, 1, 4, 5)")
    assert v["shape_decoder_padded"] == "(2, 1, 4, 4)"


def test_bfloat16_rounds_the_scores_not_just_the_weights(client):
    """river . river / 2 = 3.505 becomes 3.484 in bfloat16; the exact weight 0.7264 rounded to
    bfloat16 is 0.7266 (hand arithmetic: bfloat16 keeps 8 significant bits)."""
    bf = post(client, mask="none", dtype="bfloat16")["values"]
    assert bf["scores"][1][1] == round(3.484375, 4)
    assert bf["weights_rounded_after"][1][1] == round(0.7265625, 4)
