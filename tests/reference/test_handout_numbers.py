"""Every number in the three handouts that the reference code can produce, produced by it.

Handouts (in ../shared/seeds/): 000 = "The decoder-only Transformer", 003 = "LLM 101 §2",
004 = "Transformer overview and implementation". Each docstring names handout and section.
Numbers of the 1/sqrt(d_k) variance experiment (000 §2.1 box, 003 scaling) are tested next to
backend/reference/scaling.py. Where a handout number does not survive, the test asserts what is
true and says so in a "DOES NOT SURVIVE" comment. Where a number came from an unseeded random
draw or from data we do not have, the test checks what the number means and says so.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from backend.reference.attention import scaled_dot_product_attention
from backend.reference.config import ModelConfig
from backend.reference.counting import build_on_meta, count_parameters
from backend.reference.encoder_decoder import EncoderDecoder, seq2seq_masks
from backend.reference.generate import generate, token_steps
from backend.reference.grouped_query import repeat_kv
from backend.reference.kv_cache import kv_cache_bytes, kv_cache_bytes_for
from backend.reference.masks import causal_mask, dtype_pitfall, padding_mask, to_additive
from backend.reference.mlp import MLP, SwiGLU, swiglu_hidden_size
from backend.reference.model import DecoderLM, next_token_loss
from backend.reference.multi_head import split_heads
from backend.reference.norms import RMSNorm
from backend.reference.presets import PRESETS
from backend.reference.rope import rotate
from backend.reference.sinusoidal import sinusoidal_encoding

KiB, GiB = 1024, 1024**3
LLAMA2_7B, LLAMA2_13B, LLAMA2_70B, LLAMA3_8B = (PRESETS[n] for n in ("llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b"))


def r(x, nd):
    return [round(v, nd) for v in torch.as_tensor(x).flatten().tolist()]


def meta_count(module_cls, config) -> int:
    with torch.device("meta"):
        return sum(p.numel() for p in module_cls(config).parameters())


# ---------------------------------------------------------------- 003: the river-bank example

# the, river, bank as (water, money, generic, unused); savings is river with water/money swapped
E = torch.tensor([[0.3, 0.3, 2.5, 0.0], [2.6, 0.0, 0.5, 0.0], [1.6, 1.6, 0.8, 0.0]], dtype=torch.float64)
SAVINGS = torch.tensor([0.0, 2.6, 0.5, 0.0], dtype=torch.float64)


def bank_attention(words, scale=None):
    """bank (the last row) attends over all words, q = k = v = the embeddings."""
    out, w = scaled_dot_product_attention(words[-1:], words, words, scale=scale)
    return out[0], w[0]


def test_003_river_bank_scores_and_weights():
    """003 self-attention, steps 1-2: scores 2.96/4.56/5.76, /2 -> 1.48/2.28/2.88,
    e^x 4.39/9.78/17.81 (sum 31.98), weights 0.137/0.306/0.557."""
    scores = E @ E[2]
    assert r(scores, 2) == [2.96, 4.56, 5.76]
    assert r(scores / math.sqrt(4), 2) == [1.48, 2.28, 2.88]
    assert r((scores / 2).exp(), 2) == [4.39, 9.78, 17.81]
    assert round((scores / 2).exp().sum().item(), 2) == 31.98
    _, w = bank_attention(E)
    assert r(w, 3) == [0.137, 0.306, 0.557]


def test_003_river_bank_mix():
    """003 self-attention, step 3 and exercise 03: bank (1.60, 1.60) -> (1.73, 0.93) after "the river";
    with savings instead of river the two flip to (0.93, 1.73)."""
    new_bank, _ = bank_attention(E)
    assert r(new_bank[:2], 2) == [1.73, 0.93]
    savings_bank, _ = bank_attention(torch.stack([E[0], SAVINGS, E[2]]))
    assert r(savings_bank[:2], 2) == [0.93, 1.73]


def test_003_without_scaling_bank_copies_itself():
    """003 self-attention and exercise 03 "Try": without / sqrt(4) the weights become 0.045 / 0.221 / 0.734."""
    _, w = bank_attention(E, scale=1.0)
    assert r(w, 3) == [0.045, 0.221, 0.734]


def test_003_two_heads():
    """003 exercise 04: one big head 0.14/0.31/0.56; head A (water, money) 0.03/0.33/0.64;
    head B (generic) 0.59/0.19/0.22. Try: the = [0.3, 2.5, 2.5, 0] moves head A's "the" to 0.30,
    head B unchanged. The heads are the view/transpose split of the 4 numbers into 2 x 2."""
    def heads(words):
        x = split_heads(words[None], n_heads=2)  # (1, 2, 3, 2): head A = dims 0-1, head B = dims 2-3
        return scaled_dot_product_attention(x[:, :, -1:], x, x)[1][0, :, 0]  # bank's row, per head

    _, one = bank_attention(E)
    assert r(one, 2) == [0.14, 0.31, 0.56]
    a, b = heads(E)
    assert r(a, 2) == [0.03, 0.33, 0.64]
    assert r(b, 2) == [0.59, 0.19, 0.22]
    a2, b2 = heads(torch.stack([torch.tensor([0.3, 2.5, 2.5, 0.0], dtype=torch.float64), E[1], E[2]]))
    assert round(a2[0].item(), 2) == 0.30
    torch.testing.assert_close(b2, b)


def test_003_encoder_and_decoder_weights():
    """003 families and exercise 05: encoder [[0.78 0.09 0.14] [0.06 0.73 0.21] [0.14 0.31 0.56]],
    decoder [[1 0 0] [0.08 0.92 0] [0.14 0.31 0.56]]: the last row is the same in both."""
    _, enc = scaled_dot_product_attention(E, E, E)
    _, dec = scaled_dot_product_attention(E, E, E, to_additive(causal_mask(3), E.dtype))
    assert [r(row, 2) for row in enc] == [[0.78, 0.09, 0.14], [0.06, 0.73, 0.21], [0.14, 0.31, 0.56]]
    assert [r(row, 2) for row in dec] == [[1.0, 0.0, 0.0], [0.08, 0.92, 0.0], [0.14, 0.31, 0.56]]


def test_003_fourth_word_flooded():
    """003 exercise 05 "Try": add flooded = [2.4, 0, 0.6, 0]; only the flooded row matches between
    encoder and decoder, and bank's row now differs."""
    words = torch.cat([E, torch.tensor([[2.4, 0.0, 0.6, 0.0]], dtype=torch.float64)])
    _, enc = scaled_dot_product_attention(words, words, words)
    _, dec = scaled_dot_product_attention(words, words, words, causal_mask(4))
    same = [torch.allclose(enc[i], dec[i]) for i in range(4)]
    assert same == [False, False, False, True]


def test_003_head_widths():
    """003 multi-head table: 512 = 8 x 64 (2017), 4,096 = 32 x 128, GPT-3 12,288 = 96 x 128.
    Read off the book's split_heads on a meta tensor (the split the attention code really does)."""
    widths = [(512, 8), (4096, 32), (12288, 96)]
    shapes = [split_heads(torch.empty(1, 3, d, device="meta"), n_heads=h).shape for d, h in widths]
    assert [tuple(s) for s in shapes] == [(1, 8, 3, 64), (1, 32, 3, 128), (1, 96, 3, 128)]


# ---------------------------------------------------------------- 003: decoder-only, position, context


def test_003_one_prediction_per_position():
    """003 "why decoder-only": a 512-token passage gives 511 next-token predictions in one pass.
    (The encoder side, 15% of 512 = 77, and the 6.7x ratio are arithmetic, not model code.)"""
    model = DecoderLM(ModelConfig(vocab_size=17, d_model=16, n_layers=1, n_heads=2, d_ff=16, max_seq_len=512)).eval()
    ids = torch.randint(0, 17, (1, 512))
    with torch.no_grad():
        out = model(ids, labels=ids)
    per_position = F.cross_entropy(out.logits[0, :-1], ids[0, 1:], reduction="none")
    assert per_position.numel() == 511
    torch.testing.assert_close(out.loss, per_position.mean())


def test_003_word_order_needs_positions():
    """003 position and exercise 07: without positions "dog bites man" and "man bites dog" give
    "dog" exactly the same vector; adding the sinusoidal encoding makes them differ. The
    handout's printed vectors come from embeddings not shown, so we test what they mean."""
    dog, bites, man = torch.randn(3, 8, dtype=torch.float64)
    pe = sinusoidal_encoding(3, 8).double()

    def dog_vector(words, dog_at, with_pe):
        x = torch.stack(words) + (pe if with_pe else 0)
        return scaled_dot_product_attention(x, x, x)[0][dog_at]

    a = dog_vector([dog, bites, man], 0, with_pe=False)
    b = dog_vector([man, bites, dog], 2, with_pe=False)
    torch.testing.assert_close(a, b)  # attention alone is blind to order
    a = dog_vector([dog, bites, man], 0, with_pe=True)
    b = dog_vector([man, bites, dog], 2, with_pe=True)
    assert not torch.allclose(a, b)


def test_003_sinusoidal_values():
    """003 position: d = 8, first four values at positions 0, 1, 2, 50:
    [0 1 0 1], [0.841 0.54 0.1 0.995], [0.909 -0.416 0.199 0.98], [-0.262 0.965 -0.959 0.284]."""
    pe = sinusoidal_encoding(51, 8)
    assert r(pe[0, :4], 3) == [0.0, 1.0, 0.0, 1.0]
    assert r(pe[1, :4], 3) == [0.841, 0.54, 0.1, 0.995]
    assert r(pe[2, :4], 3) == [0.909, -0.416, 0.199, 0.98]
    assert r(pe[50, :4], 3) == [-0.262, 0.965, -0.959, 0.284]


def test_003_context_length_quadratic():
    """003 context length: 8,000 / 16,000 / 128,000 tokens = 1x / 2x / 16x the text and
    1x / 4x / 256x the attention work. Counted from the score matrix of the real attention
    function, run on the meta device (shapes only, no memory)."""
    def score_entries(t):
        q = torch.empty(1, 1, t, 8, device="meta")
        return scaled_dot_product_attention(q, q, q)[1].numel()

    base = score_entries(8_000)
    assert [score_entries(t) // base for t in (8_000, 16_000, 128_000)] == [1, 4, 256]


# ---------------------------------------------------------------- 003 and 000 §5: the KV cache


@pytest.fixture(scope="module")
def tiny_lm():
    cfg = ModelConfig(vocab_size=11, d_model=8, n_layers=1, n_heads=2, d_ff=8, max_seq_len=1024)
    torch.manual_seed(0)
    return DecoderLM(cfg).eval()


def test_003_token_steps_400(tiny_lm):
    """003 exercise 08: 400 steps -> 80,200 key rows computed without a cache, 400 with one.
    Counted by running generation both ways from a one-token prompt."""
    prompt = torch.zeros(1, 1, dtype=torch.long)
    without = generate(tiny_lm, prompt, 400, use_cache=False, greedy=True)
    with_cache = generate(tiny_lm, prompt, 400, use_cache=True, greedy=True)
    assert (without.tokens_processed, with_cache.tokens_processed) == (80_200, 400)
    assert torch.equal(without.tokens, with_cache.tokens)


def test_003_token_steps_1000_and_800():
    """003 KV cache: n = 1000 -> 500,500 token-steps without caching, 1,000 with (500x less work);
    exercise 08 "Try" n = 800 -> 320,400 against 800. Same count as generate() reports (tested above
    for 400 and in test_kv_cache.py), in closed form."""
    assert token_steps(1000, use_cache=False) == 500_500
    assert token_steps(1000, use_cache=True) == 1_000
    assert token_steps(1000, False) // token_steps(1000, True) == 500
    assert (token_steps(800, False), token_steps(800, True)) == (320_400, 800)


def test_003_cache_sizes_8b_class():
    """003 KV cache and exercise 08: 128 KiB per token; 1,000 tokens 0.12 GiB; 8,192 tokens 1.00 GiB;
    128,000 tokens 15.62 GiB; 100 users at 8,192 tokens 100 GiB (Llama-3-8B shape, bf16)."""
    per_token = kv_cache_bytes_for(LLAMA3_8B, seq_len=1, dtype=torch.bfloat16)
    assert per_token == 128 * KiB
    assert f"{kv_cache_bytes_for(LLAMA3_8B, 1_000) / GiB:.2f}" == "0.12"
    assert kv_cache_bytes_for(LLAMA3_8B, 8_192) == 1 * GiB
    assert f"{kv_cache_bytes_for(LLAMA3_8B, 128_000) / GiB:.2f}" == "15.62"  # 15.625 exactly
    assert kv_cache_bytes_for(LLAMA3_8B, 8_192, batch=100) == 100 * GiB


def meta_cache(config, seq_len):
    """The KVCache the model itself fills on a seq_len-token prompt, built on the meta device in bf16
    (shapes and dtypes are real, storage is not: 8,192 tokens of Llama-3-8B cost no memory)."""
    with torch.device("meta"):
        model = DecoderLM(config).to(torch.bfloat16)
    cache = model.new_cache()
    model(torch.zeros(1, seq_len, dtype=torch.long, device="meta"), cache=cache, logits_to_keep=1)
    return cache


def test_000_kv_cache_gqa_factor():
    """000 §5: cache = 2 * L * T * n_kv * d_head values; Llama-3-8B (L = 32, n_kv * d_head = 8 x 128)
    in bf16; GQA with 4 query heads per KV head cuts the cache by exactly 4. Measured on the cache
    the model really fills (meta device), against the formula and against the same model with
    32 KV heads (plain multi-head attention)."""
    gqa = meta_cache(LLAMA3_8B, 8192)
    assert tuple(gqa.keys[0].shape) == (1, 8, 8192, 128) and len(gqa.keys) == 32
    assert gqa.nbytes() == kv_cache_bytes(32, 8, 128, seq_len=8192, dtype=torch.bfloat16) == 1 * GiB
    mha = meta_cache(LLAMA3_8B.replace(n_kv_heads=32), 8192)
    assert mha.nbytes() == 4 * gqa.nbytes() == kv_cache_bytes_for(LLAMA3_8B.replace(n_kv_heads=32), 8192)


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
    assert round(meta_count(SwiGLU, LLAMA2_7B) / classic_weights, 4) == 1.0078  # Llama-2-7B's: equal up to rounding to 256


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
    assert torch.all(w[..., 0, 0] == 0) and torch.all(w[..., 0, 1:].sum(-1) > 0.999)  # the first query sees only the future


def test_004_forward_check_shape():
    """004 §9.8: batch 16, source 100 x 80 features, targets 50, d = 512, 6 + 6 layers, 8 heads,
    d_ff 2048, vocab 26 -> logits (16, 50, 26). Run on the meta device: real modules, shapes only."""
    cfg = ModelConfig(vocab_size=26, d_model=512, n_layers=6, n_heads=8, d_ff=2048, max_seq_len=2048, dropout=0.1)
    with torch.device("meta"):
        model = EncoderDecoder(cfg, frontend=torch.nn.Linear(80, 512))
        out = model(torch.randn(16, 100, 80), torch.randint(1, 100, (16,)), torch.randint(0, 26, (16, 50)))
    assert out.logits.shape == (16, 50, 26)
