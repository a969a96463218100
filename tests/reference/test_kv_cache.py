import torch

from backend.reference.config import ModelConfig
from backend.reference.generate import generate, token_steps
from backend.reference.kv_cache import KVCache, kv_cache_bytes, kv_cache_bytes_for
from backend.reference.model import DecoderLM

CFG = ModelConfig(vocab_size=53, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=64, max_seq_len=64)


def test_update_appends_along_time():
    cache = KVCache(n_layers=1)
    k1, v1 = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 3, 8)
    cache.update(0, k1, v1)
    k, v = cache.update(0, torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8))
    assert k.shape == (1, 2, 4, 8) and cache.seq_len == 4
    torch.testing.assert_close(k[:, :, :3], k1)
    assert cache.nbytes() == 2 * 4 * 2 * 8 * 4


@torch.no_grad()
def test_cache_bytes_match_formula_and_real_cache():
    model = DecoderLM(CFG).eval()
    out = model(torch.randint(0, 53, (3, 10)), cache=model.new_cache())
    assert out.cache.nbytes() == kv_cache_bytes_for(CFG, seq_len=10, batch=3, dtype=torch.float32)
    assert kv_cache_bytes(2, 2, 8, 10, batch=3, dtype=torch.float32) == out.cache.nbytes()


@torch.no_grad()
def test_cached_generation_equals_uncached_token_for_token():
    model = DecoderLM(CFG).eval()
    prompt = torch.randint(0, 53, (2, 5))
    with_cache = generate(model, prompt, 20, use_cache=True, greedy=True)
    without = generate(model, prompt, 20, use_cache=False, greedy=True)
    assert torch.equal(with_cache.tokens, without.tokens)
    assert (with_cache.step_logits - without.step_logits).abs().max() <= 1e-5


@torch.no_grad()
def test_cached_sampling_equals_uncached_with_the_same_seed():
    model = DecoderLM(CFG).eval()
    prompt = torch.randint(0, 53, (2, 3))
    runs = [
        generate(model, prompt, 15, use_cache=c, temperature=0.8, top_k=20, top_p=0.9,
                 generator=torch.Generator().manual_seed(7))
        for c in (True, False)
    ]
    assert torch.equal(runs[0].tokens, runs[1].tokens)
    assert (runs[0].step_logits - runs[1].step_logits).abs().max() <= 1e-5


@torch.no_grad()
def test_token_steps_counted_by_generate():
    model = DecoderLM(CFG).eval()
    prompt = torch.randint(0, 53, (1, 4))
    for use_cache in (True, False):
        result = generate(model, prompt, 6, use_cache=use_cache, greedy=True)
        assert result.tokens_processed == token_steps(6, use_cache, prompt_len=4)
    assert token_steps(6, True, 4) == 4 + 5
    assert token_steps(6, False, 4) == 4 + 5 + 6 + 7 + 8 + 9
