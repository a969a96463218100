"""The attention_map widget: real weights, the decoder/encoder contrast, and hostile input."""

from __future__ import annotations

import importlib
import json

import pytest
import torch

from backend.widgets import attention_map as am
from backend.widgets.spec import ParamError

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


@pytest.mark.parametrize("model,layer,head,message", [
    ("book", 4, 0, "model 'book' has 4 layers"),
    ("book", 0, 7, "model 'book' has 4 heads"),
    ("minilm", 6, 0, "model 'minilm' has 6 layers"),
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


@pytest.mark.parametrize("model", ["book", "minilm"])
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
    assert len(ticks) == v["n_tokens"]
    assert not any("<b>" in t or "<script" in t for t in ticks)  # markup shown as text, not obeyed


def test_figure_is_a_heatmap_with_tokens_on_both_axes():
    out = am.compute(am.SPEC.resolve({}))
    fig, v = out["figure"], out["values"]
    assert fig["data"][0]["type"] == "heatmap"
    assert fig["layout"]["xaxis"]["ticktext"] == fig["layout"]["yaxis"]["ticktext"]
    assert len(fig["data"][0]["z"]) == v["n_tokens"]
    json.loads(json.dumps(out, allow_nan=False))


def test_bake_points_are_the_it_experiment_only():
    points = am.SPEC.bake_points()
    assert len(points) == 4
    assert {(p["text"], p["model"]) for p in points} == {
        (t, m) for t in (am.TIRED, am.WIDE) for m in ("book", "minilm")}


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


# --- what the chapter says in words (docs/chapters/attention-maps.md) -----------------------

def test_the_chapter_prose_about_the_book_model_still_holds():
    v = run()
    assert v["top"][0]["token"] == "because"
    assert {t["token"] for t in v["top"][1:3]} == {"The", "it"}
    assert v["weight_to"]["animal"] < v["top"][2]["weight"]
    assert "stre" in v["tokens"] and "et" in v["tokens"]  # "street" is two tokens
    assert v["weights"][1][0] > 0.5 > v["special_share"]  # the sink: most of row 1, less later


def test_the_chapter_prose_about_single_heads_still_holds():
    assert run(average=False, layer=1, head=3)["previous_token_rate"] > 0.5
    assert run(model="minilm", average=False, layer=0, head=2)["previous_token_rate"] > 0.5
    assert run(model="minilm", average=False, layer=1, head=8)["next_token_rate"] > 0.5
    assert run(model="minilm")["special_share"] > 2 * run()["special_share"]  # bigger sinks


def test_the_chapter_prose_about_minilm_still_holds():
    a, b = run(text=am.TIRED, model="minilm"), run(text=am.WIDE, model="minilm")
    assert a["top"][0]["token"] == "tired" and b["top"][0]["token"] == "wide"
    assert a["weight_to"]["animal"] > b["weight_to"]["animal"]  # weight leaves "animal" ...
    assert a["weight_to"]["street"] < b["weight_to"]["street"]  # ... towards "street"
    assert b["weight_to"]["animal"] > b["weight_to"]["street"]  # but "animal" keeps the lead
    assert b["weight_to"]["animal"] - a["weight_to"]["animal"] > -0.05  # a couple of hundredths


def test_a_broken_local_checkpoint_is_a_400_not_a_crash(tmp_path, monkeypatch, app):
    monkeypatch.setenv(am.ENV_CHECKPOINT, str(tmp_path / "nothing-here"))
    importlib.reload(am)
    try:
        r = app.test_client().post(URL, json={"model": "local"})
        assert r.status_code == 400 and "could not be loaded" in r.get_json()["error"]
    finally:
        monkeypatch.undo()
        importlib.reload(am)
