"""The attention_map widget: real weights, the decoder/encoder contrast, and hostile input."""

from __future__ import annotations

import importlib
import json

import pytest
import torch

from backend.compute import attention_map as am
from backend.compute.spec import ParamError

URL = "/api/widgets/attention_map"


def run(**params):
    return am.compute(am.SPEC.resolve(params))["values"]


def it_row(model: str, text: str) -> torch.Tensor:
    """Every layer's and head's row for the token 'it', up to and including 'it': (L, h, q+1)."""
    e = am.encode(model, text)
    words, owner = am.word_of_tokens(text, e)
    q = owner.index(words.index("it"))
    return e.maps[:, :, q, : q + 1]


def test_book_model_defaults_are_a_causal_map_over_the_sentence():
    v = run()
    T = v["n_tokens"]
    assert v["tokens"][0] == "<|endoftext|>" and "it" in v["tokens"] and "animal" in v["tokens"]
    assert len(v["weights"]) == T and all(len(r) == T for r in v["weights"])
    assert all(abs(sum(r) - 1) < 1e-3 for r in v["weights"])  # softmax rows
    assert v["causal"] and v["future_weight"] == 0.0
    assert v["look_from_token"] == "it" and v["look_from_found"]
    assert abs(sum(v["weight_to"].values()) - 1) < 1e-3  # renormalised over the words
    assert [t["weight"] for t in v["top"]] == sorted((t["weight"] for t in v["top"]), reverse=True)


def test_in_the_decoder_the_row_for_it_cannot_see_the_last_word():
    tired, wide = it_row("book", am.TIRED), it_row("book", am.WIDE)
    assert tired.shape == wide.shape
    torch.testing.assert_close(tired, wide, atol=1e-6, rtol=0)  # every layer, every head
    a, b = run(text=am.TIRED), run(text=am.WIDE)
    assert a["weight_to"]["animal"] == b["weight_to"]["animal"]
    assert a["weight_to"]["street"] == b["weight_to"]["street"]


def test_in_the_encoder_it_sees_the_whole_sentence():
    a, b = run(text=am.TIRED, model="minilm"), run(text=am.WIDE, model="minilm")
    assert not a["causal"] and a["future_weight"] > 0.01
    assert a["tokens"][0] == "[CLS]" and a["tokens"][-1] == "[SEP]"
    assert a["n_layers"] == 6 and a["n_heads"] == 12
    assert "tired" in a["weight_to"] and "wide" in b["weight_to"]
    assert a["weight_to"]["animal"] != b["weight_to"]["animal"]


def test_one_layer_and_head_and_the_look_from_word():
    v = run(average=False, layer=3, head=2, look_from="because")
    assert v["selection"] == "layer 3, head 2" and v["look_from_token"] == "because"
    assert all(w == 0 for w in v["row"][v["look_from_index"] + 1 :])
    missing = run(look_from="zebra")
    assert not missing["look_from_found"] and missing["look_from_index"] == missing["n_tokens"] - 1
    assert missing["notice"] == ("'zebra' is not in the sentence; showing the row of the last "
                                 "word, 'tired'.")
    assert run()["notice"] == ""
    twice = run(look_from="the")
    assert twice["look_from_word"] == "The" and "appears 2 times" in twice["notice"]
    dot = run(text="It was late.", look_from="dog")  # the last *word*, not the full stop
    assert dot["look_from_word"] == "late"


@pytest.mark.parametrize("model,layer,head,message", [
    ("book", 4, 0, "'layer' must be from 0 to 3 when model is book (the book's model has 4 layers)"),
    ("book", 0, 7, "'head' must be from 0 to 3 when model is book (the book's model has 4 heads)"),
    ("minilm", 6, 0, "'layer' must be from 0 to 5 when model is minilm (MiniLM has 6 layers)"),
])
def test_layers_and_heads_beyond_the_model_are_a_clear_400(client, model, layer, head, message):
    r = client.post(URL, json={"model": model, "layer": layer, "head": head, "average": False})
    assert r.status_code == 400 and message in r.get_json()["error"]


@pytest.mark.parametrize("body,fragment", [
    ({"text": ""}, "must not be empty"),
    ({"text": "   \n\t "}, "must not be empty"),
    ({"text": "it was \x00 here"}, "control characters"),
    ({"text": "it " * 5000}, "the limit is 500"),
    ({"text": "word " * 90}, "the limit is 64 tokens"),
    ({"text": 5}, "must be a string"),
    ({"text": ["it"]}, "must be a string"),
    ({"text": None}, "must be a string"),
    ({"model": "gpt2"}, "must be one of"),
    ({"look_from": ""}, "must not be empty"),
], ids=["empty", "whitespace", "control", "10k-chars", "too-many-tokens", "number", "list",
        "null", "unknown-model", "empty-look-from"])
def test_bad_input_is_a_clear_400(client, body, fragment):
    r = client.post(URL, json=body)
    assert r.status_code == 400, r.get_json()
    assert fragment in r.get_json()["error"]


def test_a_body_that_is_not_an_object_is_a_400(client):
    r = client.post(URL, data=json.dumps(["it"]), content_type="application/json")
    assert r.status_code == 400


@pytest.mark.parametrize("model", ["book", "smollm2", "minilm"])
@pytest.mark.parametrize("text", [
    "The cat 🙂 sat because it was tired 🐈",
    "החתול לא חצה את הרחוב כי it היה עייף",
    "<b>bold</b> <script>alert(1)</script> it &amp; done",
    "It",
])
def test_unusual_text_gives_a_correct_result(client, model, text):
    r = client.post(URL, json={"text": text, "model": model})
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    v, fig = body["values"], body["figure"]
    assert all(abs(sum(row) - 1) < 1e-3 for row in v["weights"])
    ticks = fig["layout"]["xaxis"]["ticktext"]
    assert len(fig["data"][0]["x"]) == v["n_tokens"]
    # a tick is a token or, on a thinned axis, a whole word of the sentence
    assert set(ticks) <= {am._escape(t) for t in v["tokens"] + am.words_in(text)}
    assert not any("<b>" in t or "<script" in t for t in ticks)  # markup shown as text, not obeyed
    assert not any("<b>" in t for t in fig["data"][0]["x"])


def test_figure_is_a_heatmap_with_tokens_on_both_axes():
    out = am.compute(am.SPEC.resolve({}))
    fig, v = out["figure"], out["values"]
    assert fig["data"][0]["type"] == "heatmap"
    labels = ["&lt;|endoftext|&gt;"] + v["tokens"][1:]
    assert fig["layout"]["xaxis"]["ticktext"] == fig["layout"]["yaxis"]["ticktext"] == labels
    assert len(fig["data"][0]["z"]) == v["n_tokens"]
    json.loads(json.dumps(out, allow_nan=False))


# --- readable on any screen, in any script, for screen readers ------------------------------

@pytest.mark.parametrize("text,chars", [
    ("The cat 🙂 sat 🐈", "🙂🐈"),
    ("猫が好きです", "猫が好きです"),
    ("החתול עייף", "החתולעייף"),
])
def test_byte_pieces_show_whole_characters(text, chars):
    v = run(text=text)
    shown = "".join(v["tokens"][1:])
    assert not any(t.startswith("<") and t.endswith(">") for t in v["tokens"][1:])  # no <F0>
    assert set(chars) <= set(shown)
    assert set(shown) - set(text) <= {"…", "␣"}  # only the text, piece marks, shown spaces


def test_readable_pieces_against_the_tokenizers_own_decoder():
    from backend.bookmodel.tokenizer import readable_pieces, token_bytes

    _, tok = am._book()
    text = "Emoji 🙂, 中文 and עברית mixed"
    ids = tok.encode(text).ids
    labels = readable_pieces([token_bytes(tok, i) for i in ids])
    assert len(labels) == len(ids)
    whole = [lab.strip("…") for lab in labels]
    decoded = tok.decode(ids)  # the oracle: the tokenizer's own byte-level decoder
    assert all(w in decoded for w in whole if w != "␣")


def test_a_refused_sentence_says_why_in_the_controls_words(client):
    arabic = "القطة لم تعبر الشارع لأنها كانت متعبة جدا"
    r = client.post(URL, json={"text": arabic})
    assert r.status_code == 400
    msg = r.get_json()["error"]
    assert msg.startswith("The sentence is ") and "the limit is 64 tokens" in msg
    assert "tokens per character" in msg and "byte pieces" in msg
    assert "The sentence is 77 tokens" in msg  # 41 letters and spaces, about 2 tokens a letter
    r = client.post(URL, json={"text": "word " * 90})
    assert "Try a shorter sentence (about" in r.get_json()["error"]


@pytest.mark.parametrize("text,words", [
    ("我喜欢吃苹果因为它很甜", list("我喜欢吃苹果因为它很甜")),
    ("猫が好きです。", list("猫が好きです。")),
    ("ฉันชอบแมว", ["ฉั", "น", "ช", "อ", "บ", "แ", "ม", "ว"]),  # vowel mark stays on its letter
    ("I like 苹果, don't you?", ["I", "like", "苹", "果", ",", "don't", "you", "?"]),
    ("हिन्दी अच्छी है", ["हिन्दी", "अच्छी", "है"]),  # spaced script with combining signs: whole words
    ("a 👍🏽 b 👨\u200d👩\u200d👧", ["a", "👍🏽", "b", "👨\u200d👩\u200d👧"]),
])
def test_scripts_without_spaces_split_into_characters(text, words):
    assert am.words_in(text) == words


@pytest.mark.parametrize("text,look_from,top_word", [
    ("我喜欢吃苹果因为它很甜", "甜", "甜"),
    ("猫が好きです", "好", None),
    ("I like 苹果 because 它很甜", "它", None),
])
def test_chinese_japanese_and_mixed_text_read_by_character(text, look_from, top_word):
    out = am.compute(am.SPEC.resolve({"text": text, "look_from": look_from}))
    v = out["values"]
    assert out["notice"] == "" and v["look_from_found"] and v["look_from_word"] == look_from
    assert v["look_from_token"] == look_from  # the character, not a byte piece of it
    shown = {t["word"] for t in v["top"]}
    assert all(len(w) == 1 for w in shown if not w.isascii())  # one character per "word"
    if top_word:
        assert v["top"][0]["word"] == top_word
    assert look_from in out["summary"]
    ticks = out["figure"]["narrow"]["xaxis"]["ticktext"]
    assert len([t for t in ticks if t != "&lt;|endoftext|&gt;"]) >= 3  # not just the special


def test_a_token_that_spans_two_words_joins_them():
    e = am.Encoded(tokens=["ab", "c"], special=[False, False], spans=[(0, 2), (2, 3)],
                   maps=torch.ones(1, 1, 2, 2), label="", short="", causal=False, info={})
    words, owner = am.word_of_tokens("猫が好", e)
    assert words == ["猫が", "好"] and owner == [0, 1]


def test_looking_from_shows_the_word_and_its_last_piece():
    v = run(text="The cats sat", look_from="cats")
    assert v["look_from_word"] == "cats"
    assert v["look_from_token"] == f"cats (last piece {v['look_from_piece']})" != "cats"
    assert run(look_from="because")["look_from_token"] == "because"  # one token: just the word


@pytest.mark.parametrize("text", [
    " ".join(["cat"] * 40),
    "I " + " ".join(["it"] * 40),
    "שלום " + " ".join(["cat"] * 40),
])
@pytest.mark.parametrize("model", ["book", "smollm2", "minilm"])
def test_thinned_axes_keep_the_first_words_label(text, model):
    out = am.compute(am.SPEC.resolve({"text": text, "model": model, "look_from": "dog"}))
    fig, v = out["figure"], out["values"]
    words, owner = am.word_of_tokens(text, am.encode(model, text))
    first = owner.index(0)  # the first word's first token
    for layout in (fig["layout"], {**fig["layout"], **fig["narrow"]}):
        for axis in ("xaxis", "yaxis"):
            ticks = layout[axis]
            assert first in ticks["tickvals"], (axis, ticks)
            assert ticks["ticktext"][ticks["tickvals"].index(first)] == am._escape(words[0])
            gaps = [b - a for a, b in zip(ticks["tickvals"], ticks["tickvals"][1:])]
            if axis == "xaxis":
                k = -(-v["n_tokens"] // (am.WIDE_LABELS if layout is fig["layout"] else am.NARROW_LABELS))
                assert min(gaps) >= k  # no two labels closer than the thinning step


def test_values_carry_the_token_count_and_the_limit():
    v = run()
    assert v["n_tokens"] == len(v["tokens"]) and v["max_tokens"] == am.MAX_TOKENS


def test_summary_and_table_describe_the_look_from_row():
    out = am.compute(am.SPEC.resolve({}))
    v, table = out["values"], out["table"]
    assert "'because'" in out["summary"] and "book's model" in out["summary"]
    assert table["columns"] == ["word", "tokens", "weight"]
    assert [r[0] for r in table["rows"]][-1] == "it"  # the row sees up to "it" only
    assert abs(sum(r[2] for r in table["rows"]) - 1) < 1e-3
    assert ["street", "stre + et", v["weight_to"]["street"]] in table["rows"]


def test_the_figure_leaves_background_and_font_colours_to_the_page():
    fig = am.compute(am.SPEC.resolve({}))["figure"]
    text = json.dumps(fig).lower()
    for forbidden in ("white", "black", "#fff", "#000", "paper_bgcolor", "plot_bgcolor"):
        assert forbidden not in text
    scale = fig["layout"]["coloraxis"]["colorscale"]
    assert scale[0][0] == 0 and scale[0][1].endswith(",0)")  # zero weight: transparent


@pytest.mark.parametrize("n_words", [5, 20, 45, 62])
def test_labels_thin_out_on_long_sentences_and_phones(n_words):
    text = " ".join(["cat"] * n_words)
    out = am.compute(am.SPEC.resolve({"text": text, "look_from": "dog"}))
    fig, T = out["figure"], out["values"]["n_tokens"]
    wide, narrow = fig["layout"], fig["narrow"]
    assert len(wide["xaxis"]["tickvals"]) <= am.WIDE_LABELS
    assert len(narrow["xaxis"]["tickvals"]) <= am.NARROW_LABELS
    assert len(narrow["yaxis"]["tickvals"]) <= am.NARROW_LABELS + 1  # + the look-from row
    q = out["values"]["look_from_index"]
    assert q in wide["yaxis"]["tickvals"] and q in narrow["yaxis"]["tickvals"]
    if T <= am.WIDE_LABELS:
        assert len(wide["xaxis"]["tickvals"]) == T  # short sentences: every token labelled
    assert len(narrow["title"]["text"]) <= 40  # one short line fits a 390 px phone
    if T > am.WIDE_LABELS:  # thinned: whole words at word starts, never a later piece
        assert all(t in ("cat", "&lt;|endoftext|&gt;") for t in wide["xaxis"]["ticktext"])
    assert len(fig["data"][0]["z"]) == T


def test_bake_points_are_the_it_experiment_only():
    points = am.SPEC.bake_points()
    assert len(points) == 6
    assert {(p["text"], p["model"]) for p in points} == {
        (t, m) for t in (am.TIRED, am.WIDE) for m in ("book", "smollm2", "minilm")}


# --- an instructor's local checkpoint -------------------------------------------------------

def _tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([am.TIRED, am.WIDE, "it was a cat"] * 5,
                            trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<s>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>")


def _tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128))


def _tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=128))


@pytest.fixture(params=[_tiny_llama, _tiny_gpt2], ids=["llama", "gpt2"])
def local_checkpoint(request, tmp_path, monkeypatch):
    """A tiny random model saved the way `save_pretrained` saves a real one."""
    torch.manual_seed(0)
    request.param().save_pretrained(tmp_path)
    _tiny_tokenizer().save_pretrained(tmp_path)
    monkeypatch.setenv(am.ENV_CHECKPOINT, str(tmp_path))
    importlib.reload(am)  # SPEC's model options are read from the environment at import
    yield tmp_path
    monkeypatch.undo()
    importlib.reload(am)


def test_a_local_checkpoint_becomes_a_model_choice(local_checkpoint, app):
    assert "local" in am.SPEC.param("model").options
    v = run(model="local")
    assert v["n_layers"] == 2 and v["n_heads"] == 4 and v["causal"]
    assert local_checkpoint.name in v["model_label"]
    with pytest.raises(ParamError, match="has 2 layers"):
        run(model="local", layer=5, average=False)
    r = app.test_client().post(URL, json={"model": "local", "average": False, "layer": 1, "head": 3})
    assert r.status_code == 200


def test_without_the_variable_there_is_no_local_choice(client):
    assert "local" not in am.SPEC.param("model").options
    assert client.post(URL, json={"model": "local"}).status_code == 400


def test_a_broken_local_checkpoint_is_a_400_not_a_crash(tmp_path, monkeypatch, app):
    monkeypatch.setenv(am.ENV_CHECKPOINT, str(tmp_path / "nothing-here"))
    importlib.reload(am)
    try:
        r = app.test_client().post(URL, json={"model": "local"})
        assert r.status_code == 400 and "could not be loaded" in r.get_json()["error"]
    finally:
        monkeypatch.undo()
        importlib.reload(am)


@pytest.mark.parametrize("model, typed", [("book", "<|endoftext|>"), ("minilm", "[CLS]")])
def test_a_typed_special_token_is_text_not_a_special_token(model, typed):
    v = run(model=model, text=f"it was {typed} so")
    n_special = sum(t in ("<|endoftext|>", "[CLS]", "[SEP]") for t in v["tokens"])
    assert n_special == (1 if model == "book" else 2)  # only the ones the model adds itself


def test_a_notice_never_echoes_a_whole_long_word():
    v = run(model="minilm", text="it was " + "x" * 200, look_from="nothere")
    assert len(v["notice"]) < 160 and "…" in v["notice"]
