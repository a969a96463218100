"""The cache's levers: sizes read off the book's KVCache, checked against the published shapes."""

from __future__ import annotations

import pytest

from backend.reference import kv_levers
from backend.reference.kv_cache import kv_cache_bytes
from backend.reference.presets import get_preset

CFG = get_preset("llama-3-8b")


def test_as_built_is_the_serving_chapters_bytes_per_token():
    assert kv_levers.bytes_per_token("gqa") == kv_cache_bytes(32, 8, 128, 1) == 131_072
    assert kv_levers.bytes_per_token("mha") == 4 * 131_072


def test_mla_caches_512_plus_64_values_per_token_per_layer():
    assert kv_levers.bytes_per_token("mla") == (512 + 64) * CFG.n_layers * 2


@pytest.mark.parametrize("t", [1024, 4096, 4097, 32768])
def test_a_window_caps_what_each_layer_keeps(t):
    assert kv_levers.user_bytes("window", t) == min(t, 4096) * 131_072
    local = 27 * min(t, 1024) + 5 * t  # 32 layers: every sixth is global
    assert kv_levers.user_bytes("local_global", t) == local * 131_072 // 32


def test_global_layers_are_every_sixth():
    flags = kv_levers._global_layers(32)
    assert sum(flags) == 5 and [i for i, g in enumerate(flags) if g] == [5, 11, 17, 23, 29]


def test_sharing_and_quantising():
    assert kv_levers.bytes_per_token("cross_layer") == 131_072 // 2
    assert kv_levers.bytes_per_token("fp8") == 131_072 // 2
    # 4-bit: half a byte a value, plus a float16 scale per key and per value vector
    assert kv_levers.bytes_per_token("int4") == 131_072 // 4 + 2 * 32 * 8 * 2


def test_every_lever_is_linear_in_context_below_its_window():
    for lever in kv_levers.LEVERS:
        assert kv_levers.user_bytes(lever.key, 1000) == 1000 * kv_levers.bytes_per_token(lever.key)
