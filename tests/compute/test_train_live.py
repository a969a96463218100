"""The train_live widget: bad input is a 400, every setting trains within its bound, a seed
gives one curve (bit for bit on one thread count, within rounding across thread counts)."""

from __future__ import annotations

import math
import time

import pytest
import torch

from backend.compute import train_live as w
from backend.reference import training as tr
from tests.support.api import poster

URL = "/api/widgets/train_live"
post = poster(URL)


@pytest.mark.parametrize("params, label", [
    ({"lr": 0}, "'peak learning rate' must be from 0.0001 to 0.3"),
    ({"lr": 1.0}, "'peak learning rate' must be from 0.0001 to 0.3"),
    ({"lr": "fast"}, "'peak learning rate' must be a number"),
    ({"warmup_steps": 101}, "'warm-up steps' must be from 0 to 100"),
    ({"warmup_steps": 7}, "'warm-up steps' must be a multiple of 5"),
    ({"init_std": 0}, "'initial scale σ' must be from 0.002 to 2"),
    ({"batch_size": 33}, "'batch size' must be from 1 to 32"),
    ({"batch_size": 2.5}, "'batch size' must be an integer"),
    ({"break_it": "everything"}, "'break' must be one of 'none', 'no_warmup'"),
    ({"seed": -1}, "'seed' must be from 0 to 9"),
    ({"steps": 10_000}, "unknown parameter 'steps'"),
])
def test_bad_input_is_a_400_naming_the_control(client, params, label):
    r = client.post(URL, json=params)
    assert r.status_code == 400
    assert label in r.get_json()["error"]


def test_the_work_bound_is_the_spec_itself():
    """Steps and window are fixed; the batch slider's top bounds the tokens any setting trains on."""
    spec = w.SPEC
    assert {p.name for p in spec.params} == {"lr", "warmup_steps", "init_std", "batch_size",
                                             "break_it", "seed"}
    assert spec.param("batch_size").max * w.STEPS * w.SEQ_LEN == w.WORK_TOKENS == 204_800
    assert spec.cost_hint == "heavy" and spec.warm is False


def test_defaults_train_and_the_labels_bug_collapses_the_loss(client):
    v = post(client)["values"]
    assert v["loss_step0"] == pytest.approx(math.log(256), abs=0.05)
    assert v["final_val"] < v["unigram_loss"] < v["loss_step0"]
    assert v["val_bits_per_byte"] == pytest.approx(v["final_val"] / math.log(2))
    bug = post(client, break_it="unshifted")["values"]
    assert bug["final_train"] < 0.2 and bug["shifted"] is False
    assert bug["val_next_byte"] > v["final_val"]  # it learned to copy, not to predict
    # the widget reports the real task beside the run's own labels, and its bits and perplexity
    # are of the next byte (before: 0.09 bits per byte and perplexity 1.1 for the copier)
    assert bug["val_bits_per_byte"] == pytest.approx(bug["val_next_byte"] / math.log(2))
    assert bug["val_perplexity"] > 256 and v["val_next_byte"] == pytest.approx(v["final_val"])
    assert {"val_next_byte", "clipped_share"} <= {o.name for o in w.SPEC.outputs}


def test_no_warmup_disables_the_warmup_slider_and_means_zero():
    rc = w.run_config(w.SPEC.resolve({"break_it": "no_warmup", "warmup_steps": 100}))
    assert rc.warmup_steps == 0 and rc.grad_clip == w.BASE.grad_clip and rc.shifted
    assert w.run_config(w.SPEC.resolve({"break_it": "no_clipping"})).grad_clip is None
    eff = w.SPEC.param("warmup_steps").effective({"break_it": "no_warmup"})
    assert eff["disabled"] is True


def test_same_seed_same_curve_bit_for_bit_other_seed_another():
    rc = w.BASE.replace(batch_size=4, seed=3)
    train_ids, val_ids, _ = w.texts()
    a, b = tr.train(rc, train_ids, val_ids), tr.train(rc, train_ids, val_ids)
    assert a.train_loss == b.train_loss and a.val_loss == b.val_loss and a.grad_norm == b.grad_norm
    c = tr.train(rc.replace(seed=4), train_ids, val_ids)
    assert c.train_loss[0] != a.train_loss[0]


@pytest.mark.threads
def test_another_thread_count_moves_the_curve_by_rounding_only():
    rc = w.BASE.replace(batch_size=8)
    train_ids, val_ids, _ = w.texts()
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = tr.train(rc, train_ids, val_ids)
        torch.set_num_threads(2)
        two = tr.train(rc, train_ids, val_ids)
    finally:
        torch.set_num_threads(before)
    # rounding differences grow over 200 steps of a chaotic map, but stay far below the curve's
    # own moves (0.05 nats is under a tenth of its fall after step 20)
    for x, y in zip(one.val_loss, two.val_loss, strict=True):
        assert x == pytest.approx(y, abs=0.05)


@pytest.mark.timing
def test_the_largest_setting_takes_seconds_of_one_thread():
    """Batch at its top and everything that costs at its worst: seconds of CPU, not minutes."""
    params = w.SPEC.resolve({"batch_size": 32, "lr": 0.3, "init_std": 2.0, "seed": 9,
                             "break_it": "no_clipping"})
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        w.run.cache_clear()
        started = time.process_time()
        out = w.compute(params)
        spent = time.process_time() - started
    finally:
        torch.set_num_threads(before)
    assert out["values"]["final_val"] is not None
    assert spent < 15, spent  # measured about 4.5 s on a loaded 2-core machine


def test_figure_table_and_summary_describe_the_run(client):
    r = post(client)
    names = [t["name"] for t in r["figure"]["data"]]
    assert names == ["training batch", "training text", "validation text", "uniform guess, ln 256",
                     "byte frequencies only", "learning rate"]
    assert len(r["figure"]["data"][0]["x"]) == w.STEPS
    assert r["figure"]["data"][2]["x"] == list(range(0, w.STEPS + 1, 20))
    assert len(r["table"]["rows"]) == 11 and "bits per next byte" in r["summary"]
    assert r["summary"].startswith("The validation loss goes from")  # not 'Training loss'
    assert "annotations" not in r["figure"]["layout"]  # nothing off the chart at the defaults
    assert r["values"]["continuation"] in r["summary"]


def test_a_loss_above_the_charts_top_is_announced():
    """sigma = 2 starts near 32 nats: the chart keeps its top at Y_CAP and says what is above it."""
    r = w.compute(w.SPEC.resolve({"init_std": 2.0}))
    top = max(r["figure"]["data"][0]["y"])
    assert top > w.Y_CAP == r["figure"]["layout"]["yaxis"]["range"][1]
    note = r["figure"]["layout"]["annotations"][0]["text"]
    assert f"{top:.1f}" in note and "above the chart" in note
    assert "above 256" in r["summary"]  # its perplexity ends past a uniform guess's


def test_a_diverging_run_stops_and_says_so():
    """A loss that is no longer finite ends the run; the answer stays plain JSON."""
    train_ids, val_ids, _ = w.texts()
    rc = w.BASE.replace(steps=5, eval_every=5, init_std=1e30)  # outside the spec: overflows
    r = tr.train(rc, train_ids, val_ids)
    assert r.diverged_at == 0 and r.train_loss == [] and r.grad_norm == []  # step 0 overflowed
