"""Every number of handouts 000 ("The decoder-only Transformer": masks, heads, the block,
norms) and 004 ("Transformer overview and implementation": configs, parameter counts, the
encoder-decoder's masks) that the reference code can produce, produced by it. Handout 003's
numbers are in test_handout_numbers.py, whose docstring says how these tests read."""


import torch
import torch.nn.functional as F

from backend.reference.attention import scaled_dot_product_attention
from backend.reference.config import ModelConfig
from backend.reference.counting import build_on_meta, count_parameters
from backend.reference.encoder_decoder import EncoderDecoder, seq2seq_masks
from backend.reference.grouped_query import repeat_kv
from backend.reference.masks import causal_mask, dtype_pitfall, padding_mask, to_additive
from backend.reference.mlp import MLP, SwiGLU, swiglu_hidden_size
from backend.reference.model import DecoderLM, next_token_loss
from backend.reference.multi_head import split_heads
from backend.reference.norms import RMSNorm
from backend.reference.presets import PRESETS
from backend.reference.rope import rotate
from tests.support.numbers import meta_count, r

KiB, GiB = 1024, 1024**3
LLAMA2_7B, LLAMA2_13B, LLAMA2_70B, LLAMA3_8B = (
    PRESETS[n] for n in ("llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b"))


# ---------------------------------------------------------------- 000: masks, heads, block, norms


def test_000_additive_and_boolean_masks_agree():
    """000 §2.3: an additive 0/-inf-style mask and a boolean mask through masked_fill compute the same."""
    q, k, v = torch.randn(3, 1, 2, 5, 8).unbind(0)
    out_bool, _ = scaled_dot_product_attention(q, k, v, causal_mask(5))
    out_add, _ = scaled_dot_product_attention(q, k, v, to_additive(causal_mask(5), q.dtype))
    torch.testing.assert_close(out_bool, out_add, atol=0, rtol=0)


def test_000_mask_dtype_pitfall():
    """000 §2.3: a fp32 mask added to fp16 scores upcasts the T x T scores to fp32, and
    finfo(float32).min cast down to fp16 overflows to -inf."""
    facts = dtype_pitfall()
    assert facts["sum_with_fp32_mask_dtype"] == torch.float32
    assert facts["fp32_min_cast_to_fp16"] == float("-inf")


def test_000_heads_are_free():
    """000 §2.4: h heads of width d/h cost the same projection parameters as one head of width d."""
    from backend.reference.multi_head import MultiHeadAttention

    cfg = ModelConfig(vocab_size=1, d_model=512, n_layers=1, n_heads=1, d_ff=1)
    assert meta_count(MultiHeadAttention, cfg) == meta_count(MultiHeadAttention, cfg.replace(n_heads=8, n_kv_heads=8))


def test_000_mlp_holds_two_thirds():
    """000 §3: the MLP (4x wider than d) holds roughly two thirds of the parameters.
    Classic block: 8 d^2 of 12 d^2 exactly; Llama-2-7B: 66.8% of each block, 64.2% of the whole model."""
    cfg = ModelConfig(vocab_size=1, d_model=512, n_layers=1, n_heads=8, d_ff=2048)
    from backend.reference.multi_head import MultiHeadAttention

    attn, mlp = meta_count(MultiHeadAttention, cfg), meta_count(MLP, cfg)
    assert round(mlp / (attn + mlp), 3) == 0.667
    c = count_parameters(LLAMA2_7B)
    assert round(c.mlp / (c.attention + c.mlp), 3) == 0.668
    assert round(c.mlp / c.total, 3) == 0.642


def test_000_rope_relative_position():
    """000 §4: for (m, n) = (3, 1), (10, 8), (100, 98), (5, 3) the rotated q.k is identical
    (m - n = 2) and the norm is unchanged. The handout's 0.142312 / 1.821554 came from an
    unseeded torch.randn(8), so we test what they mean."""
    q, k = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    dots = [(rotate(q, m) * rotate(k, n)).sum().item() for m, n in [(3, 1), (10, 8), (100, 98), (5, 3)]]
    assert max(dots) - min(dots) < 1e-5
    assert abs(rotate(q, 3).norm().item() - q.norm().item()) < 1e-6


def test_000_rmsnorm_does_not_centre():
    """000 §6.1: x = randn(4, 16) + 3: rms(x).mean(-1) = [0.954, 0.945, 0.961, 0.938] (NOT zero),
    layer_norm mean [0.0, 0.0, 0.0, 0.0], rms(x) has unit RMS [1.0, 1.0, 1.0, 1.0]. The handout
    prints no seed, but its digits are torch.manual_seed(0)'s: reproduced exactly."""
    torch.manual_seed(0)
    x = torch.randn(4, 16) + 3.0
    for eps in (1e-6, 1e-5):  # the handout's rms has an unstated epsilon; either gives its digits
        y = RMSNorm(16, eps=eps)(x)
        assert r(y.mean(-1), 3) == [0.954, 0.945, 0.961, 0.938]
        assert r(y.pow(2).mean(-1).sqrt(), 3) == [1.0, 1.0, 1.0, 1.0]
    assert r(F.layer_norm(x, (16,)).mean(-1), 1) == [0.0, 0.0, 0.0, 0.0]


def test_000_repeat_kv_early_return_and_kv_head_order():
    """000 §6.4: repeat_kv returns early when n_rep == 1; otherwise KV head j serves query heads
    j*n_rep .. j*n_rep + n_rep - 1 (torch.repeat_interleave is the oracle). That expand itself is a
    stride-0 view is PyTorch's documented behaviour, not the book's, and is not retested here;
    the memory GQA saves is the cache's, measured in test_000_kv_cache_gqa_factor."""
    x = torch.randn(1, 8, 4, 128)
    assert repeat_kv(x, 1) is x
    torch.testing.assert_close(repeat_kv(x, 4), x.repeat_interleave(4, dim=1), atol=0, rtol=0)


def test_000_swiglu_parameter_arithmetic():
    """000 §6.5: Llama-3-8B, d = 4096, d_ff = 14336: 3 d d_ff = 176,160,768 per layer;
    a two-matrix MLP would use 2 d d_ff = 117,440,512."""
    assert meta_count(SwiGLU, LLAMA3_8B) == 176_160_768
    with torch.device("meta"):
        two = MLP(LLAMA3_8B)
    assert two.fc1.weight.numel() + two.fc2.weight.numel() == 117_440_512


def test_000_d_ff_is_not_two_thirds_of_4d_for_llama3():
    """000 §6.5 says 14336 ~ 2/3 x 4 x 4096. DOES NOT SURVIVE: 2/3 x 4 x 4096 = 10,922.7 and
    14336 = 3.5 x 4096. The 2/3 rule gives Llama-2-7B's 11008 (rounded up to a multiple of 256);
    Llama-3-8B then multiplies by 1.3 and rounds to 1024, so its SwiGLU (176M) is *larger* than a
    classic 4d two-matrix MLP (2 x 4096 x 16384 = 134M), not equal to it."""
    assert swiglu_hidden_size(4096, multiple_of=1) == 10922  # the bare 2/3 x 4d rule, before rounding
    assert swiglu_hidden_size(4096) == 11008 == LLAMA2_7B.d_ff
    assert swiglu_hidden_size(4096, multiple_of=1024, ffn_dim_multiplier=1.3) == 14336 == LLAMA3_8B.d_ff
    with torch.device("meta"):
        classic = MLP(LLAMA3_8B.replace(d_ff=4 * 4096))
    classic_weights = classic.fc1.weight.numel() + classic.fc2.weight.numel()
    assert (meta_count(SwiGLU, LLAMA3_8B), classic_weights) == (176_160_768, 134_217_728)
    assert round(176_160_768 / classic_weights, 4) == 1.3125  # Llama-3-8B's SwiGLU: 31% larger than the classic MLP
    # Llama-2-7B's: equal up to rounding to 256
    assert round(meta_count(SwiGLU, LLAMA2_7B) / classic_weights, 4) == 1.0078


def test_000_tied_embedding_size_and_logits_to_keep():
    """000 §6.6: tying shares |Sigma| x d = 128256 x 4096 = 525M parameters; logits_to_keep turns
    a T x 128256 logits tensor into 1 x 128256 (shapes from the real model on the meta device)."""
    c = count_parameters(LLAMA3_8B)
    assert c.embedding == c.lm_head == 525_336_576
    assert count_parameters(LLAMA3_8B.replace(tie_embeddings=True)).total == c.total - 525_336_576
    model = build_on_meta(LLAMA3_8B)
    ids = torch.zeros(1, 7, dtype=torch.long, device="meta")
    assert model(ids).logits.shape == (1, 7, 128256)
    assert model(ids, logits_to_keep=1).logits.shape == (1, 1, 128256)


def test_000_labels_equal_input_ids_shift_inside():
    """000 §6.6: pass labels = input_ids; the shift happens inside. Shifting them yourself as
    well trains on the token two ahead (the off-by-two)."""
    torch.manual_seed(0)
    model = DecoderLM(ModelConfig(vocab_size=13, d_model=16, n_layers=1, n_heads=2, d_ff=16)).eval()
    ids = torch.randint(0, 13, (2, 9))
    with torch.no_grad():
        out = model(ids, labels=ids)
        manual = F.cross_entropy(out.logits[:, :-1].reshape(-1, 13), ids[:, 1:].reshape(-1))
        double_shift = torch.cat([ids[:, 1:], torch.full((2, 1), -100)], dim=1)
        wrong = next_token_loss(out.logits, double_shift)
        off_by_two = F.cross_entropy(out.logits[:, :-2].reshape(-1, 13), ids[:, 2:].reshape(-1))
    torch.testing.assert_close(out.loss, manual)
    torch.testing.assert_close(wrong, off_by_two)
    assert not torch.allclose(wrong, manual)


# ---------------------------------------------------------------- 004: configs and parameter counts


def test_004_paper_config():
    """004 §2.2, §9.2 tip, §9.4: N = 6, d_model = 512, h = 8, d_k = d_v = 64, d_ff = 2048 = 4 d_model.
    Read off the encoder-decoder the preset builds (meta device) and the attention weights it returns."""
    base = PRESETS["transformer-base"]
    with torch.device("meta"):
        model = EncoderDecoder(base)
        out = model(torch.zeros(2, 5, dtype=torch.long), torch.tensor([5, 3]), torch.zeros(2, 4, dtype=torch.long))
    assert (len(model.encoder_layers), len(model.decoder_layers)) == (6, 6)
    layer = model.encoder_layers[0]
    assert tuple(layer.mlp.fc1.weight.shape) == (2048, 512) and tuple(layer.mlp.fc2.weight.shape) == (512, 2048)
    assert tuple(out.encoder_attentions[0].shape) == (2, 8, 5, 5)  # h = 8 heads
    q = split_heads(layer.self_attn.q_proj(torch.empty(2, 5, 512, device="meta")), n_heads=8)
    assert tuple(q.shape) == (2, 8, 5, 64)  # d_k = 64 per head


def test_004_llama2_table():
    """004 §7.1: d_k = 128 for 7B / 13B / 70B; totals 6.7B / 13B / 70B (exact: 6,738,415,616 /
    13,015,864,320 / 68,976,648,192); 32 / 40 / 80 layers; 70B has 8 KV heads, 8 Q heads per group.
    Heads and widths are read off the models the presets build (meta device), not the config fields."""
    totals = [count_parameters(c).total for c in (LLAMA2_7B, LLAMA2_13B, LLAMA2_70B)]
    assert totals == [6_738_415_616, 13_015_864_320, 68_976_648_192]
    assert [round(t / 1e9, 1) for t in totals] == [6.7, 13.0, 69.0]  # "70B" is 69.0B
    ids = torch.zeros(1, 3, dtype=torch.long, device="meta")
    seen = []
    for config in (LLAMA2_7B, LLAMA2_13B, LLAMA2_70B):
        model = build_on_meta(config)
        cache = model.new_cache()
        weights = model(ids, cache=cache, output_attentions=True).attentions
        _, n_kv, _, d_head = cache.keys[0].shape
        seen.append((len(model.layers), weights[0].shape[1], n_kv, d_head))
    assert seen == [(32, 32, 32, 128), (40, 40, 40, 128), (80, 64, 8, 128)]  # 70B: 64 query heads over 8 KV heads


def test_004_llama2_7b_embedding_share():
    """004 §6.2 and §6.2(4): W_emb = 32000 x 4096 ~ 131M, ~2% of 6.7B; tying would save 131M."""
    c = count_parameters(LLAMA2_7B)
    assert c.embedding == c.lm_head == 131_072_000
    assert round(100 * c.embedding / c.total, 1) == 1.9  # "~2%"
    assert c.total - count_parameters(LLAMA2_7B.replace(tie_embeddings=True)).total == 131_072_000


def test_004_llama2_7b_layer_breakdown():
    """004 §7.2: per layer RMSNorm 4K, W_Q..W_O 16.8M each, W_gate/up/down 45.1M each.
    "Per layer total ~201M", "32 layers ~6,432M", "6,432M / 6,738M ~ 95.5%": DOES NOT SURVIVE.
    The items listed add up to 202,383,360 per layer (201.3M is the 12 d^2 approximation of §7.3),
    32 layers hold 6,476,267,520, i.e. 96.1% of the model."""
    model = build_on_meta(LLAMA2_7B)
    block = model.layers[0]
    assert block.attn_norm.weight.numel() == 4096
    assert {block.attn.q_proj.weight.numel(), block.attn.o_proj.weight.numel()} == {16_777_216}
    assert {block.mlp.gate_proj.weight.numel(), block.mlp.down_proj.weight.numel()} == {45_088_768}
    c = count_parameters(LLAMA2_7B)
    assert c.per_layer == 202_383_360  # handout: ~201M
    from backend.reference.multi_head import MultiHeadAttention

    with torch.device("meta"):  # where ~201M comes from: the classic block's 12 d^2 weight matrices
        classic = [MultiHeadAttention(LLAMA2_7B), MLP(LLAMA2_7B.replace(d_ff=4 * 4096))]
    classic_weights = sum(p.numel() for m in classic for n, p in m.named_parameters() if n.endswith("weight"))
    assert classic_weights == 201_326_592
    assert 32 * c.per_layer == 6_476_267_520  # handout: ~6,432M
    assert round(100 * 32 * c.per_layer / c.total, 1) == 96.1  # handout: 95.5%; "95%+" holds


def test_004_scaling_formula_and_ratios():
    """004 §7.3: Params ~ L 12 d^2 + 2 V d; 7B -> 13B roughly doubles; 13B -> 70B "grows 5.4x":
    DOES NOT SURVIVE with real counts (5.30x; 5.4 is 70/13 from the names). Doubling the width
    quadruples per-layer parameters."""
    real = count_parameters(LLAMA2_7B).total
    approx = 32 * 12 * 4096**2 + 2 * 32000 * 4096  # the handout's formula
    assert round(100 * (real - approx) / real, 2) == 0.50  # the formula is 0.50% short of the real count
    t7, t13, t70 = (count_parameters(c).total for c in (LLAMA2_7B, LLAMA2_13B, LLAMA2_70B))
    assert round(t13 / t7, 2) == 1.93
    assert round(t70 / t13, 2) == 5.30
    wide = LLAMA2_7B.replace(d_model=8192, d_ff=2 * 11008)
    assert round(count_parameters(wide).per_layer / count_parameters(LLAMA2_7B).per_layer, 3) == 4.0


# ---------------------------------------------------------------- 004: masks and the encoder-decoder


def test_004_encoder_and_causal_mask_pictures():
    """004 §3.3 and §4.2: the 5 x 5 encoder mask is all ones; the causal mask is lower triangular
    (row i sees t0..ti)."""
    enc = padding_mask(torch.tensor([5]), 5).expand(1, 1, 5, 5)[0, 0]
    assert enc.int().tolist() == [[1] * 5] * 5
    assert causal_mask(5).int().tolist() == [[1 if j <= i else 0 for j in range(5)] for i in range(5)]


def test_004_three_mask_shapes_and_cross_scores():
    """004 §4.3 and §9.1: cross-attention scores are N_tgt x N_src (not square); the three masks
    have shapes (b, enc_len, enc_len), (b, dec_len, dec_len), (b, dec_len, enc_len) once broadcast."""
    b, s, t = 2, 7, 4
    m = seq2seq_masks(torch.tensor([7, 3]), s, t)
    assert (m.encoder.shape, m.decoder.shape, m.cross.shape) == ((b, 1, 1, s), (t, t), (b, 1, t, s))
    model = EncoderDecoder(ModelConfig(vocab_size=11, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_seq_len=16))
    with torch.no_grad():
        out = model(torch.randint(0, 11, (b, s)), torch.tensor([7, 3]), torch.randint(0, 11, (b, t)))
    assert [tuple(w[0].shape) for w in (out.encoder_attentions, out.decoder_attentions, out.cross_attentions)] == [
        (b, 2, s, s), (b, 2, t, t), (b, 2, t, s)]  # the cross scores are N_tgt x N_src
    assert torch.all(out.cross_attentions[0][1, :, :, 3:] == 0)  # source padding hidden from every query


def test_004_sdpa_bool_mask_semantics():
    """004 §9.1 note says F.scaled_dot_product_attention's bool mask means True = masked.
    DOES NOT SURVIVE: in PyTorch a True entry *takes part* in attention (nn.MultiheadAttention's
    bool attn_mask is the one where True = blocked). The book's causal_mask (True = may attend)
    handed to SDPA is causal attention; the handout's convention (its negation) attends to
    exactly the wrong positions: every query sees only its future (the last query sees nothing)."""
    q, k, v = torch.randn(3, 1, 2, 5, 8).unbind(0)
    book = causal_mask(5)
    ours, _ = scaled_dot_product_attention(q, k, v, book)
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, attn_mask=book), ours, atol=1e-6, rtol=0)
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, is_causal=True), ours, atol=1e-6, rtol=0)
    _, w = scaled_dot_product_attention(q, k, v, ~book)  # the handout's reading
    # the first query sees only the future
    assert torch.all(w[..., 0, 0] == 0) and torch.all(w[..., 0, 1:].sum(-1) > 0.999)


def test_004_forward_check_shape():
    """004 §9.8: batch 16, source 100 x 80 features, targets 50, d = 512, 6 + 6 layers, 8 heads,
    d_ff 2048, vocab 26 -> logits (16, 50, 26). Run on the meta device: real modules, shapes only."""
    cfg = ModelConfig(vocab_size=26, d_model=512, n_layers=6, n_heads=8, d_ff=2048, max_seq_len=2048, dropout=0.1)
    with torch.device("meta"):
        model = EncoderDecoder(cfg, frontend=torch.nn.Linear(80, 512))
        out = model(torch.randn(16, 100, 80), torch.randint(1, 100, (16,)), torch.randint(0, 26, (16, 50)))
    assert out.logits.shape == (16, 50, 26)
