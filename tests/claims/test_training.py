"""Every number and qualitative sentence of docs/chapters/training.md (and its Appendix B part,
docs/chapters/_compute/training.md), asserted over the values the page computes."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from backend.compute import REGISTRY

W = REGISTRY["train_live"]
ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "docs/chapters/training.md"


@pytest.fixture(scope="module")
def f():
    """The values a value() macro of the page reads: the default answer plus the facts."""
    params = W.SPEC.defaults()
    return {**W.compute(params)["values"], **W.facts(params)}


def test_the_tiny_model_and_its_texts(f):
    """'width 32, 2 layers, reading bytes'; 'trains on ... bytes ... checked on ... of other sentences'."""
    assert f["base"]["d_model"] == 32 and f["base"]["n_layers"] == 2
    assert W.N_TRAIN_SENTENCES == 200 and W.N_SMALL_SENTENCES == 20  # Appendix B's 200, 40, 20
    from backend.bookmodel.load import heldout_sentences
    assert len(heldout_sentences()) - W.N_TRAIN_SENTENCES == 40
    assert f["train_bytes"] > 4 * f["val_bytes"] > 0
    assert f["n_params"] < 40_000  # 'a model of ... parameters ... in a few seconds'


def test_the_diagram_is_drawn_with_the_book_models_sizes():
    """The caption: 16 windows of 128 tokens, a 4,096-token vocabulary, 1,600 steps, clip 1."""
    from backend.bookmodel.train import TrainConfig

    tc = TrainConfig()
    text = CHAPTER.read_text()
    config = re.search(r"name: training_loop\nconfig: \{(.*)\}", text).group(1)
    assert config == (f"batch: {tc.batch_size}, seq_len: {tc.seq_len}, vocab: {tc.vocab_size}, "
                      f"clip: {tc.grad_clip}, steps: {tc.steps}")
    assert (f"({tc.batch_size} windows of {tc.seq_len} tokens, a {tc.vocab_size:,}-token "
            f"vocabulary, {tc.steps:,} steps)") in text


def test_off_by_one_loss_near_zero_worse_than_uniform_and_repeats(f):
    """'The buggy run's loss is near zero ... Scored on the real task ... it is worse than a model
    that guesses uniformly ... what it generates is one byte over and over.'"""
    bug, ok = f["unshifted"], f["default"]
    assert bug["final_train"] < 0.1 and bug["final_train"] < ok["final_train"] / 20
    assert bug["val_next_byte"] > f["uniform_loss"]
    assert len(set(bug["continuation"])) == 1 and len(bug["continuation"]) == W.N_NEW
    # 'The right model's continuation is not good English ... made of the text's own pieces'
    train_text = " ".join(__import__("backend.bookmodel.load", fromlist=["x"]).heldout_sentences()[:200])
    words = ok["continuation"].split()
    assert words and all(f" {w} " in train_text for w in words)
    assert ok["val_next_byte"] == pytest.approx(ok["final_val"])  # the right run's objective is the task


def test_step0_is_about_ln_v_and_larger_sigma_is_confident_and_costly(f):
    init = f["init"]
    assert [row["std"] for row in init] == [0.02, 0.2, 1.0]
    assert init[0]["loss"] == pytest.approx(math.log(256), abs=0.05)  # 'about ln |Sigma|'
    assert init[0]["logit_std"] < 0.2  # 'its logits are small ... nearly flat'
    stds = [row["logit_std"] for row in init]
    losses = [row["loss"] for row in init]
    assert stds == sorted(stds) and losses == sorted(losses)  # larger sigma: larger, costlier
    assert init[2]["loss"] > 2.5 * math.log(256)  # 'cost far more than a flat guess'
    # 'it costs steps': same steps from sigma = 1 end worse
    assert f["big_init"]["final_val"] > f["default"]["final_val"] + 0.2
    assert f["base"]["big_init"] == 1.0 and f["base"]["init_std"] == 0.02
    # Check yourself: 'Your step-0 loss is 16 nats'
    assert round(init[2]["loss"]) == 16


def test_residual_scaling_keeps_the_stream_from_growing_with_depth(f):
    g = f["growth"]
    assert [row["n_layers"] for row in g] == [2, 8, 32]
    unscaled = [row["unscaled"] for row in g]
    assert unscaled == sorted(unscaled) and unscaled[-1] > 2.5  # grows with depth
    assert all(abs(row["scaled"] - 1) < 0.05 for row in g)  # 'keeps the total roughly fixed'


def test_the_recipe_matches_the_book_model_and_llama2():
    """'decay on the matrices only, beta = (0.9, 0.95) and lambda = 0.1, as the book's model';
    'a tenth of eta'; 'clip at norm 1'."""
    import inspect

    from backend.bookmodel.train import TrainConfig
    from backend.reference import training as tr

    rc, tc = tr.RunConfig(), TrainConfig()
    assert rc.weight_decay == tc.weight_decay == 0.1 and rc.min_lr_ratio == tc.min_lr_ratio == 0.1
    assert rc.grad_clip == tc.grad_clip == 1.0
    assert inspect.signature(tr.make_optimizer).parameters["betas"].default == (0.9, 0.95)
    assert "betas=(0.9, 0.95)" in inspect.getsource(__import__("backend.bookmodel.train",
                                                               fromlist=["x"]))


def test_every_break_costs_and_nothing_diverges(f):
    """'Every change costs.' 'This small model does not diverge.'"""
    base = f["default"]["final_val"]
    for name in ("no_warmup", "no_clipping", "big_init", "high_lr"):
        assert f[name]["final_val"] > base, name
        assert f[name]["diverged_at"] is None and math.isfinite(f[name]["max_grad_norm"])
    assert base < f["unigram_loss"]


def test_high_lr_stays_near_the_frequency_only_loss_and_says_spaces(f):
    """'never gets far below it ... its greedy continuation is spaces, the commonest byte'."""
    r = W.run(W.BASE.replace(lr=f["base"]["high_lr"]))
    assert min(r["val_loss"][1:]) > f["unigram_loss"] - 0.1
    assert set(f["high_lr"]["continuation"]) == {" "} and f["commonest_byte"] == ord(" ")


def test_overfitting_table(f):
    """'After step ... the training loss keeps falling and the validation loss rises.'"""
    o = f["overfit"]
    assert o["steps"][5] == 100 and o["steps"][15] == 300 and o["steps"][-1] == o["n_steps"] == 400
    assert o["train_bytes"] < f["train_bytes"] / 5
    best = o["steps"].index(o["best_step"])
    assert 100 < o["best_step"] < 300
    assert o["train"][best:] == sorted(o["train"][best:], reverse=True)  # keeps falling
    assert o["final_val"] > o["best_val"] + 0.3  # rises
    assert o["final_train"] < o["best_train"] - 0.5
    assert o["train"][0] == pytest.approx(o["val"][0], abs=0.05)


def test_perplexity_and_bits(f):
    assert f["e4"] == pytest.approx(54.6, abs=0.1) and round(f["e4"]) == 55
    assert round(f["e3"]) == 20
    d = f["default"]
    assert d["val_bits_per_byte"] == pytest.approx(d["final_val"] / math.log(2))
    assert d["val_perplexity"] == pytest.approx(math.exp(d["final_val"]))


def test_the_book_models_curve(f):
    """'roughly that 4-nat picture'; 'far below the tiny byte model's'; 'more parameters, and
    about ... times as much training text'; 'Its two curves stay close together all the way'."""
    from backend.bookmodel.load import metrics

    b = f["book"]
    assert 3.9 < b["final_val"] < 4.3
    assert b["val_bits_per_byte"] < f["default"]["val_bits_per_byte"] / 2
    assert b["params"] > 30 * f["n_params"] and f["book_text_ratio"] > 100
    assert all(abs(p["train_loss"] - p["val_loss"]) < 0.9 for p in metrics()["curve"])
    assert abs(metrics()["final"]["train_loss"] - b["final_val"]) < 0.25
    assert b["train_text_bytes"] > 100 * b["params"] / 40  # far more text than it can memorise


def test_scale_table_is_six_n_d_of_published_counts(f):
    s = f["scale"]
    from backend.reference.counting import count_parameters
    from backend.reference.presets import get_preset

    assert W.TRAINING_TOKENS == {"smollm2-135m": 2e12, "llama-3-8b": 15e12}
    for name, row in s.items():
        assert row["params"] == count_parameters(get_preset(name)).total
        assert row["flops"] == 6 * row["params"] * row["tokens"]
        assert row["tokens_per_param"] > 20 * f["chinchilla"]  # 'far more tokens per parameter'
    assert s["smollm2-135m"]["params"] == 134_515_008
    assert s["llama-3-8b"]["flops_sci"] == "7.2 × 10²³" and f["book"]["flops_sci"] == "2.6 × 10¹³"
    assert s["llama-3-8b"]["flops"] > 1e23  # Summary: 'at 10^23 and more'
    assert f["book"]["tokens_per_param"] < f["chinchilla"]


def test_appendix_b_numbers():
    """'the batch slider's top, 32 windows, bounds the work'; 'within 0.05 nats'."""
    assert W.SPEC.param("batch_size").max == 32
    text = (ROOT / "tests/compute/test_train_live.py").read_text()
    assert "abs=0.05" in text


def test_check_yourself_adamw_moves_about_lr():
    """'for a steady gradient g, m/sqrt(v) is about +-1': a constant gradient moves a weight by lr."""
    import torch

    from backend.reference import training as tr

    for g in (1e-4, 1.0, 1e3):
        p, m, v = torch.zeros(1), torch.zeros(1), torch.zeros(1)
        for t in range(1, 6):
            tr.adamw_update(p, torch.full((1,), g), m, v, t, lr=0.01, weight_decay=0.0)
        assert p.item() == pytest.approx(-0.05, rel=1e-3)
