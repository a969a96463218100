import torch
import torch.nn.functional as F

from backend.reference.attention import scaled_dot_product_attention
from backend.reference.masks import (
    and_masks,
    causal_mask,
    cross_mask,
    dtype_pitfall,
    or_masks,
    padding_mask,
    sliding_window_mask,
    to_additive,
)


def test_causal_is_lower_triangular():
    assert torch.equal(causal_mask(5), torch.ones(5, 5, dtype=torch.bool).tril())


def test_causal_with_cache_offset():
    # 2 new queries at positions 3 and 4, 5 keys: the last rows of the full triangle
    assert torch.equal(causal_mask(2, 5), causal_mask(5)[3:])


def test_padding_and_cross_shapes():
    lengths = torch.tensor([3, 5])
    pad = padding_mask(lengths, 5)
    assert pad.shape == (2, 1, 1, 5)
    assert pad[0, 0, 0].tolist() == [True, True, True, False, False]
    cross = cross_mask(lengths, 4, 5)
    assert cross.shape == (2, 1, 4, 5)
    assert torch.equal(cross[0, 0], pad[0, 0, 0].expand(4, 5))  # no causality across sequences


def test_sliding_window_composed_with_causal():
    m = and_masks(causal_mask(6), sliding_window_mask(6, window=3))
    assert m.sum(-1).tolist() == [1, 2, 3, 3, 3, 3]
    assert m[5].tolist() == [False, False, False, True, True, True]


def test_or_masks_prefix_lm():
    prefix = torch.zeros(5, 5, dtype=torch.bool)
    prefix[:, :2] = True  # everyone sees a 2-token bidirectional prefix
    m = or_masks(causal_mask(5), prefix)
    assert m[0].tolist() == [True, True, False, False, False]


def test_additive_is_built_in_score_dtype():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        add = to_additive(causal_mask(3), dtype)
        assert add.dtype == dtype
        assert add[0, 1].item() == torch.finfo(dtype).min and add[1, 0].item() == 0


def test_fully_masked_row_is_uniform_not_nan():
    """to_additive's promise: with finfo.min (not -inf) a row with nothing allowed is uniform, so
    the book's attention returns the plain mean of the values there instead of NaN."""
    q, k, v = torch.randn(1, 1, 3, 4), torch.randn(1, 1, 5, 4), torch.randn(1, 1, 5, 4)
    allowed = torch.ones(3, 5, dtype=torch.bool)
    allowed[1] = False  # query 1 may see nothing
    for mask in (allowed, to_additive(allowed, q.dtype)):
        out, w = scaled_dot_product_attention(q, k, v, mask)
        assert torch.equal(w[0, 0, 1], torch.full((5,), 0.2))
        torch.testing.assert_close(out[0, 0, 1], v[0, 0].mean(0))


def test_fp32_mask_on_fp16_scores_pitfall():
    facts = dtype_pitfall()
    assert facts["sum_with_fp32_mask_dtype"] == torch.float32  # silent T x T upcast
    assert facts["sum_with_fp16_mask_dtype"] == torch.float16
    assert facts["fp32_min_cast_to_fp16"] == float("-inf")  # overflow


def test_book_masks_mean_what_sdpa_means():
    """The docstring's convention (True = may attend, as in F.scaled_dot_product_attention): the
    book's masks, handed unchanged to the book's attention and to PyTorch's, select the same keys.
    One-hot values make the selected keys visible in the output."""
    q, k = torch.randn(2, 1, 4, 8), torch.randn(2, 1, 4, 8)
    v = torch.eye(4).expand(2, 1, 4, 4)
    for mask in (causal_mask(4), and_masks(causal_mask(4), padding_mask(torch.tensor([4, 2]), 4)),
                 and_masks(causal_mask(4), sliding_window_mask(4, window=2))):
        ours, w = scaled_dot_product_attention(q, k, v, mask)
        torch.testing.assert_close(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-6, rtol=0)
        assert torch.equal(ours > 0, mask.expand(2, 1, 4, 4))  # weight exactly where the mask is True
