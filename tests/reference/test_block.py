import torch

from backend.reference.block import DecoderBlock, block_parameter_split
from backend.reference.config import ModelConfig
from backend.reference.residual import Stack, gradient_by_layer
from backend.reference.rope import rope_cos_sin


def test_block_split_by_hand():
    """4 d^2 attention, 3 d d_ff gated or 2 d d_ff plain, two gains of d (000 §6.5's arithmetic)."""
    assert block_parameter_split(4096, 14336, "gated") == {
        "attention": 4 * 4096 ** 2, "mlp": 3 * 4096 * 14336, "norms": 2 * 4096}
    assert block_parameter_split(4096, 14336, "plain")["mlp"] == 2 * 4096 * 14336 == 117_440_512
    gqa = block_parameter_split(4096, 14336, "gated", n_heads=32, n_kv_heads=8)
    assert gqa["attention"] == 2 * 4096 ** 2 + 2 * 4096 * 1024


def test_residual_jacobian_is_identity_plus_sublayer():
    """dy/dx = I + df/dx, checked with autograd's Jacobian on one pre-norm sublayer."""
    torch.manual_seed(0)
    stack = Stack(1, 8, 16, "pre_norm")
    f = lambda x: stack.mlps[0](stack.norms[0](x))  # noqa: E731
    x = torch.randn(8)
    jy = torch.autograd.functional.jacobian(lambda v: stack(v[None])[-1][0], x)
    jf = torch.autograd.functional.jacobian(f, x)
    torch.testing.assert_close(jy, torch.eye(8) + jf)


def test_block_with_zeroed_sublayers_is_exactly_the_identity():
    """Pre-norm: nothing normalises the residual stream, so zero sublayers leave x untouched
    even far off-centre (a post-norm block would rescale it)."""
    cfg = ModelConfig(vocab_size=10, d_model=32, n_layers=1, n_heads=4, d_ff=64)
    block = DecoderBlock(cfg)
    with torch.no_grad():
        block.mlp.down_proj.weight.zero_()
        block.attn.o_proj.weight.zero_()
    x = torch.randn(1, 5, 32) * 7 + 3
    cos, sin = rope_cos_sin(torch.arange(5)[None], cfg.d_head, cfg.rope_theta, x.dtype)
    y, _ = block(x, cos, sin)
    assert torch.equal(y, x)


def test_gradient_by_layer_top_is_one():
    g = gradient_by_layer(4, 16, 32, "pre_norm")
    assert len(g) == 5 and abs(g[-1] - 1) < 1e-6
