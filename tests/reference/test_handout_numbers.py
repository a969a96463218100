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
from backend.reference.generate import generate, token_steps
from backend.reference.kv_cache import kv_cache_bytes, kv_cache_bytes_for
from backend.reference.masks import causal_mask, to_additive
from backend.reference.model import DecoderLM
from backend.reference.multi_head import split_heads
from backend.reference.presets import PRESETS
from backend.reference.sinusoidal import sinusoidal_encoding
from tests.support.numbers import r

KiB, GiB = 1024, 1024**3
LLAMA2_7B, LLAMA2_13B, LLAMA2_70B, LLAMA3_8B = (
    PRESETS[n] for n in ("llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b"))


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
