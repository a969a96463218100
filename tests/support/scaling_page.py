"""What the scaling chapter's claims tests share: the attention_scaling widget's values across
the head-size and positions sliders (computed once a session), its draw row by row, and the
slack that compares two of its sample proportions."""

from __future__ import annotations

import math
import os
from functools import cache

import torch

from backend.compute import REGISTRY
from backend.device import device
from backend.reference import scaling

MODULE = REGISTRY["attention_scaling"]
# The page starts at seed 0. CLAIMS_SEED=n reruns every claim on another draw, to show that a
# sentence is not an accident of one seed (checked for n = 1 to 4 when the chapter was written).
SEED = int(os.environ.get("CLAIMS_SEED", "0"))
D_KS = tuple(2 ** i for i in range(11))          # the head-size slider's stops, 1 .. 1024
POSITIONS = tuple(2 ** i for i in range(1, 10))  # the positions slider's stops, 2 .. 512
# a few settings off the power-of-two stops too (the number box reaches every integer)
OFF_GRID = ((3, 5), (24, 100), (100, 8), (700, 300), (1000, 511), (64, 17))


@cache
def run(d_k: int = 64, n_positions: int = 8) -> dict:
    return MODULE.compute({"d_k": d_k, "n_positions": n_positions, "seed": SEED})


def v(d_k: int = 64, n_positions: int = 8) -> dict:
    """What `{{ value("attention_scaling", ...) }}` reads: compute's values and the build's
    facts (the handouts' experiments, the initialisation check)."""
    params = {"d_k": d_k, "n_positions": n_positions, "seed": SEED}
    return {**run(d_k, n_positions)["values"], **MODULE.facts(params)}


def slack(a: dict, b: dict, key: str) -> float:
    """3 standard errors of the difference of two sample proportions."""
    def var(x):
        p = min(max(x[key], 1 / x["n_queries"]), 1 - 1 / x["n_queries"])
        return p * (1 - p) / x["n_queries"]
    return 3 * math.sqrt(var(a) + var(b))


GRID = [(d, t) for d in D_KS for t in POSITIONS] + list(OFF_GRID)


def widget_rows(d_k, n_positions, scaled):
    """The widget's own draw, row by row (same generator order as compute)."""
    g = scaling.make_generator(SEED, device())
    scaling.dot_product_variance(d_k, MODULE.n_pairs_for(d_k), g, device())
    s, q = MODULE.queries_for(d_k, n_positions)
    scores = scaling.random_scores(d_k, n_positions, s, q, g, device())
    if scaled:
        scores = scores / math.sqrt(d_k)
    return torch.softmax(scores.double(), -1).reshape(-1, n_positions).cpu()
