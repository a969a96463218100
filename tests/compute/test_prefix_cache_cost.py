"""The prefix_cache_cost widget through the API: the handout's bill exactly, and its 400s."""

from __future__ import annotations

import pytest

from tests.support.api import poster

URL = "/api/widgets/prefix_cache_cost"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


def test_handout_defaults_exactly(client):
    v = post(client)["values"]
    assert v["cost_full"] == 0.009 and v["cost_cached"] == 0.00585 and v["saving"] == 0.35
    assert f"{v['cost_full']:.5f}" == "0.00900" and f"{v['saving']:.0%}" == "35%"
    assert v["cost_first_write"] == 0.009875 and v["break_even_requests"] == 2


def test_one_cached_token_saves_one_tokens_worth(client):
    v = post(client, cached_tokens=1)["values"]
    assert v["cost_full"] == 0.009 and v["saving_per_request"] == 9 / 10**6


def test_cached_price_equal_to_input_price_never_pays_back(client):
    out = post(client, price_cached=10)
    assert out["values"]["pays_back"] is False and out["values"]["break_even_requests"] == 0
    assert "never pays for itself" in out["notice"]


def test_a_write_at_the_input_price_does_not_pay_back_when_a_cached_request_costs_more(client):
    out = post(client, price_cached=200, price_write=10)
    v = out["values"]
    assert v["cost_first_write"] == v["cost_full"] < v["cost_cached"]
    assert v["pays_back"] is False and v["break_even_requests"] == 0 and "never" in out["notice"]
    assert "739% more" in out["summary"]


def test_nothing_extra_for_the_write_with_a_cheaper_read_pays_at_once(client):
    v = post(client, price_write=10)["values"]
    assert v["write_premium"] == 0 and v["cost_first_write"] == v["cost_full"]
    assert v["pays_back"] is True and v["break_even_requests"] == 1


@pytest.mark.parametrize("write, price_input", [(0, 10), (9.99, 10), (12.5, 20)])
def test_an_input_price_above_the_write_price_is_a_400_naming_it(client, write, price_input):
    """Writing the prefix computes it as an uncached input does: a cheaper write would make the
    first request cost less than a cached one. Nothing extra for the write is the input price.
    The rule is the input price's limit (spec data the page follows: its slider tops out at
    the write price), so the 400 names the input price and its top."""
    r = client.post(URL, json={"price_write": write, "price_input": price_input})
    body = r.get_json()
    assert r.status_code == 400 and body["param"] == "price_input"
    assert (f"'input price' must be from 0 to {write:g} at cache write price = {write:g} "
            "(writing the prefix costs at least an uncached input)") in body["error"]


def test_the_input_price_may_equal_the_write_price(client):
    assert post(client, price_write=7.77, price_input=7.77)["values"]["write_premium"] == 0


def test_a_whole_prompt_cached_reuses_whole_blocks_before_its_last_token(client):
    out = post(client, cached_tokens=400)
    assert out["values"]["cacheable_engine"] == 384 and "reuses 384 of them" in out["notice"]
    assert post(client, cached_tokens=399)["values"]["cacheable_engine"] == 384


def test_a_dearer_read_is_said_to_cost_more(client):
    out = post(client, price_cached=20)
    assert out["values"]["saving"] < 0 and "39% more" in out["summary"]


def test_cached_more_than_input_is_a_400_naming_the_input(client):
    r = client.post(URL, json={"input_tokens": 400, "cached_tokens": 401})
    body = r.get_json()
    assert r.status_code == 400 and body["param"] == "cached_tokens"
    assert ("'cached prefix tokens' must be from 1 to 400 at input tokens = 400 "
            "(the cached prefix is part of the input), got 401") in body["error"]


@pytest.mark.parametrize("params, label", [
    ({"input_tokens": 0}, "input tokens"), ({"output_tokens": 0}, "output tokens"),
    ({"cached_tokens": 0}, "cached prefix tokens"), ({"input_tokens": 131_073}, "input tokens"),
    ({"price_input": -1}, "input price"), ({"price_output": 1e9}, "output price"),
    ({"price_write": "a lot"}, "cache write price"),
])
def test_out_of_range_is_a_400(client, params, label):
    r = client.post(URL, json=params)
    assert r.status_code == 400 and label in r.get_json()["error"]


def test_figure_stacks_three_requests(client):
    out = post(client)
    bars = [t for t in out["figure"]["data"] if t["type"] == "bar"]
    assert len(bars) == 3 and out["figure"]["layout"]["barmode"] == "stack"
    totals = [sum(b["x"][i] for b in bars) for i in range(3)]
    assert totals == pytest.approx([0.009, 0.009875, 0.00585], abs=1e-12)
    assert len(out["table"]["rows"]) == 3 and out["summary"]


def test_a_huge_number_is_echoed_short(client):
    r = client.post(URL, json={"price_input": 1e308})
    assert r.status_code == 400
    msg = r.get_json()["error"]
    # the number as a reader writes it, never a 309-digit echo; the bound that binds first is
    # the cache write price's (an input above the slider's top reads as the limit words it)
    assert msg.startswith("'input price' must be from 0 to 12.5 at cache write price = 12.5")
    assert msg.endswith(", got 1e+308") and len(msg) < 160


def test_a_short_prefix_says_a_provider_would_not_cache_it(client):
    out = post(client)
    assert out["values"]["cacheable_provider"] == 0 and out["values"]["cacheable_engine"] == 336
    assert "1,024-token minimum" in out["notice"]
    assert "notice" not in post(client, input_tokens=4000, cached_tokens=3500, output_tokens=300)
