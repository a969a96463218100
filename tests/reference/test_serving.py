"""backend/reference/serving.py against independent oracles: the cache Hugging Face's Llama
really allocates, the book's own model run with a real cache, and the handout's arithmetic."""

from __future__ import annotations

import pytest
import torch

from backend.reference import serving
from backend.reference.config import ModelConfig
from backend.reference.counting import build_on_meta
from backend.reference.model import DecoderLM
from backend.reference.presets import PRESETS


def storage_bytes(tensors) -> int:
    """Bytes of the real storage behind tensors (not numel * element_size: the storage itself)."""
    return sum(t.untyped_storage().nbytes() for t in tensors)


def test_llama3_8b_handout_numbers():
    cfg = PRESETS["llama-3-8b"]
    assert cfg.n_kv_heads * cfg.d_head == 8 * 128 == 1024  # the handout's "1024 wide"
    per_token, scales = serving.cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.d_head, 1)
    assert (per_token, scales) == (2 * 32 * 1024 * 2, 0) == (131_072, 0)  # the handout's 128 KiB
    at_8k, _ = serving.cache_bytes(32, 8, 128, 8192)
    assert at_8k == 2**30  # 1 GiB
    users_100, _ = serving.cache_bytes(32, 8, 128, 8192, batch=100)
    assert users_100 == 100 * 2**30  # "100 users at 8,192 tokens: 100 GiB"
    at_128k, _ = serving.cache_bytes(32, 8, 128, 128_000)
    assert at_128k / 2**30 == 15.625  # the handout prints 15.62


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@torch.no_grad()
def test_meta_sizes_equal_the_cache_huggingface_llama_allocates(dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    hf = LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                     num_attention_heads=8, num_key_value_heads=2, head_dim=8)
    model = LlamaForCausalLM(hf).to(serving.DTYPES[dtype]).eval()
    out = model(torch.randint(0, 64, (2, 7)), use_cache=True)
    layers = out.past_key_values.layers
    real = storage_bytes([t for layer in layers for t in (layer.keys, layer.values)])
    assert serving.cache_bytes(3, 2, 8, 7, batch=2, dtype=dtype) == (real, 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@torch.no_grad()
def test_meta_sizes_equal_the_books_model_after_prefill_and_decode(dtype):
    cfg = ModelConfig(vocab_size=50, d_model=48, n_layers=2, n_heads=6, n_kv_heads=3, d_ff=64,
                      max_seq_len=32)
    model = DecoderLM(cfg).to(dtype).eval()
    cache = model.new_cache()
    model(torch.randint(0, 50, (3, 9)), cache=cache)  # prefill 9
    model(torch.randint(0, 50, (3, 1)), cache=cache)  # one decode step
    real = storage_bytes(cache.keys + cache.values)
    name = {torch.float32: "float32", torch.bfloat16: "bfloat16"}[dtype]
    assert serving.cache_bytes(2, 3, 8, 10, batch=3, dtype=name) == (real, 0)


def test_quantised_caches_hold_one_byte_per_value_plus_float16_scales():
    for name in ("int8", "fp8"):
        values, scales = serving.cache_bytes(32, 8, 128, 10, batch=2, dtype=name)
        assert values == 2 * 32 * 8 * 128 * 10 * 2 * 1  # one byte each
        assert scales == 2 * 32 * 8 * 10 * 2 * 2  # a float16 per key vector and per value vector
    assert serving.DTYPES["fp8"] is torch.float8_e4m3fn and serving.DTYPES["int8"] is torch.int8


def test_filled_cache_is_the_reference_cache_on_meta():
    cache = serving.filled_cache(4, 2, 16, 5, 3, torch.bfloat16)
    assert cache.seq_len == 5 and all(k.device.type == "meta" for k in cache.keys)
    assert cache.keys[3].shape == (3, 2, 5, 16) and cache.values[0].dtype == torch.bfloat16


def test_weights_bytes_from_the_published_count():
    assert serving.weights_bytes(PRESETS["llama-3-8b"]) == 2 * 8_030_261_248
    cfg = PRESETS["llama-3.2-1b"]  # tied head: counted once
    stored = sum(p.numel() for p in build_on_meta(cfg).parameters())
    assert serving.weights_bytes(cfg, torch.float32) == 4 * stored == 4 * 1_235_814_400


def test_users_fit_hand_arithmetic():
    fit = serving.users_fit(80 * serving.GB, 16_060_522_496, 2**30)
    assert fit.users == (80_000_000_000 - 16_060_522_496) // 2**30 == 59
    assert fit.weights_fit and fit.free_bytes == 63_939_477_504
    none = serving.users_fit(24 * serving.GB, 30 * serving.GB, 1)
    assert none.users == 0 and not none.weights_fit and none.free_bytes == 0
    assert serving.users_fit(10, 4, 3).users == 2  # whole users only
