"""Latent attention at decode (backend/reference/latent_attention.py): scoring the cached latents
with the key matrix taken into the query gives what rebuilding every key and value gives, and
the FLOP counts are what the two ways' einsums do (counted by PyTorch's own FlopCounterMode)."""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode

from backend.reference import latent_attention as la


def _draw(h=4, d_head=16, d_c=24, t=37, seed=0):
    g = torch.Generator().manual_seed(seed)
    def r(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)
    return r(h, d_head), r(t, d_c), r(h, d_head, d_c) / d_c ** 0.5, r(h, d_head, d_c) / d_c ** 0.5


def test_absorbed_equals_expanded():
    for seed in range(3):
        args = _draw(seed=seed)
        torch.testing.assert_close(la.absorbed(*args), la.expanded(*args), rtol=1e-12, atol=1e-12)


def test_the_two_ways_flops_are_what_the_code_does():
    h, d_head, d_c, t = 4, 16, 24, 37
    args = _draw(h, d_head, d_c, t)
    counted = {}
    for name, fn in (("expanded", la.expanded), ("absorbed", la.absorbed)):
        with FlopCounterMode(display=False) as fc:
            fn(*args)
        counted[name] = fc.get_total_flops()
    want = la.step_flops(h, d_head, d_c, t)
    assert counted == {"expanded": want.expanded, "absorbed": want.absorbed}
    assert want.absorbed < want.expanded
