"""Pre-norm against post-norm: the picture follows the number of blocks, and its order of
operations is the book's DecoderBlock's and the residual experiment's."""

from __future__ import annotations

import pytest
import torch

from backend.diagrams import norm_placement
from backend.reference.block import DecoderBlock
from backend.reference.config import ModelConfig
from backend.reference.residual import Stack
from backend.reference.rope import rope_cos_sin


def _columns(texts):
    split = texts.index("post-norm")
    return texts[:split], texts[split:]


@pytest.mark.parametrize("n_blocks", (1, 2, 3))
def test_each_block_adds_two_sublayers_and_two_norms_to_each_column(n_blocks):
    pre, post = _columns(norm_placement.draw(n_blocks).texts())
    for col in (pre, post):
        assert col.count("Norm") == 2 * n_blocks
        assert col.count("+") == 2 * n_blocks
        assert col.count("attention") == col.count("MLP") == n_blocks
    one, two = norm_placement.draw(1), norm_placement.draw(2)
    assert two.height > one.height


def test_pre_norm_normalises_before_the_sublayer_post_norm_after_the_add():
    pre, post = _columns(norm_placement.draw(1).texts())
    ops = lambda col: [t for t in col if t in ("Norm", "attention", "MLP", "+")]  # noqa: E731
    assert ops(pre) == ["Norm", "attention", "+", "Norm", "MLP", "+"]
    assert ops(post) == ["attention", "+", "Norm", "MLP", "+", "Norm"]
    assert "x + f(Norm(x))" in pre and "Norm(x + f(x))" in post


def test_the_pre_norm_column_is_the_order_the_books_block_runs():
    """Forward hooks on the reference DecoderBlock record the order its modules run in."""
    cfg = ModelConfig(vocab_size=8, d_model=16, n_layers=1, n_heads=2, d_ff=32)
    block = DecoderBlock(cfg)
    order = []
    names = {block.attn_norm: "Norm", block.attn: "attention", block.mlp_norm: "Norm",
             block.mlp: "MLP"}
    for module, label in names.items():
        module.register_forward_hook(lambda m, i, o, label=label: order.append(label))
    x = torch.randn(1, 3, 16)
    cos, sin = rope_cos_sin(torch.arange(3)[None], cfg.d_head)  # (1, T, d_head)
    block(x, cos, sin)
    pre, _ = _columns(norm_placement.draw(1).texts())
    assert order == [t for t in pre if t in ("Norm", "attention", "MLP")]


def test_post_norm_is_the_residual_experiments_post_norm_wiring():
    """The experiment's post-norm stack calls the norm after the add: its norm's input is x + f(x)."""
    stack = Stack(1, 8, 16, "post_norm")
    seen = {}
    stack.norms[0].register_forward_hook(lambda m, i, o: seen.setdefault("in", i[0]))
    x = torch.randn(2, 8)
    with torch.no_grad():
        stack(x)
        assert torch.equal(seen["in"], x + stack.mlps[0](x))


def test_the_description_counts_the_norms_on_the_post_norm_path():
    assert "passes through 4 norms" in norm_placement.draw(2).desc


def test_out_of_range_is_refused():
    with pytest.raises(ValueError):
        norm_placement.draw(0)
