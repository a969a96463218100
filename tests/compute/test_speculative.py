"""The speculative widget through the API: its values, the figure and the 400s."""

from __future__ import annotations

import pytest

from tests.support.api import poster

URL = "/api/widgets/speculative"
post = poster(URL)
refused = poster(URL, 400, "error")


def test_defaults(client):
    body = post(client)
    v = body["values"]
    assert (v["alpha"], v["k"], v["draft_cost"]) == (0.8, 4, 0.05)
    assert v["tokens_per_pass"] == pytest.approx(1 + 0.8 + 0.8 ** 2 + 0.8 ** 3 + 0.8 ** 4)
    assert v["speedup"] == pytest.approx(v["tokens_per_pass"] / 1.2)
    assert v["best_speedup"] == max(v["curve"]) and v["curve"][v["best_k"] - 1] == v["best_speedup"]
    assert body["summary"].startswith("With α = 0.80, drafting k = 4 tokens yields 3.36 tokens")
    names = [t["name"] for t in body["figure"]["data"]]
    assert names == ["speed-up", "plain decoding", "k = 4", "best, k = 8"]
    assert len(body["table"]["rows"]) == 16


def test_a_draft_that_never_pays_is_said(client):
    body = post(client, alpha=0.8, draft_cost=1.0)
    assert not body["values"]["any_pays"] and body["values"]["break_even_alpha"] is None
    assert "slower than plain decoding" in body["summary"]


@pytest.mark.parametrize("params,word", [({"alpha": 1.0}, "acceptance rate"), ({"alpha": -0.1}, "acceptance rate"),
                                          ({"k": 0}, "draft length"), ({"k": 17}, "draft length"),
                                          ({"draft_cost": 1.5}, "draft step cost"),
                                          ({"k": "many"}, "draft length")])
def test_out_of_range_is_a_400_naming_the_control(client, params, word):
    assert word in refused(client, **params)
