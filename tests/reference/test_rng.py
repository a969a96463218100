"""No request touches global random state (issue 35, item 3; code review M3): every widget's
answer leaves the global torch, numpy and Python generators as it found them, and a seeded result
computed under 8 concurrent requests is bit-identical to the same computation alone."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from backend.compute import REGISTRY
from backend.reference.residual import gradient_by_layer

TRIALS, THREADS = 20, 8


def _states():
    return (torch.get_rng_state().clone(), np.random.get_state()[1].copy(), random.getstate())


def _same(a, b) -> list[str]:
    names = ("torch", "numpy", "random")
    equal = (torch.equal(a[0], b[0]), bool((a[1] == b[1]).all()), a[2] == b[2])
    return [n for n, ok in zip(names, equal, strict=True) if not ok]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_an_answer_leaves_the_global_generators_as_it_found_them(name):
    module = REGISTRY[name]
    for params in module.SPEC.bake_points()[:3]:
        module.compute(params)  # models and caches a first answer loads, loaded
        # a state no computation would reach by seeding itself: a draw there shows
        torch.manual_seed(987_654)
        np.random.seed(4_321)
        random.seed(99)
        before = _states()
        module.compute(params)
        assert _same(before, _states()) == [], params


def test_seeded_layers_are_the_same_under_eight_concurrent_requests():
    """The residual stack's default-initialised layers, seeded per call (each thread its own
    seed), while the others build theirs: every result equals the one computed alone."""
    seeds = list(range(THREADS))
    alone = {s: gradient_by_layer(8, 64, 128, "pre_norm", seed=s) for s in seeds}
    with ThreadPoolExecutor(THREADS) as pool:
        for _ in range(TRIALS):
            got = list(pool.map(lambda s: gradient_by_layer(8, 64, 128, "pre_norm", seed=s), seeds))
            assert got == [alone[s] for s in seeds]


def test_a_model_built_once_at_warm_up_is_the_same_while_requests_draw():
    """enc_dec_masks builds its small encoder-decoder once per worker, at warm-up, while readers'
    requests are computed on other threads."""
    from backend.compute import enc_dec_masks

    enc_dec_masks._model.cache_clear()
    alone = {k: v.clone() for k, v in enc_dec_masks._model().state_dict().items()}
    with ThreadPoolExecutor(THREADS) as pool:
        for _ in range(TRIALS):
            enc_dec_masks._model.cache_clear()
            busy = [pool.submit(gradient_by_layer, 8, 64, 128, "pre_norm", seed=s)
                    for s in range(THREADS - 1)]
            built = pool.submit(enc_dec_masks._model).result()
            for f in busy:
                f.result()
            assert all(torch.equal(alone[k], v) for k, v in built.state_dict().items())
