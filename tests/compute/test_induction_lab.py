"""The induction_lab widget through the API, and its reference code (backend/reference/
induction.py) on a small random model where the right answers are known by construction."""

from __future__ import annotations

import pytest
import torch

from backend.reference.config import ModelConfig
from backend.reference.induction import ablate_heads, copy_losses, head_scores, token_losses
from backend.reference.model import DecoderLM
from backend.reference.rng import isolated_rng

URL = "/api/widgets/induction_lab"


def test_the_answer_names_the_knocked_out_heads_and_draws_both_panels(client):
    r = client.post(URL, json={"ablate": 3})
    assert r.status_code == 200
    body = r.get_json()
    v = body["values"]
    assert len(v["ablated"]) == 3 and len(v["induction_scores"]) == 30
    assert all(len(row) == 9 for row in v["induction_scores"])
    kinds = [t["type"] for t in body["figure"]["data"]]
    assert kinds == ["heatmap", "scatter", "scatter", "scatter"]  # scores, x marks, two losses
    assert "knocked out" in body["summary"] and body["table"]["rows"][1][0] == "second copy"


def test_nothing_knocked_out_means_the_same_loss(client):
    v = client.post(URL, json={"ablate": 0}).get_json()["values"]
    assert v["ablated"] == [] and v["loss_second_ablated"] == v["loss_second"]


def test_bad_settings_are_400s(client):
    for body in ({"ablate": 31}, {"n_tokens": 7}, {"rank": "best"}, {"ablation": "half"}):
        r = client.post(URL, json=body)
        assert r.status_code == 400, body


def _tiny():
    cfg = ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=64)
    with isolated_rng(3):
        return DecoderLM(cfg).eval()


def test_zero_ablation_of_every_head_is_a_zero_attention_output_and_the_hooks_go_away():
    model = _tiny()
    ids = torch.randint(0, 64, (1, 12), generator=torch.Generator().manual_seed(0))
    every = [(layer, head) for layer in range(2) for head in range(4)]
    with torch.no_grad():
        clean = model(ids).logits
        with ablate_heads(model, every, "zero", ids):
            knocked = model(ids).logits
        again = model(ids).logits
        # by hand: every attention sublayer adds nothing to the residual stream
        for layer in model.layers:
            layer.attn.o_proj.weight.zero_()
        by_hand = model(ids).logits
    assert torch.equal(again, clean)  # the hooks are gone
    assert torch.allclose(knocked, by_hand, atol=1e-6)


def test_mean_ablation_of_a_constant_head_changes_nothing():
    """A head whose output is the same at every position equals its own mean."""
    model = _tiny()
    ids = torch.full((1, 10), 5)  # one token repeated: a first-layer head's value is constant
    with torch.no_grad():
        clean = model(ids).logits
        with ablate_heads(model, [(0, 1)], "mean", ids):
            knocked = model(ids).logits
    assert torch.allclose(knocked, clean, atol=1e-5)


def test_scores_read_the_right_cells():
    n, T = 3, 7
    attn = torch.zeros(1, 2, T, T)
    for j in range(n):  # head 0: a perfect induction head
        attn[0, 0, 1 + n + j, 2 + j] = 1.0
    for i in range(1, T):  # head 1: a perfect previous-token head
        attn[0, 1, i, i - 1] = 1.0
    s = head_scores([attn], n)
    assert s["induction"].tolist() == [[1.0, 0.0]]
    assert s["previous_token"][0, 1] == 1.0 and s["previous_token"][0, 0] < 1.0


def test_copy_losses_leave_each_copys_first_token_out():
    n = 4
    ids = torch.tensor([[0, 7, 8, 9, 10, 7, 8, 9, 10]])
    logits = torch.zeros(1, 9, 16)
    for t, token in ((5, 8), (6, 9), (7, 10)):  # positions 5..7 predict tokens 6..8 surely
        logits[0, t, token] = 50.0
    first, second = copy_losses(token_losses(logits, ids), n)
    assert first == pytest.approx(torch.log(torch.tensor(16.0)).item())
    assert second < 1e-6


def test_a_knock_out_never_touches_the_model_other_threads_run():
    """The hooks go on a module of the request's own: a clean answer computed while other
    threads knock heads out (requests, the warm-up) is the clean answer computed alone."""
    from concurrent.futures import ThreadPoolExecutor

    from backend.compute import induction_lab as lab
    from backend.smollm2.load import model

    clean = lab.SPEC.resolve({"n_tokens": 20})
    alone = lab.compute(clean)["values"]["loss_second"]
    with ThreadPoolExecutor(4) as pool:
        knocks = [pool.submit(lab.compute, lab.SPEC.resolve({"n_tokens": 20, "ablate": 30}))
                  for _ in range(3)]
        got = [pool.submit(lab.compute, clean) for _ in range(3)]
        assert [f.result()["values"]["loss_second"] for f in got] == [alone] * 3
        for f in knocks:
            f.result()
    shared = model()[0]
    assert not any(layer.attn.o_proj._forward_pre_hooks for layer in shared.layers)
