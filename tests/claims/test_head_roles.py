"""Every qualitative sentence of "Every head, on your own text" and "Three heads, one set of keys
and values" (docs/chapters/attention-maps.md), and SmolLM2's sentence in the "it" experiment,
asserted over the values the widgets compute at the settings the text names. Thresholds are what
the words mean ("most heads": more than half of 270; "does not copy at all": under 0.05)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import torch

from backend.compute import attention_map as am
from backend.compute import head_roles as hr
from backend.compute import induction_lab as lab
from backend.reference.head_roles import induction_targets

CHAPTER = Path(__file__).resolve().parents[2] / "docs/chapters/attention-maps.md"


@cache
def _run(key: str) -> dict:
    return hr.compute(hr.SPEC.resolve(json.loads(key)))["values"]


def run(**params):
    return _run(json.dumps(params, sort_keys=True))


@cache
def lab_values() -> dict:
    return lab.compute(lab.SPEC.resolve({}))["values"]


def test_the_sentence_quoted_is_the_widgets_text_and_the_sizes_are_smollm2s():
    """'a sentence that repeats itself: "The password is ..."'; '9 query heads per layer share
    3 key/value heads'"""
    words = " ".join(CHAPTER.read_text(encoding="utf-8").split())
    assert f'"{hr.TEXT}"' in words
    v = run()
    assert (v["layers"], v["heads_per_layer"], v["kv_heads"]) == (hr.LAYERS, hr.HEADS, hr.KV_HEADS)
    from backend.smollm2.load import model

    c = model()[0].config
    assert (c.n_layers, c.n_heads, c.n_kv_heads) == (hr.LAYERS, hr.HEADS, hr.KV_HEADS)


def test_the_strongest_induction_head_is_the_labs_and_it_copies_the_repeat():
    """'The strongest induction head on this sentence is the one the random-token lab found ...
    Its map puts each token of the second "password is purple elephant seven" on the token that
    came next the first time.'"""
    v, t = run(), lab_values()["top_induction"]
    assert (v["top"]["layer"], v["top"]["head"]) == (t["layer"], t["head"])
    from backend.compute.attention_models import encode_smollm2

    e = encode_smollm2(hr.TEXT, hr.MAX_TOKENS)
    targets = induction_targets(e.ids)
    A = e.maps[t["layer"], t["head"]]
    second = [r for r in targets if r > len(e.ids) // 2]
    assert len(second) >= 5  # password, is, purple, elephant, seven (and the full stop)
    assert all(int(A[r].argmax()) in targets[r] for r in second)


def test_the_labs_previous_token_head_scores_close_to_the_highest_here():
    """'The lab's strongest previous-token head ... scores 0.82 here, close to this sentence's
    highest.'"""
    p, v = lab_values()["top_previous"], run(role="previous_token")
    assert (p["layer"], p["head"]) == (16, 0)  # the cell the chapter reads
    assert v["scores"]["previous_token"][16][0] > v["top"]["score"] - 0.05


def test_most_heads_rest_on_the_first_token():
    """'most heads rest most of their weight on <|endoftext|>: 159 of 270 put more than half of
    it there'"""
    v = run(role="first_token")
    assert v["over_half"] > v["heads"] / 2


def test_the_three_heads_of_one_group_copy_fully_half_and_not_at_all():
    """'Layer 18's heads 6, 7 and 8 score 0.89, 0.49 and 0.00 as induction heads: one copies,
    one half copies, one does not copy at all.'"""
    v = run(view="group")
    assert v["group_heads"] == [6, 7, 8] and v["top"]["layer"] == 18
    full, half, none = v["group_scores"]["induction"]
    assert full > 0.8 and 0.35 < half < 0.65 and none < 0.05


def test_grouped_heads_share_keys_and_values_exactly():
    """'They see the same keys': the three query heads of a group read one key/value head, so
    their keys are the same tensor; only W_Q differs."""
    from backend.smollm2.load import model

    attn = model()[0].layers[18].attn
    assert attn.k_proj.weight.shape[0] == hr.KV_HEADS * model()[0].config.d_head
    q = attn.q_proj.weight.view(hr.HEADS, -1, attn.q_proj.weight.shape[1])
    assert not torch.equal(q[6], q[7]) and not torch.equal(q[7], q[8])


def test_smollm2s_row_of_it_is_the_same_in_both_sentences_and_mostly_on_because():
    """'So does SmolLM2-135M ... in both sentences the row of it gives "animal" ... and "street"
    ..., and its largest share ... to "because"'"""
    tired = am.compute(am.SPEC.resolve({"text": am.TIRED, "model": "smollm2"}))["values"]
    wide = am.compute(am.SPEC.resolve({"text": am.WIDE, "model": "smollm2"}))["values"]
    assert tired["row"] == wide["row"]
    assert tired["top"][0]["word"] == "because"


STORY = ("Alice met Bob at the old mill by the river. Later that night, Alice met Bob at the old "
         "mill by the river.")


def test_shallow_layers_and_deep_layers():
    """'### Shallow layers and deep layers': the first previous-token head over one half sits in
    layer 1, the first induction head over one half in layer 17; the deepest layers lean on the
    first token more and on their neighbours less (the table of thirds); with a phrase that
    repeats, the induction heads over one half sit in the second half of the model while the
    previous-token map lights up in its first layers already (the widget's sentence and another
    repeated one); a text in which no token occurs twice gets no induction map, and the widget
    says so."""
    import pytest

    from backend.errors import ParamError

    v = run()
    first = v["first_layer_over_half"]
    assert (first["previous_token"], first["induction"]) == (1, 17)
    for text in (hr.TEXT, STORY):
        w = run(text=text)
        deep = [layer for layer, m in enumerate(w["layer_max"]["induction"]) if m > 0.5]
        assert deep and min(deep) >= hr.LAYERS // 2, text
        assert w["first_layer_over_half"]["previous_token"] <= 2, text
        thirds_first, thirds_local = w["thirds_mean"]["first_token"], w["thirds_mean"]["local"]
        assert thirds_first[2] > max(thirds_first[:2]) and thirds_local[2] < min(thirds_local[:2])
    with pytest.raises(ParamError, match="no head has an induction score"):
        hr.compute(hr.SPEC.resolve({"text": "Quick brown foxes jump over lazy dogs near a quiet river."}))
