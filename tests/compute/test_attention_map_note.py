"""attention_map says, under the map, that its rows and columns are the tokenizer's pieces when
a word is cut into several (ux review P11: rows "d / id / n / ' / t" were unexplained)."""

from __future__ import annotations

from backend.compute import REGISTRY

M = REGISTRY["attention_map"]
DEFAULTS = {p.name: p.default for p in M.SPEC.params}


def titles(fig):
    return fig["layout"]["xaxis"]["title"]["text"], fig["narrow"]["xaxis"]["title"]["text"]


def test_the_default_sentence_explains_its_pieces_on_every_screen():
    r = M.compute(DEFAULTS)
    for text in titles(r["figure"]):
        assert "the tokenizer's pieces" in text, text
        assert "d / id / n / ' / t" in text, text  # "didn't", the first word cut


def test_no_note_when_every_word_is_one_token():
    r = M.compute({**DEFAULTS, "text": "it was the", "look_from": "it"})
    assert r["values"]["tokens"][1:] == ["it", "was", "the"]  # after <|endoftext|>: whole words
    for text in titles(r["figure"]):
        assert "pieces" not in text, text
