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
        rot = torch.tensor([[math.cos(k * w), math.sin(k * w)], [-math.sin(k * w), math.cos(k * w)]],
                           dtype=torch.float64)
        # (sin, cos)(pos + k) = R_k (sin, cos)(pos), the same R_k for every pos
        torch.testing.assert_close(pe[k:, 2 * i : 2 * i + 2], pe[:-k, 2 * i : 2 * i + 2] @ rot.T, atol=1e-6, rtol=0)


def test_the_rows_llm101_prints():
    # LLM-101 §2 prints the first four numbers of positions 0, 1, 2 and 50 at d = 8, to 3 decimals.
    printed = {0: [0.0, 1.0, 0.0, 1.0], 1: [0.841, 0.54, 0.1, 0.995],
               2: [0.909, -0.416, 0.199, 0.98], 50: [-0.262, 0.965, -0.959, 0.284]}
    pe = sinusoidal_encoding(51, 8)
    for pos, row in printed.items():
        assert [round(v, 3) + 0.0 for v in pe[pos, :4].tolist()] == row


def test_rows_at_positions_equal_the_table():
    from backend.reference.sinusoidal import sinusoidal_at

    positions = torch.tensor([0, 3, 77, 1999])
    torch.testing.assert_close(sinusoidal_at(positions, 12), sinusoidal_encoding(2000, 12)[positions],
                               atol=0, rtol=0)


def test_matches_the_per_dimension_loop_of_the_encoder_decoder_handout():
    # 004 §9.3 fills the table one dimension at a time: sin for even i, cos for odd i,
    # frequency 10000^(2*(i//2)/d). Written independently here in numpy float64.
    import numpy as np

    T, d = 40, 10
    expected = np.zeros((T, d))
    for i in range(d):
        f = np.sin if i % 2 == 0 else np.cos
        expected[:, i] = f(np.arange(T) / np.power(1e4, 2 * (i // 2) / d))
    assert np.abs(sinusoidal_encoding(T, d).numpy() - expected).max() < 1e-6
