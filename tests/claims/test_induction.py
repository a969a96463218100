"""Every qualitative sentence of the induction-heads section of docs/chapters/attention-maps.md
("Copying: induction heads in a real trained Llama"), asserted over the values the widget
computes, at the settings the text names and across the seeds it invites the reader to try.
Thresholds are what the words mean ("more than triple", "hardly changes": under half a nat of
13, "nearly where it was": under a fifth of a nat), not windows around today's output."""

from __future__ import annotations

import json
import math
from functools import cache

import pytest

from backend.compute import induction_lab as lab


@cache
def _run(key: str) -> dict:
    return lab.compute(lab.SPEC.resolve(json.loads(key)))["values"]


def run(**params):
    return _run(json.dumps(params, sort_keys=True))


def test_the_model_is_the_decoder_part_ii_builds():
    """'30 layers of 9 query heads sharing 3 key/value heads'"""
    from backend.smollm2.load import model

    c = model()[0].config
    assert (c.n_layers, c.n_heads, c.n_kv_heads) == (30, 9, 3)
    assert run()["heads"] == 270


def test_the_first_copy_is_worse_than_an_even_guess_and_the_second_is_copied():
    """'worse than the 10.8 of an even guess'; 'the loss falls to 2.1'"""
    v = run()
    assert v["uniform_loss"] == pytest.approx(math.log(49152))
    assert v["loss_first"] > v["uniform_loss"]
    assert v["loss_second"] < v["loss_first"] / 4


def test_few_heads_score_over_a_half_and_the_strongest_is_named():
    """'the strongest is layer 18, head 6 ... only 4 heads score over 0.5'"""
    v = run()
    scores = v["induction_scores"]
    best = max((s, layer, head) for layer, row in enumerate(scores) for head, s in enumerate(row))
    assert (best[1], best[2]) == (v["top_induction"]["layer"], v["top_induction"]["head"])
    assert v["induction_heads"] <= 10  # "only": a handful of 270


def test_knocking_out_four_induction_heads_more_than_triples_the_second_copys_loss():
    """'Four heads out of 270 more than triple the second copy's loss, and the first copy ...
    hardly changes; four heads drawn at random leave the second copy's loss nearly where it was'"""
    v = run(ablate=4)
    assert v["loss_second_ablated"] > 3 * v["loss_second"]
    assert abs(v["loss_first_ablated"] - v["loss_first"]) < 0.5
    r = run(ablate=4, rank="random")
    assert abs(r["loss_second_ablated"] - r["loss_second"]) < 0.2


def test_one_head_already_raises_the_loss_and_more_heads_raise_it_further():
    """The table's rows: none < the strongest < the 4 strongest."""
    assert run()["loss_second"] < run(ablate=1)["loss_second_ablated"] < \
        run(ablate=4)["loss_second_ablated"]


def test_previous_token_heads_matter_even_more_and_the_strongest_sits_below():
    """'The previous-token heads matter even more' (the table's seed); 'The strongest ... sits
    below the strongest induction head'"""
    v = run()
    assert run(ablate=4, rank="previous_token")["loss_second_ablated"] > \
        run(ablate=4)["loss_second_ablated"]
    assert v["top_previous"]["layer"] < v["top_induction"]["layer"]


SEEDS = range(6)  # the seeds the text's "every seed we tried" names: 0 to 5


@pytest.mark.parametrize("seed", SEEDS)
def test_across_seeds_the_strongest_heads_stay_and_the_knock_out_beats_a_random_one(seed):
    """'the losses move a lot ..., but the strongest induction head and the strongest
    previous-token head stay the same heads'; '(... at none of the seeds 0 to 5 as far up as
    the four strongest induction heads do)'"""
    base, v = run(), run(seed=seed)
    assert (v["top_induction"]["layer"], v["top_induction"]["head"]) == \
        (base["top_induction"]["layer"], base["top_induction"]["head"])
    assert (v["top_previous"]["layer"], v["top_previous"]["head"]) == \
        (base["top_previous"]["layer"], base["top_previous"]["head"])
    assert run(seed=seed, ablate=4)["loss_second_ablated"] > \
        run(seed=seed, ablate=4, rank="random")["loss_second_ablated"]


def test_a_random_draw_can_move_it_further_at_seed_5_even_down_and_the_losses_move_a_lot():
    """'at other seeds a random draw can move it further, at seed 5 even down'; 'the losses move
    a lot (at some seeds the model copies poorly)'"""
    def moved(s):
        return run(seed=s, ablate=4, rank="random")["loss_second_ablated"] - run(seed=s)["loss_second"]

    assert any(abs(moved(s)) > abs(moved(0)) for s in SEEDS if s)
    assert moved(5) < 0
    second = [run(seed=s)["loss_second"] for s in SEEDS]
    assert max(second) > 2 * min(second)


@pytest.mark.parametrize("seed", SEEDS)
def test_longer_copies_cost_more_at_every_seed(seed):
    """'It costs more at each of the seeds 0 to 5, by very different amounts'"""
    assert run(seed=seed, n_tokens=100)["loss_second"] > run(seed=seed)["loss_second"]


def test_the_tokens_are_drawn_from_the_ids_the_text_names():
    from backend.reference.induction import repeated_random_tokens

    lo, hi = run()["token_ids"]
    ids = repeated_random_tokens(200, 0)[0, 1:]
    assert lo <= int(ids.min()) and int(ids.max()) <= hi
