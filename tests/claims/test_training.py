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
    assert init[0]["loss"] == pytest.approx(math.log(256), abs=0.05)  # 'about ln V'
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


def test_breaks_are_measured_over_seeds_and_only_what_holds_is_said(f):
    """'Read seed 0 alone and every change costs; read all 6 and most of that is the seed.' The
    recipe's spread; half its seeds at the byte-frequency plateau; only the large init worse on
    every seed; no clipping and lr 0.1 worse on most seeds by less than the spread; no warm-up
    worse on only half and no worse on average. (Failed on the seed-0-only table: 'Every change
    costs' was asserted on one seed, and no seeds were measured.)"""
    s, n = f["seeds"], len(W.SEEDS)
    assert s["n_seeds"] == n >= 5 and f["base"]["seeds"] == n - 1 and f["base"]["seed"] == 0
    assert W.SEEDS == tuple(range(n)) and W.BASE.seed == 0  # 'seeds 0 to 5 ... the first is its default'
    recipe = s["recipe"]["finals"]
    assert recipe[0] == f["default"]["final_val"]  # seed 0 is the widget's default run
    assert s["recipe_spread"] == max(recipe) - min(recipe) > 0.3
    assert s["recipe_plateau"] == sum(abs(x - f["unigram_loss"]) < W.PLATEAU for x in recipe)
    assert 2 <= s["recipe_plateau"] < n  # 'on 3 of the 6 seeds': some leave it, some do not
    # 'a plateau this model reaches quickly': seed 0 is near it by step 60 of 200
    r = W.run(W.BASE)
    assert r["eval_steps"][3] == 60 and abs(r["val_loss"][3] - f["unigram_loss"]) < 0.1
    for name in W.BREAK_RUNS:  # 'None of these runs diverges'
        assert all(math.isfinite(x) for x in s[name]["finals"]), name
    # seed 0: 'Read seed 0 alone and every change costs'
    assert all(s[k]["finals"][0] > recipe[0] for k in ("no_warmup", "no_clipping", "big_init", "high_lr"))
    # 'only the large initialisation costs every time, worse on all 6'
    assert s["big_init"]["worse"] == n and s["big_init"]["mean_diff"] > 0.2
    # the others are not worse on every seed, and by less than the spread between seeds
    for k in ("no_warmup", "no_clipping", "high_lr"):
        assert s[k]["worse"] < n, k
        assert s[k]["mean_diff"] < s["recipe_spread"] / 3, k  # 'well inside the spread'
    assert s["no_clipping"]["worse"] > n / 2 and s["high_lr"]["worse"] > n / 2  # 'worse on 5 and 4'
    assert s["no_warmup"]["worse"] <= n / 2 and s["no_warmup"]["mean_diff"] <= 0.02  # 'no worse on average'


def test_a_higher_rate_does_not_do_steadily_worse(f):
    """'at 0.3, the slider's top, seed 0 ends at 2.95, no worse than the 0.1 run's 3.06 to a
    hundredth of a nat'. Where the two end depends on the CPU (a high rate amplifies rounding:
    on another machine the 0.1 run ended at 2.947, the 0.3 run at 2.950), so the sentence claims
    what holds on both, not "below". (The old text,
    'at 0.1 the tiny model never gets far below it [the frequency-only loss]', read as too high a
    rate keeps you at the floor; the slider's top ends lower.)"""
    assert f["base"]["lr_top"] == W.SPEC.param("lr").max == 0.3
    assert f["lr_top"]["final_val"] <= f["high_lr"]["final_val"] + 0.01
    assert f["lr_top"]["diverged_at"] is None
    text = CHAPTER.read_text()
    assert "never gets far below" not in text and "Every change costs." not in text


def test_clipping_and_adam_agree(f):
    """'a sudden spike ... moves a weight by at most about 0.45 eta'; 'v remembers it for about
    1/(1 - beta2) = 20 steps'; 'Clipping at 1 is routine here ... 27.5% of the steps had a norm
    above 1 (the median 0.66, the largest 4.00)'. (The old text said clipping caps each step.)"""
    import torch

    from backend.reference import training as tr

    assert f["adam_spike"] == pytest.approx(0.1 / math.sqrt(0.05)) and round(f["adam_memory"]) == 20
    p, m, v = torch.zeros(1), torch.zeros(1), torch.zeros(1)
    for t in range(1, 101):  # a hundred ordinary steps, then one gradient a million times larger
        tr.adamw_update(p, torch.full((1,), 1e-3), m, v, t, lr=1.0, weight_decay=0.0)
    before = p.item()
    tr.adamw_update(p, torch.full((1,), 1e3), m, v, 101, lr=1.0, weight_decay=0.0)
    assert abs(p.item() - before) <= f["adam_spike"] + 0.01
    d, norms = f["default"], W.run(W.BASE)["grad_norm"]
    assert d["clipped_share"] == sum(x > 1 for x in norms) / len(norms)
    assert 0.15 < d["clipped_share"] < 0.5  # routine, not rare
    assert f["default_norms"]["median"] < 1 < f["default_norms"]["max"]
    text = CHAPTER.read_text()
    assert "no further than a typical one" not in text and "clipping caps each" not in text


def test_the_unshifted_run_starts_below_ln_256_because_it_copies_already(f):
    """'before any step, the untrained model scores 4.96 nats on the byte each position reads,
    against 5.54 on the next one ... its top guess is its own input at 99.9% of positions'."""
    own = f["step0_own"]
    assert own["own"] == pytest.approx(f["unshifted"]["loss_step0"])  # the buggy run's step 0
    assert own["next"] == pytest.approx(f["default"]["loss_step0"])
    assert own["own"] < f["uniform_loss"] - 0.3 < own["next"]
    assert own["own_top"] > 0.9
    assert W.BASE.model_config().tie_embeddings  # 'the output matrix is the embedding matrix'


def test_a_huge_init_ends_worse_than_uniform_with_perplexity_above_v(f):
    """'At sigma = 2 ... starts at 31.8 nats (the chart stops at 25 and says so) and ends at 5.70,
    worse than the uniform guess ... a perplexity of 298, more than the 256 bytes'."""
    h = f["huge_init"]
    assert f["base"]["huge_init"] == W.SPEC.param("init_std").max
    assert h["loss_step0"] > f["base"]["y_cap"] == W.Y_CAP
    assert h["final_val"] > f["uniform_loss"] and h["val_perplexity"] > 256
    fig = W.compute(W.SPEC.resolve({"init_std": 2.0}))["figure"]
    assert "above the chart" in fig["layout"]["annotations"][0]["text"]
    assert fig["layout"]["yaxis"]["range"][1] == W.Y_CAP
    assert "annotations" not in W.compute(W.SPEC.defaults())["figure"]["layout"]


def test_the_widget_and_the_off_by_one_table_say_the_same(f):
    """The table's 'final loss on the next byte (validation text)' is a widget output too, and
    the widget's bits and perplexity are of the next byte. (Before, the widget showed the bug's
    0.06 nats, 0.09 bits per byte, perplexity 1.1 on its own labels.)"""
    v = W.compute(W.SPEC.resolve({"break_it": "unshifted"}))["values"]
    assert v["val_next_byte"] == pytest.approx(f["unshifted"]["val_next_byte"])
    assert v["val_next_byte"] > f["uniform_loss"]
    assert v["val_bits_per_byte"] == pytest.approx(v["val_next_byte"] / math.log(2))
    assert v["val_perplexity"] > 256
    labels = {o.name: o.label for o in W.SPEC.outputs}
    assert "next byte" in labels["val_next_byte"] and "own labels" in labels["final_val"]
    assert "next-byte" in labels["val_bits_per_byte"] and "next-byte" in labels["val_perplexity"]


def test_the_widget_summary_names_which_loss_it_starts_from(f):
    """'The validation loss goes from 5.54 nats at step 0': the summary's step-0 number is the
    validation loss, and the chapter says the table's 5.53 is a training batch."""
    out = W.compute(W.SPEC.defaults())
    assert out["summary"].startswith(f"The validation loss goes from {f['default']['loss_step0']:.2f}")
    assert "on a\nbatch of training windows" in CHAPTER.read_text()


def test_the_book_models_loop_shares_the_recipe_but_not_the_init():
    """'a loop of the same shape, in its own script ... it keeps the model's own initialisation,
    every matrix at 0.02, without the smaller 0.02/sqrt(2L)'. (Before: 'exactly this loop'.)"""
    import inspect

    from backend.bookmodel import train as bt
    from backend.reference.model import DecoderLM
    from backend.reference.rng import isolated_rng

    src = inspect.getsource(bt.train)
    assert "model = DecoderLM(cfg)" in src and "init_weights" not in src
    with isolated_rng(0):
        model = DecoderLM(bt.TrainConfig().model_config())
    o = model.layers[0].attn.o_proj.weight
    assert o.std().item() == pytest.approx(0.02, rel=0.05)  # not 0.02 / sqrt(8)
    # 'the same ... a linear warm-up and a cosine to a tenth of the rate': the same schedule
    from backend.reference import training as tr
    tc = bt.TrainConfig()
    for step in (0, 50, 99, 100, 800, 1599):
        assert bt.lr_at(step, tc) == pytest.approx(
            tr.lr_at(step, tc.lr, tc.warmup_steps, tc.steps, tc.min_lr_ratio))
    assert "model(batch, labels=batch).loss" in src  # the model's own next-token loss
    assert "exactly this loop" not in CHAPTER.read_text()


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
    assert b["train_text_mb"] == round(b["train_text_bytes"] / 1e6, 1)  # 'about 4.7 million' (an estimate)


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
    # Summary: 'runs real models at 1.6 x 10^21 (SmolLM2-135M) to 7.2 x 10^23 (Llama-3-8B)'
    assert s["smollm2-135m"]["flops"] < s["llama-3-8b"]["flops"]
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
