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


def test_sliding_window_is_causal_on_its_own():
    """The docstring's promise: the window alone already hides the future (no and_masks needed).
    Oracle: the band between two torch.tril diagonals, with and without a KV cache."""
    ones = torch.ones(8, 8, dtype=torch.bool)
    band = ones.tril() & ~ones.tril(-3)  # keys i-2..i
    assert torch.equal(sliding_window_mask(8, window=3), band)
    assert torch.equal(sliding_window_mask(8, window=3), and_masks(causal_mask(8), band))
    assert torch.equal(sliding_window_mask(2, window=3, t_kv=8), band[-2:])  # the last two queries


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


# --- added with the masks chapter -----------------------------------------------------------

from backend.reference.masks import (  # noqa: E402
    left_padding_mask,
    sdpa_weights,
    weights_additive,
    weights_boolean,
    weights_zeroed_after,
)


def test_left_padding_hides_the_front():
    m = left_padding_mask(torch.tensor([3, 5]), 5)
    assert m.shape == (2, 1, 1, 5)
    assert m[0, 0, 0].tolist() == [False, False, True, True, True]
    assert m[1, 0, 0].all()


def _qk(t=5, d=8, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return torch.randn(1, 2, t, d, generator=g).to(dtype), torch.randn(1, 2, t, d, generator=g).to(dtype)


def test_boolean_and_additive_weights_match_pytorch_sdpa():
    """Oracle: F.scaled_dot_product_attention with attn_mask (bool, True = takes part) and is_causal."""
    q, k = _qk()
    scores = q @ k.transpose(-2, -1) / 8 ** 0.5  # (1, 2, T, T)
    allowed = and_masks(causal_mask(5), padding_mask(torch.tensor([4]), 5))  # (1, 1, 5, 5)
    ours_bool = weights_boolean(scores, allowed)
    ours_add = weights_additive(scores, to_additive(allowed, scores.dtype, float("-inf")))
    eye = torch.eye(5)
    theirs = F.scaled_dot_product_attention(q, k, eye, attn_mask=allowed)
    torch.testing.assert_close(ours_bool, theirs)
    torch.testing.assert_close(ours_add, theirs)
    torch.testing.assert_close(sdpa_weights(q, k, allowed), theirs, atol=0, rtol=0)
    causal = F.scaled_dot_product_attention(q, k, eye, is_causal=True)
    torch.testing.assert_close(weights_boolean(scores, causal_mask(5)), causal)


def test_a_fully_masked_row_three_ways():
    """-inf: NaN. dtype minimum: uniform over every key. PyTorch's SDPA (this CPU build): zeros."""
    q, k = _qk(t=4)
    scores = q @ k.transpose(-2, -1) / 8 ** 0.5
    allowed = and_masks(causal_mask(4), left_padding_mask(torch.tensor([3]), 4))  # row 0 sees nothing
    assert not allowed[0, 0, 0].any()
    inf = weights_additive(scores, to_additive(allowed, scores.dtype, float("-inf")))
    assert inf[..., 0, :].isnan().all() and not inf[..., 1:, :].isnan().any()
    low = weights_boolean(scores, allowed)
    torch.testing.assert_close(low[..., 0, :], torch.full((1, 2, 4), 0.25), atol=0, rtol=0)
    sdpa = sdpa_weights(q, k, allowed)
    assert (sdpa[..., 0, :] == 0).all()


def test_zeroing_after_the_softmax_breaks_the_row_sums():
    q, k = _qk()
    scores = q @ k.transpose(-2, -1) / 8 ** 0.5
    sums = weights_zeroed_after(scores, causal_mask(5)).sum(-1)  # (1, 2, T)
    assert (sums[..., :-1] < 1 - 1e-3).all()  # every row that hides something loses weight
    torch.testing.assert_close(sums[..., -1], torch.ones(1, 2))  # the last row hides nothing


def test_fp32_minimum_does_not_fit_bfloat16_either():
    facts = dtype_pitfall(dtype=torch.bfloat16)
    assert facts["sum_with_fp32_mask_dtype"] == torch.float32
    assert facts["sum_with_own_mask_dtype"] == torch.bfloat16
    assert facts["fp32_min_cast"] == float("-inf")
    assert facts["dtype_min"] == torch.finfo(torch.bfloat16).min > torch.finfo(torch.float32).min


def test_to_additive_fill():
    add = to_additive(causal_mask(3), torch.float16, float("-inf"))
    assert add.dtype == torch.float16 and add[0, 2].item() == float("-inf") and add[2, 0].item() == 0
