"""The parity widget through the API: the named values, the cross-control rules, the budget."""

from __future__ import annotations

import pytest

from backend.reference.llama_compare import ATTENTION_TOLERANCE, LOGIT_TOLERANCE
from tests.support.api import poster

URL = "/api/widgets/parity"


post = poster(URL)  # POST to the widget: the answer must be a 200; its JSON


error = poster(URL, 400, "error")  # the refusal's sentence


def test_named_values_and_contract(client):
    out = post(client)
    v = out["values"]
    for name in ("max_abs_logit_diff", "max_abs_attention_diff", "cached_vs_uncached_diff"):
        assert isinstance(v[name], float)
    assert v["max_abs_logit_diff"] <= LOGIT_TOLERANCE
    assert v["max_abs_attention_diff"] <= ATTENTION_TOLERANCE
    assert v["cached_vs_uncached_diff"] <= LOGIT_TOLERANCE
    assert v["n_params"] == v["hf_n_params"]  # the same modules on both sides, counted twice
    assert v["ok"] is True
    assert out["summary"] and len(out["table"]["rows"]) == 5
    assert len(out["figure"]["data"][0]["y"]) == 16  # |Δ logit| at each of the T positions
    assert len(out["figure"]["data"][3]["y"]) == 2  # each layer's hidden state
    assert v["fault"] == "none" and v["dtype"] == "float32"
    assert "narrow" in out["figure"]


def test_the_weights_really_reach_llama(client):
    """Different seeds give different losses: the comparison is not of two untouched inits."""
    a, b = post(client, seed=0)["values"], post(client, seed=1)["values"]
    assert a["hf_loss"] != b["hf_loss"]
    assert a["loss"] == pytest.approx(a["hf_loss"], abs=LOGIT_TOLERANCE)


def test_head_count_must_divide_width(client):
    msg = error(client, d_model=48, n_heads=5)
    assert "query heads h" in msg and "width d_model" in msg


def test_head_dim_must_be_even(client):
    msg = error(client, d_model=48, n_heads=16)  # d_head = 3
    assert "even" in msg and "query heads h" in msg


def test_kv_heads_must_divide_heads(client):
    msg = error(client, n_heads=8, n_kv=3)
    assert "key/value heads" in msg and "query heads h" in msg


def test_slider_range_named(client):
    msg = error(client, seq_len=65)
    assert "tokens T" in msg and "64" in msg


def test_parameter_budget(client):
    msg = error(client, n_layers=4, d_model=256, n_heads=8, n_kv=8, d_ff=1024, vocab=4096)
    assert "1,000,000" in msg and "vocabulary |Σ|" in msg


def test_the_budget_formula_is_the_books_count():
    """The spec's Limit restates count_parameters as data: pinned to it, exactly."""
    import itertools

    from backend.compute import parity as w
    from backend.reference.counting import count_parameters

    for V, d, L, h, kv, ff, tied in itertools.product((16, 4096), (16, 48, 256), (1, 4), (1, 2, 8),
                                                      (1, 2), (8, 1024), (False, True)):
        setting = {"vocab": V, "d_model": d, "n_layers": L, "n_heads": h, "n_kv": kv, "d_ff": ff,
                   "tied": tied, "seq_len": 16, "rope_theta": 1e4, "seed": 0}
        if d % h or (d // h) % 2 or h % kv:
            continue
        assert w.BUDGET.total(setting) == count_parameters(w.config_of(setting) if
                                                           w.BUDGET.total(setting) <= w.MAX_PARAMS
                                                           else _cfg(setting)).total


def _cfg(s):
    from backend.reference.config import ModelConfig
    return ModelConfig(vocab_size=s["vocab"], d_model=s["d_model"], n_layers=s["n_layers"],
                       n_heads=s["n_heads"], n_kv_heads=s["n_kv"], d_ff=s["d_ff"],
                       max_seq_len=16, tie_embeddings=s["tied"])


def test_no_slider_reaches_a_model_over_the_budget():
    """Issue 17: vocab 2464 was offered and refused. Every slider that grows the model stops at
    the budget: its top is accepted (the live check's own count) and one step more is refused."""
    import random

    from backend.compute import parity as w

    labels = {p.name: p.label for p in w.SPEC.params}
    rng = random.Random(17)
    grown = ("n_layers", "d_model", "n_kv", "d_ff", "vocab")
    checked = 0
    for _ in range(60):
        s = w.SPEC.defaults()
        s.update(n_layers=rng.randint(1, 4), d_model=rng.choice(range(16, 257, 16)),
                 d_ff=rng.choice(range(8, 1025, 4)), vocab=rng.choice(range(16, 4097, 16)),
                 tied=rng.random() < 0.5)
        s["n_heads"] = rng.choice(w.head_counts(s["d_model"]))
        s["n_kv"] = rng.choice(w.kv_counts(s["n_heads"]))
        try:
            w.config_of(w.SPEC.resolve(s))
        except w.ParamError:
            continue  # a setting the page cannot reach: some slider would have stopped
        for name in grown:
            p = w.SPEC.param(name)
            eff = p.effective(s, labels)
            legal = [v for v in (eff["allowed"] or range(int(eff["min"]), int(eff["max"]) + 1))
                     if eff["min"] <= v <= eff["max"] and (v - p.min) % (p.step or 1) == 0
                     and (name != "d_model" or s["n_heads"] in w.head_counts(v))]
            top = max(legal)
            w.config_of(w.SPEC.resolve({**s, name: top}))  # accepted
            checked += 1
            over = top + (p.step or 1)
            if over <= p.max and eff["allowed"] is None and name != "d_model":
                with pytest.raises(w.ParamError) as err:
                    w.config_of(w.SPEC.resolve({**s, name: over}))
                assert "1,000,000" in str(err.value)
    assert checked > 100
    # the reviewer's case: the vocabulary slider stops below the budget, with words
    s = {**w.SPEC.defaults(), "d_model": 192, "d_ff": 512, "n_layers": 2}
    eff = w.SPEC.param("vocab").effective(s, labels)
    assert eff["max"] < 2464 and "at most 1,000,000 parameters" in eff["why"][0]
    w.config_of(w.SPEC.resolve({**s, "vocab": eff["max"]}))


def test_unknown_fault_or_dtype_is_a_400_naming_it(client):
    assert "break one piece" in error(client, fault="attention")
    assert "number format" in error(client, dtype="float16")


@pytest.mark.parametrize("fault", ["rope_layout", "repeat_kv", "causal_mask"])
def test_each_break_shows_in_float32(client, fault):
    out = post(client, fault=fault)
    v = out["values"]
    assert v["ok"] is False and v["max_abs_logit_diff"] > 100 * LOGIT_TOLERANCE
    assert len(v["position_logit_diff"]) == 16 and len(v["layer_hidden_diff"]) == 2
    assert "broken" in out["summary"] and "positions are outside" in out["summary"]
    assert out["figure"]["layout"]["title"]["text"].endswith("outside tolerance")


def test_the_upcast_break_needs_bfloat16(client):
    assert post(client, fault="norm_upcast")["values"]["ok"] is True
    assert post(client, fault="norm_upcast", dtype="bfloat16")["values"]["ok"] is False
    assert post(client, dtype="bfloat16")["values"]["max_abs_logit_diff"] == 0.0


def test_threads_give_the_serial_answers():
    """Hooks and seeds live on each request's private pair: four threads at once, each with its
    own fault, get exactly what one thread gets (gunicorn serves requests on threads)."""
    from concurrent.futures import ThreadPoolExecutor

    from backend.compute import REGISTRY

    w = REGISTRY["parity"]
    faults = ["none", "rope_layout", "repeat_kv", "causal_mask"]
    run = lambda f: w.compute(w.SPEC.resolve({"fault": f, "seq_len": 8}))["values"]  # noqa: E731
    serial = {f: run(f) for f in faults}
    with ThreadPoolExecutor(4) as pool:
        threaded = dict(zip(faults, pool.map(run, faults * 1)))
    for f in faults:
        assert threaded[f]["position_logit_diff"] == serial[f]["position_logit_diff"]
        assert threaded[f]["layer_hidden_diff"] == serial[f]["layer_hidden_diff"]


def test_exact_zeros_are_marked_and_labelled(client):
    """An exact 0 has no place on the log axis: drawn at the floor, written '0', named in the legend."""
    from backend.compute.parity import FLOOR

    fig = post(client, fault="rope_layout")["figure"]
    zero = [t for t in fig["data"] if t.get("name", "").startswith("exact 0")]
    assert len(zero) == 1 and zero[0]["x"] == [0] and zero[0]["y"] == [FLOOR] and zero[0]["text"] == ["0"]
    assert len(fig["data"][3]["y"]) == 2  # the layer bars keep their place
    clean = post(client, fault="repeat_kv")["figure"]  # no exact zero at position 0: no such trace
    assert not any(t.get("name", "").startswith("exact 0") for t in clean["data"])


def test_phone_layout_puts_the_legend_below_the_axis_title():
    from backend.compute import parity as w

    fig = w.compute(w.SPEC.resolve({}))["figure"]
    narrow = fig["narrow"]
    assert narrow["legend"]["y"] < narrow["yaxis"]["domain"][0] - 0.1
    assert narrow["yaxis2"]["domain"][1] < narrow["legend"]["y"] - 0.12
    assert fig["layout"]["yaxis"]["automargin"] is True


def test_summary_says_why_a_break_does_nothing(client):
    assert "single pair" in post(client, fault="rope_layout", d_model=16, n_heads=8)["summary"]
    assert "same order" in post(client, fault="repeat_kv", n_kv=1)["summary"]
    assert "bfloat16" in post(client, fault="norm_upcast")["summary"]
