"""scaled_dot_product_attention against PyTorch's fused F.scaled_dot_product_attention."""

import pytest
import torch
import torch.nn.functional as F

from backend.reference.attention import scaled_dot_product_attention
from backend.reference.grouped_query import repeat_kv
from backend.reference.masks import and_masks, causal_mask, padding_mask, to_additive

TOL = dict(atol=1e-6, rtol=0)


def qkv(B=2, h=4, T=7, d=16, T_kv=None):
    T_kv = T if T_kv is None else T_kv
    return torch.randn(B, h, T, d), torch.randn(B, h, T_kv, d), torch.randn(B, h, T_kv, d)


def test_unmasked_matches_sdpa():
    q, k, v = qkv()
    out, w = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **TOL)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 7), **TOL)


@pytest.mark.parametrize("additive", [False, True])
def test_causal_matches_sdpa(additive):
    q, k, v = qkv()
    mask = causal_mask(7)
    if additive:
        mask = to_additive(mask, q.dtype)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), **TOL)
    assert torch.all(w.triu(diagonal=1) == 0)  # exactly zero weight on the future


def test_padding_and_causal_match_sdpa():
    q, k, v = qkv()
    allowed = and_masks(causal_mask(7), padding_mask(torch.tensor([7, 4]), 7))  # (2, 1, 7, 7)
    out, w = scaled_dot_product_attention(q, k, v, allowed)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)  # bool: True = take part
    torch.testing.assert_close(out, expected, **TOL)
    assert torch.all(w[1, :, :, 4:] == 0)


def test_gqa_matches_sdpa_enable_gqa():
    q = torch.randn(2, 8, 5, 16)
    k, v = torch.randn(2, 2, 5, 16), torch.randn(2, 2, 5, 16)
    out, _ = scaled_dot_product_attention(q, repeat_kv(k, 4), repeat_kv(v, 4), causal_mask(5))
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(out, expected, **TOL)


def test_cross_shapes_are_not_square():
    q, k, v = qkv(T=3, T_kv=9)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 4, 3, 16) and w.shape == (2, 4, 3, 9)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **TOL)


def test_masking_before_softmax_is_renormalizing_after():
    """Masking the scores equals zeroing the unmasked weights and dividing each row by what is left:
    the hand derivation softmax(s + M)_j = e^{s_j} [j allowed] / sum_allowed e^{s_i}."""
    q, k, v = qkv(B=1, h=1, T=4)
    _, w_masked = scaled_dot_product_attention(q, k, v, causal_mask(4))
    _, w_full = scaled_dot_product_attention(q, k, v)
    zeroed = w_full * causal_mask(4)
    torch.testing.assert_close(w_masked, zeroed / zeroed.sum(-1, keepdim=True), atol=1e-6, rtol=0)
    assert (zeroed.sum(-1)[..., :-1] < 1 - 1e-3).all()  # zeroing alone leaves rows short of 1
