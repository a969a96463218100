import math

import torch

from backend.reference.sinusoidal import sinusoidal_encoding


def test_formula():
    pe = sinusoidal_encoding(60, 16)
    for pos in (0, 7, 59):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert math.isclose(pe[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-6)
            assert math.isclose(pe[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-6)


def test_shift_by_k_is_one_rotation_per_pair():
    pe = sinusoidal_encoding(100, 8).double()
    k = 5
    for i in range(4):
        w = 1 / 10000 ** (2 * i / 8)
        rot = torch.tensor([[math.cos(k * w), math.sin(k * w)], [-math.sin(k * w), math.cos(k * w)]], dtype=torch.float64)
        # (sin, cos)(pos + k) = R_k (sin, cos)(pos), the same R_k for every pos
        torch.testing.assert_close(pe[k:, 2 * i : 2 * i + 2], pe[:-k, 2 * i : 2 * i + 2] @ rot.T, atol=1e-6, rtol=0)
