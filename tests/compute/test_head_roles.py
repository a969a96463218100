"""The head_roles widget through the API, and its reference code (backend/reference/
head_roles.py) on maps where the right scores are known by construction."""

from __future__ import annotations

import pytest
import torch

from backend.reference.head_roles import LOCAL, induction_targets, role_scores

URL = "/api/widgets/head_roles"


def test_the_answer_scores_every_head_and_draws_the_chosen_heads(client):
    body = client.post(URL, json={"view": "group", "layer": 3, "head": 4}).get_json()
    v = body["values"]
    assert v["group_heads"] == [3, 4, 5] and v["n_tokens"] == 18
    assert all(len(s) == 30 and all(len(r) == 9 for r in s) for s in v["scores"].values())
    kinds = [t["type"] for t in body["figure"]["data"]]
    assert kinds == ["heatmap", "scatter", "heatmap", "heatmap", "heatmap"]
    assert body["figure"]["click"] == {"trace": 0, "x": "head", "y": "layer"}
    assert "layer 3, head 4" in body["summary"]


def test_a_text_with_no_repeat_has_no_induction_score_and_says_why(client):
    r = client.post(URL, json={"text": "Every word here is different."})
    assert r.status_code == 400
    assert "occurs twice" in r.get_json()["error"]
    ok = client.post(URL, json={"text": "Every word here is different.", "role": "local"})
    assert ok.status_code == 200
    assert ok.get_json()["values"]["scores"]["induction"] is None


def test_bad_settings_are_400s(client):
    for body in ({"layer": 30}, {"head": 9}, {"role": "sink"}, {"view": "all"},
                 {"text": "x" * 401}, {"text": "好" * 60}):
        r = client.post(URL, json=body)
        assert r.status_code == 400, body


def test_scores_read_the_right_cells():
    T = 8
    maps = torch.zeros(1, 3, T, T)
    for t in range(T):
        maps[0, 0, t, max(t - 1, 0)] = 1.0  # a perfect previous-token head
        maps[0, 1, t, 0] = 1.0  # all on the first token
        maps[0, 2, t, t] = 1.0  # each row on itself: local, never previous
    ids = [0, 5, 6, 7, 5, 6, 7, 5]
    s = role_scores(maps, ids)
    assert s["previous_token"][0].tolist() == [1.0, 0.0, 0.0]
    # row 1's previous token is the first token: one row of the seven counted
    assert s["first_token"][0].tolist() == pytest.approx([1 / 7, 1.0, 0.0])
    assert s["local"][0].tolist() == [1.0, 0.0, 1.0]
    assert induction_targets(ids) == {4: [2], 5: [3], 6: [4], 7: [2, 5]}
    assert s["induction"][0].tolist() == [0.0, 0.0, 0.0]


def test_an_induction_head_scores_one_and_every_target_counts():
    ids = [0, 5, 6, 5, 6, 5]
    targets = induction_targets(ids)
    T = len(ids)
    maps = torch.zeros(1, 1, T, T)
    for t in range(T):
        cols = targets.get(t, [0])
        maps[0, 0, t, cols] = 1.0 / len(cols)
    assert role_scores(maps, ids)["induction"].item() == pytest.approx(1.0)


def test_short_texts_have_no_score_they_cannot_define():
    s = role_scores(torch.full((1, 1, 2, 2), 0.5), [0, 9])
    assert s["previous_token"] is None and s["local"] is None and s["induction"] is None
    assert s["first_token"] is not None
    assert LOCAL == 4
