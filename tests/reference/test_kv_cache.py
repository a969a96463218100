import pytest
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


# --- backend/reference/decode.py: key rows, the prefix's K/V, timing --------------------------

from backend.reference import decode  # noqa: E402


def test_the_handouts_token_step_arithmetic():
    # handout 003: n (n + 1) / 2 against n, printed for 1,000, 400 and (the "Try") 800 tokens
    assert (token_steps(1000, False), token_steps(1000, True)) == (500_500, 1_000)
    assert (token_steps(400, False), token_steps(400, True)) == (400 * 401 // 2, 400) == (80_200, 400)
    assert (token_steps(800, False), token_steps(800, True)) == (320_400, 800)


@torch.no_grad()
def test_key_rows_counted_at_every_k_proj_equal_the_positions_generate_reports():
    """Oracle: forward hooks on every layer's k_proj count the rows it actually computed."""
    model = DecoderLM(CFG).eval()
    rows = [0] * CFG.n_layers
    hooks = [layer.attn.k_proj.register_forward_hook(
        lambda m, inp, out, i=i: rows.__setitem__(i, rows[i] + out.shape[0] * out.shape[1]))
        for i, layer in enumerate(model.layers)]
    try:
        for use_cache in (False, True):
            rows[:] = [0] * CFG.n_layers
            result = generate(model, torch.randint(0, 53, (1, 3)), 12, use_cache=use_cache, greedy=True)
            assert rows == [result.tokens_processed] * CFG.n_layers
            assert rows[0] == token_steps(12, use_cache, prompt_len=3)
    finally:
        for h in hooks:
            h.remove()


@torch.no_grad()
def test_cached_generation_returns_its_filled_cache():
    model = DecoderLM(CFG).eval()
    out = generate(model, torch.randint(0, 53, (1, 4)), 6, use_cache=True, greedy=True)
    assert out.cache.seq_len == 4 + 6 - 1  # the last token was sampled, never fed back
    assert out.cache.nbytes() == kv_cache_bytes_for(CFG, 9, dtype=torch.float32)
    assert generate(model, torch.randint(0, 53, (1, 4)), 6, use_cache=False).cache is None


@torch.no_grad()
def test_layer_kv_is_what_the_models_own_forward_caches():
    model = DecoderLM(CFG).eval()
    ids = torch.randint(0, 53, (2, 9))
    theirs = model.new_cache()
    model(ids, cache=theirs)
    ours = decode.layer_kv(model, ids, causal=True)
    for a, b in zip(ours.keys + ours.values, theirs.keys + theirs.values):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@torch.no_grad()
def test_prefix_kv_stay_under_the_causal_mask_and_move_without_it():
    model = DecoderLM(CFG).eval()
    for p in model.parameters():  # larger weights than the init, so attention is not uniform
        p.mul_(20)
    ids = torch.randint(0, 53, (1, 17))
    causal = decode.prefix_kv_change(model, ids, causal=True)
    bidirectional = decode.prefix_kv_change(model, ids, causal=False)
    assert len(causal) == CFG.n_layers and max(causal) <= 1e-5
    # layer 1's K/V are projections of each token's own embedding: no mask can change them
    assert bidirectional[0] == 0.0
    assert bidirectional[1] > 1e3 * max(max(causal), 1e-7)


@torch.no_grad()
def test_prefix_kv_moves_scales_the_change_and_counts_positions_by_hand():
    model = DecoderLM(CFG).eval()
    for p in model.parameters():
        p.mul_(20)
    ids = torch.randint(0, 53, (1, 17))
    moves = decode.prefix_kv_moves(model, ids, causal=False)
    # oracle: the unmasked K/V of both lengths, scaled and compared position by position by hand
    short, full = decode.layer_kv(model, ids[:, :-1], causal=False), decode.layer_kv(model, ids, causal=False)
    for (rel, moved), k1, k2, v1, v2 in zip(moves, short.keys, full.keys, short.values, full.values):
        k2, v2 = k2[:, :, :16], v2[:, :, :16]
        rms_k, rms_v = float(k1.square().mean()) ** 0.5, float(v1.square().mean()) ** 0.5
        expect = max(float((k1 - k2).abs().max()) / rms_k, float((v1 - v2).abs().max()) / rms_v)
        assert rel == pytest.approx(expect, rel=1e-6, abs=1e-12)
        by_hand = sum(1 for t in range(16)
                      if (k1[:, :, t] - k2[:, :, t]).abs().max() > 1e-6
                      or (v1[:, :, t] - v2[:, :, t]).abs().max() > 1e-6)
        assert moved == by_hand
    assert moves[0] == (0.0, 0) and moves[1][1] > 0  # layer 1 never moves; layer 2 does
    assert all(m == (pytest.approx(0.0, abs=1e-5), 0) for m in decode.prefix_kv_moves(model, ids))


def test_time_decode_warms_up_then_interleaves_its_repeats(monkeypatch):
    model = DecoderLM(CFG).eval()
    calls = []
    real = decode.generate
    monkeypatch.setattr(decode, "generate",
                        lambda m, p, n, use_cache, greedy: calls.append((n, use_cache)) or real(
                            m, p, n, use_cache=use_cache, greedy=greedy))
    t = decode.time_decode(model, torch.randint(0, 53, (1, 2)), 20, repeats=3, warmup_steps=4)
    assert calls == [(4, True), (4, False)] + [(20, True), (20, False)] * 3
    assert len(t.cache_ms) == len(t.no_cache_ms) == 3 and min(t.cache_ms + t.no_cache_ms) > 0
    assert torch.equal(t.with_cache.tokens, t.without_cache.tokens)
    assert t.cache_bytes == kv_cache_bytes_for(CFG, 2 + 20 - 1, dtype=torch.float32)
