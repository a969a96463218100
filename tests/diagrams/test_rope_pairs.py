"""The RoPE pairs diagram: one circle per pair, angles from the reference code."""

from __future__ import annotations

import math

import pytest
import torch

from backend.diagrams import rope_pairs
from backend.reference import rope


def test_one_circle_per_pair_follows_the_width():
    for dims in (4, 8, 16):
        c = rope_pairs.draw(dims=dims)
        labels = [t for t in c.texts() if t.startswith("pair ")]
        assert labels == [f"pair {i}" for i in range(dims // 2)]
        assert "".join(c.parts).count("<circle") == dims // 2


def test_moving_the_position_turns_every_pair_in_proportion():
    a3, a30 = rope_pairs.angles(8, 3), rope_pairs.angles(8, 30)
    assert all(math.isclose(b, 10 * a) for a, b in zip(a3, a30))
    assert rope_pairs.draw(position=3).texts() != rope_pairs.draw(position=30).texts()


@pytest.mark.parametrize("dims, position", [(8, 3), (16, 100)])
def test_the_angles_are_the_ones_rope_rotates_by(dims, position):
    cos, sin = rope.rope_cos_sin(torch.tensor(position), dims, precision=torch.float64,
                                 dtype=torch.float64)
    for i, a in enumerate(rope_pairs.angles(dims, position)):
        assert math.isclose(math.cos(a), float(cos[i]), abs_tol=1e-9)
        assert math.isclose(math.sin(a), float(sin[i]), abs_tol=1e-9)
    texts = rope_pairs.draw(dims=dims, position=position).texts()
    assert f"{rope_pairs.angles(dims, position)[0]:.3g} rad" in texts


def test_the_first_pair_turns_one_radian_per_step_and_each_next_ten_times_slower_at_width_8():
    texts = rope_pairs.draw(dims=8, position=3).texts()
    assert [t for t in texts if t.startswith("ω")] == ["ω = 1", "ω = 0.1", "ω = 0.01", "ω = 0.001"]


def test_odd_or_too_wide_is_refused():
    for dims in (7, 18):
        with pytest.raises(ValueError):
            rope_pairs.draw(dims=dims)
