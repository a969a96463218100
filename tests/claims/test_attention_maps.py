"""Every qualitative sentence of docs/chapters/attention-maps.md, asserted over computed values.

Each test quotes the sentence it checks. Thresholds are what the words mean ("no sink": the
first token is not the favourite of most rows and gets less than twice its even share), not
windows drawn around today's output.
"""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
import torch

from backend.widgets import attention_map as am


@lru_cache(maxsize=None)
def _run(key: str) -> dict:
    return am.compute(am.SPEC.resolve(json.loads(key)))


def run(**params):
    return _run(json.dumps(params, sort_keys=True))["values"]


@pytest.fixture(scope="module")
def book():
    return run()["sink"]


@pytest.fixture(scope="module")
def minilm():
    return run(model="minilm")["sink"]


# --- the first token: measured, not assumed ------------------------------------------------

def test_the_study_is_over_many_rows(book, minilm):
    # "Over N word rows of M held-out Wikipedia sentences"
    assert book["sentences"] >= 200 and book["rows"] > 5000
    assert minilm["sentences"] >= 200 and minilm["rows"] > 5000


def test_the_book_model_has_no_sink_in_the_averaged_map(book):
    # "That is no sink." A sink would be most rows' favourite, far above an even split.
    assert book["top_rate"] < 0.5
    assert book["ratio"] < 2
    # "It gets more than its even share in just X% of the rows" (not most of them)
    assert book["above_even"] < 0.6


def test_a_head_or_two_lean_on_the_first_token_and_averaging_washes_it_out(book):
    # "A head or two lean on it; the strongest ... X times its even share and makes it the
    # largest weight in Y% of its rows. N of the 16 heads give it more than twice its even share"
    s = book["strongest"]
    assert 1 <= book["heads_over_2x"] <= 2
    assert s["ratio"] > 2 and s["top_rate"] > 0.5
    assert book["ratio"] < s["ratio"] / 2  # "averaging over all of them washes that out"


def test_the_first_position_is_not_special_without_the_bos_token(book):
    # "drop <|endoftext|> and the first word gets only X times its even share"
    assert book["without_bos"]["ratio"] < 1


def test_a_training_window_almost_never_starts_with_endoftext():
    # "about one token in N is an <|endoftext|>. So a training window almost never starts with it"
    info = run()["model_info"]
    assert 1 / info["tokens_per_article"] < 0.02
    assert info["tokens_per_article"] == round(info["train_tokens"] / info["train_articles"])


def test_leaving_endoftext_out_changes_little_for_the_it_row():
    # "for this model that changes little: <|endoftext|> takes X% of the row for *it*, close to
    # the Y% an even split would give it, and far less than *because*"
    v = run()
    assert v["special_share"] < 2 * v["even_share"]
    raw_because = v["top"][0]["weight"] * (1 - v["special_share"])
    assert v["special_share"] < raw_because / 2


def test_minilm_has_real_sinks_that_top_every_list(minilm):
    # "MiniLM has real sinks ... one of them is the largest weight in X% of the rows. Left in,
    # they would top every list"; check-yourself: "at the top of every list"
    assert minilm["top_rate"] == 1.0
    assert minilm["ratio"] > 2 and minilm["share"] > minilm["even"] * 2


def test_some_minilm_heads_pour_most_of_their_weight_into_the_specials(minilm):
    # "Several of MiniLM's other heads pour most of their weight into [CLS] and [SEP]"
    assert minilm["strongest"]["share"] > 0.5
    assert minilm["heads_over_2x"] >= 3


def test_the_book_maps_first_column_is_only_a_little_darker():
    # "its first column, <|endoftext|>, is only a little darker than its neighbours"
    w = torch.tensor(run()["weights"])
    col = [float(w[2:, c].mean()) for c in range(3)]  # rows that see all three columns
    assert col[0] < 1.5 * max(col[1], col[2])
    m = torch.tensor(run(model="minilm")["weights"])
    words = m[:, 1:-1]
    # MiniLM's "two dark columns": each special column outweighs every word column
    assert float(m[:, 0].mean()) > float(words.mean(0).max())


# --- the "it" experiment, by word ----------------------------------------------------------

def test_the_it_rows_are_identical_and_ranked_as_the_text_says():
    a, b = run(text=am.TIRED), run(text=am.WIDE)
    # "The two columns are the same, to every digit."
    q = a["look_from_index"]
    assert q == b["look_from_index"] and a["row"][: q + 1] == b["row"][: q + 1]
    assert [(t["word"], f"{t['weight']:.3f}") for t in a["top"]] == [
        (t["word"], f"{t['weight']:.3f}") for t in b["top"]]
    assert a["weight_to"]["animal"] == b["weight_to"]["animal"]
    assert a["weight_to"]["street"] == b["weight_to"]["street"]
    # "the largest share goes to the word just before, *because*"
    assert a["top"][0]["word"] == "because"
    # "Next come the two words the book's small vocabulary splits most: didn't ... and street"
    assert {t["word"] for t in a["top"][1:3]} == {"didn't", "street"}
    pieces = {t["word"]: t["pieces"] for t in a["top"]}
    assert len(pieces["didn't"]) == 5 and pieces["street"] == ["stre", "et"]
    # '"animal", one token, gets less than the sentence's first word'
    table = _run("{}")["table"]["rows"]  # word, pieces, weight
    assert table[0][0] == "The" and table[1][:2] == ["animal", "animal"]  # one token
    assert table[1][2] < table[0][2]


def test_from_the_last_word_the_rows_differ_and_stay_near():
    a = run(text=am.TIRED, look_from="tired")
    b = run(text=am.WIDE, look_from="wide")
    # "Now the rows differ"
    assert a["row"] != b["row"]
    # "the last three words ... take more than half of each row"
    for v, last in ((a, "tired"), (b, "wide")):
        assert v["weight_to"]["was"] + v["weight_to"]["too"] + v["weight_to"][last] > 0.5


def test_the_decoder_gives_a_later_token_exactly_zero():
    # "For the book's decoder the same 'later token' number is 0.0: a masked position gets
    # exactly zero." Across the sliders: every layer and head.
    for layer in range(4):
        for head in range(4):
            assert run(average=False, layer=layer, head=head)["future_weight"] == 0.0


# --- the encoder ---------------------------------------------------------------------------

def test_minilm_it_row_reaches_the_last_word():
    a, b = run(text=am.TIRED, model="minilm"), run(text=am.WIDE, model="minilm")
    # "The columns differ now"
    assert a["weight_to"] != b["weight_to"]
    # "gives the last word, which comes after it, more weight than either noun"
    for v, last in ((a, "tired"), (b, "wide")):
        assert v["weight_to"][last] > max(v["weight_to"]["animal"], v["weight_to"]["street"])
    # 'In the "tired" sentence that word is the row's largest; in the "wide" one it comes
    # second, just behind "didn't" (the sum of its WordPiece pieces didn + ' + t)'
    assert a["top"][0]["word"] == "tired"
    assert b["top"][1]["word"] == "wide" and b["top"][0]["word"] == "didn't"
    assert b["top"][0]["pieces"] == ["didn", "'", "t"]
    assert b["top"][0]["weight"] - b["top"][1]["weight"] < 0.01  # "just behind"


def test_minilm_leans_towards_the_right_noun_but_only_a_little():
    a, b = run(text=am.TIRED, model="minilm"), run(text=am.WIDE, model="minilm")
    # "moves weight from 'animal' towards 'street' ... by a couple of hundredths, and
    # 'animal' keeps the lead"
    assert a["weight_to"]["animal"] > b["weight_to"]["animal"]
    assert a["weight_to"]["street"] < b["weight_to"]["street"]
    assert b["weight_to"]["animal"] > b["weight_to"]["street"]
    shift = a["weight_to"]["animal"] - b["weight_to"]["animal"]
    assert 0.005 < shift < 0.05


def test_the_encoder_has_weight_on_later_tokens():
    # "largest raw weight on a later token": positive for the encoder, in every layer
    for layer in range(6):
        assert run(model="minilm", average=False, layer=layer, head=0)["future_weight"] > 0


# --- single heads --------------------------------------------------------------------------

def test_the_named_specialist_heads():
    # "layer 1, head 3 is a previous-token head"
    assert run(average=False, layer=1, head=3)["previous_token_rate"] > 0.5
    # "MiniLM has one at layer 0, head 2"; "a next-token head too: layer 1, head 8"
    assert run(model="minilm", average=False, layer=0, head=2)["previous_token_rate"] > 0.5
    assert run(model="minilm", average=False, layer=1, head=8)["next_token_rate"] > 0.5


def test_several_minilm_heads_look_mostly_at_the_token_itself():
    # "Several of MiniLM's other heads, once [CLS] and [SEP] are set aside, look mostly at the
    # token itself" (favourite word token, as the widget's previous/next-token rates count it)
    e = am.encode("minilm", am.TIRED)
    words = [i for i, sp in enumerate(e.special) if not sp]
    favourite = e.maps[:, :, words][..., words].argmax(-1)  # (L, h, R)
    own = (favourite == torch.arange(len(words))).float().mean(-1)  # (L, h)
    assert int((own > 0.5).sum()) >= 3


def test_layer_1_head_3_is_the_clearest_previous_token_head():
    # Exercise 2: "Layer 1, head 3 is the book's clearest previous-token head"
    rates = {(l, h): run(average=False, layer=l, head=h)["previous_token_rate"]
             for l in range(4) for h in range(4)}
    assert max(rates, key=rates.get) == (1, 3)
