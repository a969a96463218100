import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from backend.reference.rope import apply_rope, rope_cos_sin, rotate, rotate_half


# The cos/sin tables are computed in float32 (as in Hugging Face), so "exactly" means to ~1e-6.


def test_dot_product_depends_only_on_offset():
    q, k = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    for offset in (0, 2, 7):
        dots = [rotate(q, m + offset) @ rotate(k, m) for m in (0, 3, 50, 1000)]
        torch.testing.assert_close(torch.stack(dots), dots[0].expand(4), atol=1e-5, rtol=1e-5)  # fp32 angles drift ~1e-7 * pos


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
