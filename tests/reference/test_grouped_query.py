import torch
import torch.nn.functional as F

from backend.reference.config import ModelConfig
from backend.reference.grouped_query import GroupedQueryAttention, repeat_kv
from backend.reference.masks import causal_mask
from backend.reference.model import DecoderLM
from backend.reference.rope import apply_rope, rope_cos_sin


def test_repeat_kv_is_repeat_interleave():
    x = torch.randn(2, 3, 5, 4)
    torch.testing.assert_close(repeat_kv(x, 4), x.repeat_interleave(4, dim=1), atol=0, rtol=0)


def test_repeat_kv_noop_and_the_saving_is_in_the_cache():
    """MHA pays nothing (repeat_kv returns its input); with GQA the broadcast copy is made per step,
    while the cache keeps only n_kv heads: the measured cache is n_rep times smaller."""
    x = torch.randn(1, 2, 3, 4)
    assert repeat_kv(x, 1) is x
    ids = torch.randint(0, 10, (2, 6))
    sizes = {}
    for n_kv in (8, 2):
        config = ModelConfig(vocab_size=10, d_model=64, n_layers=2, n_heads=8, n_kv_heads=n_kv, d_ff=16)
        model = DecoderLM(config).eval()
        with torch.no_grad():
            out = model(ids, cache=model.new_cache())
        assert out.cache.keys[0].shape == (2, n_kv, 6, 8)
        sizes[n_kv] = out.cache.nbytes()
    assert sizes[8] == 4 * sizes[2]


@torch.no_grad()
def test_gqa_layer_matches_sdpa_with_enable_gqa():
    for n_kv in (4, 2, 1):  # MHA, GQA, MQA
        cfg = ModelConfig(vocab_size=10, d_model=32, n_layers=1, n_heads=4, n_kv_heads=n_kv, d_ff=16)
        attn = GroupedQueryAttention(cfg)
        x = torch.randn(2, 6, 32)
        cos, sin = rope_cos_sin(torch.arange(6).expand(2, 6), cfg.d_head)
        out, w = attn(x, cos, sin, causal_mask(6))
        assert w.shape == (2, 4, 6, 6)
        q = attn.q_proj(x).view(2, 6, 4, 8).transpose(1, 2)
        k = attn.k_proj(x).view(2, 6, n_kv, 8).transpose(1, 2)
        v = attn.v_proj(x).view(2, 6, n_kv, 8).transpose(1, 2)
        q, k = apply_rope(q, k, cos, sin)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        ref = attn.o_proj(ref.transpose(1, 2).reshape(2, 6, 32))
        torch.testing.assert_close(out, ref, atol=1e-6, rtol=0)


def test_kv_projection_shrinks_with_n_kv():
    sizes = {}
    for n_kv in (8, 2, 1):
        cfg = ModelConfig(vocab_size=10, d_model=64, n_layers=1, n_heads=8, n_kv_heads=n_kv, d_ff=16)
        sizes[n_kv] = GroupedQueryAttention(cfg).k_proj.weight.shape
    assert sizes == {8: (64, 64), 2: (16, 64), 1: (8, 64)}
