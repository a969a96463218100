"""Mean-pooling K/V heads (GQA from MHA), against an oracle built with repeat_interleave and
PyTorch's fused attention; the measured KV cache against hand arithmetic."""

import torch
import torch.nn.functional as F

from backend.reference.config import ModelConfig
from backend.reference.kv_cache import kv_cache_bytes
from backend.reference.kv_sharing import (
    kv_bytes_per_token,
    mean_pool_kv,
    relative_error,
    run_layer,
    seeded_attention,
    word_vectors,
)
from backend.reference.rope import apply_rope, rope_cos_sin

CFG = ModelConfig(vocab_size=1, d_model=64, n_layers=1, n_heads=8, d_ff=1)


def oracle(mha, x, n_kv):
    """Group means by hand (heads j*n_rep .. belong to group j), attention by F.sdpa."""
    B, T, d = x.shape
    h, dh, n_rep = 8, 8, 8 // n_kv
    q = (x @ mha.q_proj.weight.T).view(B, T, h, dh).transpose(1, 2)
    kv = []
    for proj in (mha.k_proj, mha.v_proj):
        full = (x @ proj.weight.T).view(B, T, h, dh).transpose(1, 2)  # (B, h, T, dh)
        kv.append(full.view(B, n_kv, n_rep, T, dh).mean(2))  # linear, so pooling W = pooling outputs
    cos, sin = rope_cos_sin(torch.arange(T).expand(B, T), dh)
    q, k = apply_rope(q, kv[0], cos, sin)
    out = F.scaled_dot_product_attention(q, k, kv[1], is_causal=True, enable_gqa=True)
    return out.transpose(1, 2).reshape(B, T, d) @ mha.o_proj.weight.T


@torch.no_grad()
def test_mean_pooled_layer_matches_oracle():
    mha = seeded_attention(CFG, seed=3)
    x = torch.randn(2, 6, 64)
    for n_kv in (8, 4, 2, 1):
        gqa = mean_pool_kv(mha, CFG, n_kv)
        assert gqa.k_proj.weight.shape == (n_kv * 8, 64)
        y, _ = run_layer(gqa, x, CFG.replace(n_kv_heads=n_kv))
        torch.testing.assert_close(y, oracle(mha, x, n_kv), atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_no_pooling_means_no_change_and_pooling_means_change():
    mha = seeded_attention(CFG)
    x = word_vectors(["a", "b", "a", "c"], 64)
    y, _ = run_layer(mha, x, CFG)
    y8, _ = run_layer(mean_pool_kv(mha, CFG, 8), x, CFG)
    # exact: the same operations on the same numbers, on the same thread, in one test (the
    # widget, whose multi-head run is cached from whichever thread count ran it, reuses it)
    assert relative_error(y8, y) == 0.0
    y1, _ = run_layer(mean_pool_kv(mha, CFG, 1), x, CFG.replace(n_kv_heads=1))
    assert relative_error(y1, y) > 0.1


def test_seeded_weights_give_unit_variance_projections():
    cfg = ModelConfig(vocab_size=1, d_model=1024, n_layers=1, n_heads=8, d_ff=1)
    layer = seeded_attention(cfg)
    x = torch.randn(512, 1024, generator=torch.Generator().manual_seed(1))  # not the weights' seed
    with torch.no_grad():
        assert abs(layer.q_proj(x).var().item() - 1) < 0.05  # 0.5M samples: sd of var ~ 0.002


def test_word_vectors_repeat_per_word():
    x = word_vectors(["the", "keys", "the"], 16)
    assert x.shape == (1, 3, 16) and torch.equal(x[0, 0], x[0, 2]) and not torch.equal(x[0, 0], x[0, 1])


def test_measured_cache_bytes_equal_hand_arithmetic():
    for n_kv in (8, 2, 1):
        cfg = CFG.replace(n_kv_heads=n_kv)
        layer = seeded_attention(cfg)
        got = kv_bytes_per_token(layer, torch.randn(1, 5, 64), cfg)
        assert got == 2 * n_kv * 8 * 2  # K and V, n_kv heads of 8 numbers, 2 bytes in bf16
        assert got == kv_cache_bytes(1, n_kv, 8, 1)
