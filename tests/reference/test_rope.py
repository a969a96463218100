import math

import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from backend.reference.rope import apply_rope, rope_cos_sin, rotate, rotate_half

# The cos/sin tables are computed in float32 (as in Hugging Face), so "exactly" means to ~1e-6.


def test_dot_product_depends_only_on_offset():
    q, k = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    for offset in (0, 2, 7):
        dots = [rotate(q, m + offset) @ rotate(k, m) for m in (0, 3, 50, 1000)]
        # fp32 angles drift ~1e-7 * pos
        torch.testing.assert_close(torch.stack(dots), dots[0].expand(4), atol=1e-5, rtol=1e-5)


def test_rotation_preserves_norm():
    x = torch.randn(5, 64, dtype=torch.float64)
    for pos in (0, 1, 123, 4095):
        torch.testing.assert_close(rotate(x, pos).norm(dim=-1), x.norm(dim=-1), atol=1e-6, rtol=1e-6)


def test_position_zero_is_identity_and_rotate_half_is_quarter_turn():
    x = torch.randn(8)
    torch.testing.assert_close(rotate(x, 0), x)
    torch.testing.assert_close(rotate_half(rotate_half(x)), -x)


def test_theta_changes_the_angles():
    x = torch.randn(8, dtype=torch.float64)
    assert not torch.allclose(rotate(x, 5, theta=10000.0), rotate(x, 5, theta=500000.0))


def test_matches_hugging_face():
    q, k = torch.randn(2, 4, 6, 16), torch.randn(2, 2, 6, 16)
    cos, sin = rope_cos_sin(torch.arange(3, 9).expand(2, 6), 16, theta=1234.0)
    ours = apply_rope(q, k, cos, sin)
    theirs = apply_rotary_pos_emb(q, k, cos, sin)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=0, rtol=0)


def _hf_cos_sin(positions, d_head, theta):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    cfg = LlamaConfig(hidden_size=d_head * 2, num_attention_heads=2, head_dim=d_head,
                      rope_theta=theta, max_position_embeddings=1 << 20)
    emb = LlamaRotaryEmbedding(cfg)
    return emb(torch.zeros(1, dtype=torch.float32), positions[None])


def test_cos_sin_tables_match_llama_rotary_embedding():
    positions = torch.tensor([0, 1, 2, 50, 4095, 131071])
    for theta in (10000.0, 500000.0):
        ours = rope_cos_sin(positions, 64, theta)
        theirs = _hf_cos_sin(positions, 64, theta)
        for a, b in zip(ours, theirs):  # the same float32 operations: equal in every bit
            torch.testing.assert_close(a, b[0], atol=0, rtol=0)


def test_relative_similarity_is_the_dot_product_of_an_equal_pair():
    from backend.reference.rope import relative_similarity

    d = 32
    q = torch.ones(d, dtype=torch.float64)  # equal energy in every rotating pair
    for theta in (10000.0, 500000.0):
        for m, n in ((5, 5), (40, 3), (1000, 0), (1500, 20)):  # fp32 angles: small positions
            direct = rotate(q, m, theta) @ rotate(q, n, theta) / (q @ q)
            sim = relative_similarity(torch.tensor([m - n]), d, theta)[0]
            assert abs(direct.item() - sim.item()) < 1e-5


def test_wavelengths_span_two_pi_to_two_pi_theta():
    from backend.reference.rope import wavelengths

    w = wavelengths(128, 10000.0)
    assert w.shape == (64,)
    assert math.isclose(w[0].item(), 2 * math.pi)
    # slowest pair: 2*pi*theta^((d-2)/d), just under 2*pi*theta
    assert math.isclose(w[-1].item(), 2 * math.pi * 10000 ** (126 / 128), rel_tol=1e-12)

