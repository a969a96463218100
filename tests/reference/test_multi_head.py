"""MultiHeadAttention against nn.MultiheadAttention with copied weights."""

import torch
from torch import nn

from backend.reference.config import ModelConfig
from backend.reference.masks import causal_mask, padding_mask
from backend.reference.multi_head import MultiHeadAttention, merge_heads, split_heads

CFG = ModelConfig(vocab_size=10, d_model=32, n_layers=1, n_heads=4, d_ff=64)


def copy_into_torch(ours: MultiHeadAttention) -> nn.MultiheadAttention:
    theirs = nn.MultiheadAttention(CFG.d_model, CFG.n_heads, batch_first=True)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        theirs.out_proj.weight.copy_(ours.o_proj.weight)
        theirs.out_proj.bias.copy_(ours.o_proj.bias)
    return theirs


def test_split_merge_roundtrip():
    x = torch.randn(2, 5, 32)
    assert split_heads(x, 4).shape == (2, 4, 5, 8)
    torch.testing.assert_close(merge_heads(split_heads(x, 4)), x, atol=0, rtol=0)


@torch.no_grad()
def test_self_attention_with_causal_and_padding_matches_torch():
    ours = MultiHeadAttention(CFG)
    theirs = copy_into_torch(ours)
    x = torch.randn(2, 6, 32)
    lengths = torch.tensor([6, 4])
    allowed = causal_mask(6) & padding_mask(lengths, 6)  # (2, 1, 6, 6)
    out, w = ours(x, x, allowed)
    ref_out, ref_w = theirs(
        x, x, x,
        attn_mask=~causal_mask(6),  # nn.MultiheadAttention: True = blocked
        key_padding_mask=~padding_mask(lengths, 6)[:, 0, 0],
        need_weights=True, average_attn_weights=False,
    )
    torch.testing.assert_close(out, ref_out, atol=1e-6, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=0)


@torch.no_grad()
def test_cross_attention_matches_torch():
    ours = MultiHeadAttention(CFG)
    theirs = copy_into_torch(ours)
    y, memory = torch.randn(2, 3, 32), torch.randn(2, 9, 32)
    out, w = ours(y, memory)
    ref_out, ref_w = theirs(y, memory, memory, need_weights=True, average_attn_weights=False)
    assert w.shape == (2, 4, 3, 9)
    torch.testing.assert_close(out, ref_out, atol=1e-6, rtol=0)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=0)


def test_heads_do_not_change_parameter_count():
    one = MultiHeadAttention(CFG.replace(n_heads=1, n_kv_heads=1))
    many = MultiHeadAttention(CFG.replace(n_heads=8, n_kv_heads=8))
    assert sum(p.numel() for p in one.parameters()) == sum(p.numel() for p in many.parameters())
