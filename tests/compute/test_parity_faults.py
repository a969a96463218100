"""The parity widget's faults (backend/compute/parity_faults.py): each breaks its one piece from
outside the reference model, and only in the model it is given."""

from __future__ import annotations

import pytest
import torch

from backend.compute import parity_faults as pf
from backend.reference import grouped_query, masks, model
from backend.reference.config import ModelConfig
from backend.reference.grouped_query import GroupedQueryAttention
from backend.reference.model import DecoderLM
from backend.reference.norms import RMSNorm
from backend.reference.rng import isolated_rng
from backend.reference.rope import apply_rope, rope_cos_sin

CFG = ModelConfig(vocab_size=32, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48,
                  max_seq_len=8)


def _pair(fault: str):
    """A clean model and a broken one holding the very same weights."""
    with isolated_rng(0):
        clean = DecoderLM(CFG).eval()
    broken = DecoderLM(CFG).eval()
    broken.load_state_dict(clean.state_dict())
    return clean, pf.break_model(broken, fault)


def test_interleaved_layout_is_the_complex_rotation_of_adjacent_pairs():
    """layout="interleaved" (the parity widget's RoPE break) rotates (x_2i, x_2i+1) as the complex
    number x_2i + i x_2i+1 times e^{i pos w_i}: Meta's original formulation. Position 0 is the identity."""
    torch.manual_seed(0)
    d, T = 8, 5
    q = torch.randn(1, 2, T, d, dtype=torch.float64)
    pos = torch.arange(T)[None]  # (1, T)
    cos, sin = rope_cos_sin(pos, d, 10000.0, torch.float64, torch.float64)
    rq, _ = pf.apply_rope_interleaved(q, q, cos, sin)
    w = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    z = torch.view_as_complex(q.reshape(1, 2, T, d // 2, 2).contiguous())
    expected = torch.view_as_real(z * torch.polar(torch.ones_like(w), pos[0, :, None] * w)).flatten(-2)
    torch.testing.assert_close(rq, expected)
    assert torch.equal(rq[:, :, 0], q[:, :, 0])
    half, _ = apply_rope(q, q, cos, sin)
    assert not torch.allclose(half[:, :, 1:], rq[:, :, 1:])  # the two layouts disagree after position 0


def test_tiled_heads_are_repeat_where_the_model_repeats_interleave():
    kv = torch.arange(2.0).view(1, 2, 1, 1)  # head j holds the number j
    assert pf.tiled_repeat_kv(kv, 4).flatten().tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    assert grouped_query.repeat_kv(kv, 4).flatten().tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_the_unmasked_mask_has_the_causal_masks_shape_and_hides_nothing():
    assert pf.causal_mask_off(3, 5).shape == masks.causal_mask(3, 5).shape
    assert pf.causal_mask_off(3, 5).all()


@pytest.mark.parametrize("fault", pf.FAULTS[1:])
def test_each_fault_swaps_one_kind_of_piece_for_a_stateless_subclass(fault):
    piece, broken = pf.SWAPS[fault]
    clean, model_ = _pair(fault)
    swapped = [m for m in model_.modules() if type(m) is broken]
    assert swapped and len(swapped) == sum(type(m) is piece for m in clean.modules())
    assert not any(type(m) is piece for m in model_.modules())
    assert issubclass(broken, piece)
    # nothing but a forward of its own: the weights and their names are the model's
    assert set(vars(broken)) <= {"forward", "__doc__", "__module__", "__qualname__"}
    assert list(model_.state_dict()) == list(clean.state_dict())


@pytest.mark.parametrize("fault", pf.FAULTS[1:])
def test_a_break_shows_in_the_broken_model_only(fault):
    """The broken model's logits differ (in float32, except the upcast, which needs 16 bits); a
    model built beside it from the same classes, and the reference modules' names, are untouched."""
    clean, broken = _pair(fault)
    dtype = torch.bfloat16 if fault == "norm_upcast" else torch.float32
    clean, broken = clean.to(dtype), broken.to(dtype)
    ids = torch.randint(0, CFG.vocab_size, (2, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        before = clean(ids).logits
        assert not torch.equal(broken(ids).logits, before)
        assert torch.equal(clean(ids).logits, before)
    assert grouped_query.repeat_kv is not pf.tiled_repeat_kv and grouped_query.apply_rope is apply_rope
    assert model.causal_mask is masks.causal_mask
    assert type(clean) is DecoderLM and type(clean.layers[0].attn) is GroupedQueryAttention
    assert type(clean.norm) is RMSNorm


def test_none_leaves_the_model_as_it_is_and_an_unknown_fault_is_refused():
    m = DecoderLM(CFG)
    broken = {b for _, b in pf.SWAPS.values()}
    assert pf.break_model(m, "none") is m and not any(type(x) in broken for x in m.modules())
    with pytest.raises(ValueError, match="fault must be one of"):
        pf.break_model(m, "dropout")


def test_rebinding_a_name_the_code_does_not_read_is_an_error():
    """If the reference forward stops calling the function by that name, the break would silently
    do nothing: the module refuses to load instead."""
    with pytest.raises(TypeError, match="reads no global"):
        pf._rebound(GroupedQueryAttention.forward, rotate_half=lambda x: x)
