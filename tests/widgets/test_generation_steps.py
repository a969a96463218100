"""The generation_steps widget through the API, and its stepping held to the reference
`generate` without a cache (every step recomputing the whole sequence), same seed, same draws."""

from __future__ import annotations

import torch

from backend.reference.generate import generate
from backend.widgets import generation_steps as gs

URL = "/api/widgets/generation_steps"


def test_the_answer_draws_the_distribution_the_attention_and_the_cache(client):
    body = client.post(URL, json={"step": 3, "top_k": 5}).get_json()
    v = body["values"]
    kinds = [t["type"] for t in body["figure"]["data"]]
    assert kinds == ["bar", "bar", "bar", "scatter", "scatter"]
    assert v["kept_tokens"] <= 5 and v["drawn_rank"] <= 5
    assert len(v["attention"]) == v["cache_positions"] == v["prompt_tokens"] + 2
    assert v["cached_ms"] > 0 and v["full_ms"] > 0
    assert "step 3 drew" in body["summary"]


def test_step_one_is_the_prefill_and_times_no_cached_step(client):
    v = client.post(URL, json={"step": 1}).get_json()["values"]
    assert "cached_ms" not in v and v["full_ms"] > 0
    assert v["cache_positions"] == v["prompt_tokens"]


def test_bad_settings_are_400s(client):
    for body in ({"step": 0}, {"step": 33}, {"temperature": 0}, {"top_p": 0}, {"head": 9},
                 {"layer": 30}, {"prompt": ""}, {"prompt": "word " * 60}):
        r = client.post(URL, json=body)
        assert r.status_code == 400, body


def test_a_typed_special_token_is_text():
    ids = gs.encode("<|endoftext|>")
    assert ids.count(0) == 1 and len(ids) > 2


def test_the_cached_steps_draw_what_recomputing_every_step_draws():
    from backend.smollm2.load import model

    m, _ = model()
    ids = gs.encode("Once upon a time")
    ours = gs.run_steps(m, ids, 12, 0.8, None, 0.9, 5, 0)[0]
    ref = generate(m, torch.tensor([ids]), 12, use_cache=False, temperature=0.8, top_p=0.9,
                   generator=torch.Generator().manual_seed(5))
    assert ours == ref.tokens[0].tolist()
