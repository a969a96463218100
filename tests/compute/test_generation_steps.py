"""The generation_steps widget through the API, and its stepping held to the reference
`generate` without a cache (every step recomputing the whole sequence), same seed, same draws."""

from __future__ import annotations

import torch

from backend.compute import generation_steps as gs
from backend.reference.generate import generate

URL = "/api/widgets/generation_steps"


def test_the_answer_draws_the_distribution_the_attention_and_the_cache(client):
    body = client.post(URL, json={"step": 3, "top_k": 5}).get_json()
    v = body["values"]
    kinds = [t["type"] for t in body["figure"]["data"]]
    assert kinds == ["bar", "bar", "bar", "bar", "scatter", "scatter"]
    assert v["kept_tokens"] <= 5 and v["drawn_rank"] <= 5
    assert len(v["attention"]) == v["cache_positions"] == v["prompt_tokens"] + 2
    assert v["cached_ms"] > 0 and v["full_ms"] > 0
    assert "step 3 drew" in body["summary"]


def test_step_one_is_the_prefill_and_times_no_cached_step(client):
    body = client.post(URL, json={"step": 1}).get_json()
    v = body["values"]
    assert "cached_ms" not in v and v["full_ms"] > 0 and "prefill" in body["notice"]
    assert v["cache_positions"] == v["prompt_tokens"] == v["fed_positions"]
    assert v["cache_held_bytes"] == v["cache_bytes"]


def test_a_piece_of_a_character_shows_its_bytes_and_whitespace_shows():
    from backend.smollm2.load import model

    _, tok = model()
    ids = tok("川の流れ")["input_ids"]
    pieces = [gs._piece(tok, i) for i in ids]
    assert all("\ufffd" not in p for p in pieces)
    assert any(p.startswith("bytes ") for p in pieces)
    # the bytes shown are the character's own UTF-8
    alone = [gs._piece(tok, i) for i in tok("川")["input_ids"]]
    assert " ".join(p.removeprefix("bytes ") for p in alone) == "川".encode().hex(" ")
    assert gs._shown("\n") == "↵" and gs._shown("  ") == "··" and gs._shown(" a") == " a"


def test_the_drawn_token_outside_the_top_ten_is_labelled_with_its_rank(client):
    for seed in range(40):  # a hot temperature soon draws from the tail
        v = client.post(URL, json={"temperature": 2.0, "top_p": 1.0, "step": 2,
                                   "seed": seed}).get_json()
        if v["values"]["drawn_rank"] > gs.SHOW:
            break
    else:
        raise AssertionError("no draw from outside the top ten in 40 seeds")
    names = v["figure"]["layout"]["yaxis"]["ticktext"]
    assert len(names) == gs.SHOW + 1 and f"rank {v['values']['drawn_rank']:,}" in names[0]


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
    ours = gs.run_steps(m, ids, 12, 0.8, None, 0.9, 5)[0]
    ref = generate(m, torch.tensor([ids]), 12, use_cache=False, temperature=0.8, top_p=0.9,
                   generator=torch.Generator().manual_seed(5))
    assert ours == ref.tokens[0].tolist()


def test_a_longer_run_begins_with_the_shorter_one():
    """The widget runs 8, 16 or 32 steps, whichever covers the step asked for: a seeded run's
    first steps must not depend on how long it goes on."""
    a = gs.compute(gs.SPEC.resolve({"step": 8, "temperature": 1.5}))["values"]
    b = gs.compute(gs.SPEC.resolve({"step": 32, "temperature": 1.5}))["values"]
    assert b["tokens"][: len(a["tokens"])] == a["tokens"]
    assert b["steps_not_top"][: len(a["steps_not_top"])] == a["steps_not_top"]
