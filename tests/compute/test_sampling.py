"""The sampling widget through the API, against the book's model run independently here."""

from __future__ import annotations

import math

import pytest
import torch

from backend.bookmodel.load import load_model
from backend.bookmodel.tokenizer import EOT
from tests.support.api import poster

URL = "/api/widgets/sampling"


@pytest.fixture(scope="module")
def book():
    return load_model()


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


@torch.no_grad()
def oracle_probs(book, prompt, temperature=1.0):
    model, tok = book
    ids = torch.tensor([[tok.token_to_id(EOT)] + tok.encode(prompt).ids])
    return torch.softmax(model(ids).logits[0, -1].double() / temperature, -1), ids


def test_raw_distribution_and_entropy(client, book):
    v = post(client)["values"]
    p, ids = oracle_probs(book, "The river flows through the")
    top = torch.argsort(p, descending=True)[:15]
    assert [r["id"] for r in v["probs"]] == top.tolist()
    assert all(abs(r["prob_raw"] - float(p[i])) < 1e-5 for r, i in zip(v["probs"], top))
    assert abs(v["entropy_raw"] - float(-(p * p.log()).sum())) < 1e-3
    assert v["kept_tokens"] == v["vocab_size"] == 4096 and v["max_entropy"] == math.log(4096)
    assert v["n_prompt_tokens"] == ids.size(1)


def test_top_k_and_top_p_keep_what_they_say(client, book):
    p, _ = oracle_probs(book, "The river flows through the")
    assert post(client, top_k=5)["values"]["kept_tokens"] == 5
    sorted_p = torch.sort(p, descending=True).values
    need = int((sorted_p.cumsum(0) < 0.9).sum()) + 1  # fewest tokens reaching 0.9
    assert post(client, top_p=0.9)["values"]["kept_tokens"] == need
    kept = post(client, top_k=5)["values"]["probs"]
    assert abs(sum(r["prob"] for r in kept[:5]) - 1) < 1e-5 and all(r["prob"] == 0 for r in kept[5:])


def test_temperature_matches_an_independent_softmax(client, book):
    p, _ = oracle_probs(book, "The river flows through the", temperature=0.5)
    v = post(client, temperature=0.5)["values"]
    assert abs(v["entropy"] - float(-(p * p.log()).sum())) < 1e-3


def test_loss_shift_and_logits_to_keep(client, book):
    model, _ = book
    v = post(client)["values"]
    _, ids = oracle_probs(book, "The river flows through the")
    with torch.no_grad():
        logits = model(ids).logits[0]
        right = torch.nn.functional.cross_entropy(logits[:-1], ids[0, 1:])
        two = torch.nn.functional.cross_entropy(logits[:-2], ids[0, 2:])
    assert abs(v["loss_right"] - float(right)) < 1e-4 and abs(v["loss_off_by_two"] - float(two)) < 1e-4
    T = ids.size(1)
    assert v["logits_bytes_full"] == T * 4096 * 4 and v["logits_bytes_last"] == 4096 * 4


def test_continuation_is_seeded_and_bounded(client):
    a, b = post(client, seed=3)["values"], post(client, seed=3)["values"]
    assert a["continuation"] == b["continuation"] and a["continuation"]
    assert a["n_new_tokens"] == 12


@pytest.mark.parametrize("params, text", [
    (dict(temperature=0), "'temperature τ' must be from 0.1 to 3"),
    (dict(top_p=0), "'top-p (1 = off)' must be from 0.05 to 1"),
    (dict(top_k=-1), "'top-k (0 = off)' must be from 0 to 200"),
    (dict(prompt="x," * 100), "'prompt' is 202 tokens long; the limit is 64"),
    (dict(prompt="   "), "'prompt' must not be empty"),
])
def test_clear_400s(client, params, text):
    r = client.post(URL, json=params)
    assert r.status_code == 400 and text in r.get_json()["error"], r.get_json()


def test_result_has_summary_and_table(client):
    body = post(client)
    assert body["summary"] and len(body["table"]["rows"]) == 15 and "narrow" in body["figure"]


def test_values_panel_shows_the_losses_and_byte_counts(client):
    """The chapter sends the reader to this widget's values for the off-by-two and logits sizes."""
    from backend.compute import REGISTRY

    shown = {o.name for o in REGISTRY["sampling"].SPEC.outputs}
    assert {"loss_right", "loss_off_by_two", "loss_right_same", "n_prompt_tokens",
            "logits_bytes_full", "logits_bytes_last"} <= shown
    v = client.post("/api/widgets/sampling", json={"prompt": "The city is the capital of"}).get_json()["values"]
    assert v["logits_bytes_full"] == v["n_prompt_tokens"] * v["logits_bytes_last"] == v["n_prompt_tokens"] * 4096 * 4


@torch.no_grad()
def test_smollm2s_distribution_is_llama_for_causal_lms(client):
    """model=smollm2: the widget's distribution against transformers' own Llama on the same
    weights and tokens (backend/smollm2/load.llama)."""
    from backend.smollm2.load import llama, model

    v = post(client, model="smollm2", top_p=0.9)["values"]
    _, tok = model()
    ids = torch.tensor([[tok.eos_token_id] + tok("The river flows through the")["input_ids"]])
    p = torch.softmax(llama()(ids).logits[0, -1].double(), -1)
    top = torch.argsort(p, descending=True)[:15]
    assert [r["id"] for r in v["probs"]] == top.tolist()
    assert all(abs(r["prob_raw"] - float(p[i])) < 1e-5 for r, i in zip(v["probs"], top))
    need = int((torch.sort(p, descending=True).values.cumsum(0) < 0.9).sum()) + 1
    assert v["kept_tokens"] == need and v["vocab_size"] == 49152
