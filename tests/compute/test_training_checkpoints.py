"""The training_checkpoints widget: each shipped step's continuation and head map, bounded work,
the same answer twice, and a clear 400 for every setting it cannot run."""

from __future__ import annotations

import json

import pytest

from backend.bookmodel import checkpoints
from backend.bookmodel.load import metrics
from backend.compute import training_checkpoints as tc

URL = "/api/widgets/training_checkpoints"


def run(**params):
    return tc.compute(tc.SPEC.resolve(params))


def test_the_steps_are_the_shipped_checkpoints_and_the_sizes_the_models():
    assert tc.STEPS == checkpoints.steps() and tc.STEPS[0] == 0
    assert [int(o) for o in tc.SPEC.param("step").options] == list(tc.STEPS)
    cfg = metrics()["model"]["config"]
    assert (tc.LAYERS, tc.HEADS) == (cfg["n_layers"], cfg["n_heads"])
    assert tc.SPEC.param("layer").max == cfg["n_layers"] - 1
    assert tc.SPEC.param("head").max == cfg["n_heads"] - 1
    # every step is baked, so the page works offline at each stop of the slider
    assert sorted(int(p["step"]) for p in tc.SPEC.bake_points()) == list(tc.STEPS)


def test_the_default_answer_is_a_causal_map_a_continuation_and_the_steps_losses():
    out = run()
    v = out["values"]
    T = v["n_tokens"]
    assert v["tokens"][0] == "<|endoftext|>" and len(v["weights"]) == T
    for i, row in enumerate(v["weights"]):
        assert abs(sum(row) - 1) < 1e-3 and all(w == 0 for w in row[i + 1:])
    assert v["continuation_tokens"] == tc.SPEC.param("new_tokens").default
    e = checkpoints.entry(v["step"])
    assert (v["val_loss"], v["train_loss"]) == (round(e["val_loss"], 4), round(e["train_loss"], 4))
    assert [c["step"] for c in v["curve"]] == list(tc.STEPS)
    assert out["figure"]["data"][0]["type"] == "heatmap"
    assert v["continuation"].strip() in out["summary"]
    assert len(out["table"]["rows"]) == T


def test_every_step_answers_and_they_differ():
    texts = {s: run(step=str(s))["values"]["continuation"] for s in tc.STEPS}
    assert len(set(texts.values())) >= len(tc.STEPS) - 2  # neighbours may agree; most differ


def test_the_same_setting_gives_the_same_answer():
    a = run(step=str(tc.STEPS[1]), text="The river", layer=1, head=2)
    b = run(step=str(tc.STEPS[1]), text="The river", layer=1, head=2)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_the_work_is_bounded_at_the_largest_setting():
    # a prompt of exactly the token limit, and the most new tokens: inside the model's context
    text = " the" * (tc.MAX_TOKENS - 1)
    v = run(text=text, new_tokens=tc.MAX_NEW)["values"]
    assert v["n_tokens"] == tc.MAX_TOKENS and v["continuation_tokens"] == tc.MAX_NEW
    assert tc.MAX_TOKENS + tc.MAX_NEW <= metrics()["model"]["config"]["max_seq_len"]


def test_a_typed_special_token_is_text():
    v = run(text="<|endoftext|> The river")["values"]
    assert v["tokens"].count("<|endoftext|>") == 1  # only the one the widget puts in front


@pytest.mark.parametrize("body, param, words", [
    ({"step": "30"}, "step", "must be one of"),
    ({"step": 25}, "step", "must be one of"),
    ({"new_tokens": 0}, "new_tokens", "from 1 to"),
    ({"new_tokens": tc.MAX_NEW + 1}, "new_tokens", "from 1 to"),
    ({"layer": 4}, "layer", "from 0 to 3"),
    ({"head": -1}, "head", "from 0 to 3"),
    ({"text": ""}, "text", "must not be empty"),
    ({"text": "x" * (tc.MAX_CHARS + 1)}, "text", "characters long"),
    ({"text": " the" * tc.MAX_TOKENS}, "text", "tokens"),
    ({"text": "好" * 40}, "text", "tokens"),
    ({"seed": 1}, "seed", "unknown parameter"),
])
def test_bad_settings_are_clear_400s(client, body, param, words):
    r = client.post(URL, json=body)
    assert r.status_code == 400, body
    err = r.get_json()
    assert words in err["error"] and err.get("param") == param, err


def test_the_api_answers_the_default(client):
    r = client.post(URL, json={})
    assert r.status_code == 200
    body = r.get_json()
    assert body["values"]["step"] == tc.STEPS[-1] and body["params"]["step"] == str(tc.STEPS[-1])
