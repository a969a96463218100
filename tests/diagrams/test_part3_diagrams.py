"""Part III's diagrams follow their configuration, and say what the reference code does."""

from __future__ import annotations

import math
import re

import pytest
import torch

from backend.diagrams import flash_strips, kv_growth
from backend.reference import attention_cost
from backend.reference.kv_cache import KVCache


def _rects(canvas):
    return len(re.findall(r"<rect ", "".join(canvas.parts)))


@pytest.mark.parametrize("prompt, steps", [(3, 4), (1, 1), (5, 7)])
def test_the_cache_grows_one_column_per_step(prompt, steps):
    c = kv_growth.draw(prompt=prompt, steps=steps)
    cells = prompt + sum(prompt + r for r in range(1, steps + 1))
    assert _rects(c) == cells + 2                       # and two legend swatches
    texts = c.texts()
    assert f"writes {prompt}" in texts
    assert [t for t in texts if t.startswith("reads ")] == [f"reads {prompt + r}"
                                                            for r in range(1, steps + 1)]


def test_the_labels_are_what_the_reference_cache_holds():
    """Prefill stores P pairs, each decode step one more: KVCache's length after each."""
    prompt, steps = 3, 4
    cache = KVCache(n_layers=1)
    lengths = []
    cache.update(0, torch.zeros(1, 1, prompt, 2), torch.zeros(1, 1, prompt, 2))
    lengths.append(cache.seq_len)
    for _ in range(steps):
        keys, _ = cache.update(0, torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2))
        lengths.append(keys.size(2))          # what the new query reads
    texts = kv_growth.draw(prompt=prompt, steps=steps).texts()
    shown = [int(t.split()[1]) for t in texts if t.startswith(("writes ", "reads "))]
    assert shown == lengths


@pytest.mark.parametrize("T, block, current", [(8, 2, 2), (8, 3, 3), (12, 4, 1), (5, 5, 1)])
def test_one_strip_of_keys_is_held_at_a_time(T, block, current):
    c = flash_strips.draw(T=T, block=block, current=current)
    assert _rects(c) == T * T + 2
    svg = "".join(c.parts)
    lo, hi = (current - 1) * block, min(T, current * block)
    assert svg.count("tw-d-accent") == T * (hi - lo)
    assert f"Memory holds {T * (hi - lo)} scores instead of {T * T}" in c.desc
    assert f"{math.ceil(T / block)} strips" in c.desc


def test_the_strips_are_the_blocks_the_reference_loop_walks():
    """blocked() gives the explicit softmax's output while holding (T, block) scores at a time."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 8, 4, generator=g) for _ in range(3))
    explicit = torch.softmax(q @ k.transpose(-2, -1) / 2, dim=-1) @ v
    torch.testing.assert_close(attention_cost.blocked(q, k, v, block=2), explicit)


def test_impossible_settings_are_refused():
    with pytest.raises(ValueError):
        flash_strips.draw(T=8, block=2, current=5)
    with pytest.raises(ValueError):
        kv_growth.draw(prompt=9, steps=8)


def test_the_memory_budget_is_the_reference_arithmetic():
    from backend.diagrams import memory_budget
    from backend.reference.presets import get_preset
    from backend.reference.serving import CARDS, GB, cache_bytes, users_fit, weights_bytes

    cfg = get_preset("llama-3-8b")
    # the diagram's per-user bytes are what the reference cache holds (checked at 64 tokens;
    # the cache is linear in tokens)
    held, scales = cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.d_head, 64)
    assert scales == 0 and memory_budget.per_user_bytes(
        cfg.n_layers, cfg.n_kv_heads, cfg.d_head, 64) == held
    c = memory_budget.draw("llama-3-8b", memory="80", context=8192)
    card = CARDS["80"]
    per_user = memory_budget.per_user_bytes(cfg.n_layers, 8, cfg.d_head, 8192)
    fit = users_fit(card.memory_bytes, weights_bytes(cfg), per_user)
    assert f"{fit.users} users × {per_user / GB:.2f} GB" in c.texts()
    mha_cfg = cfg.replace(n_kv_heads=cfg.n_heads)
    mha = memory_budget.per_user_bytes(cfg.n_layers, 32, cfg.d_head, 8192)
    assert mha == 4 * per_user
    mha_fit = users_fit(card.memory_bytes, weights_bytes(mha_cfg), mha)
    assert f"{mha_fit.users} users × {mha / GB:.2f} GB" in c.texts()
    assert f"{weights_bytes(mha_cfg) / GB:.1f} GB once" in c.texts()
    # the card is the one CUDA reports (85.0 GB), not the 80 GB it is sold by, with its article
    assert any("A100 80 GB (85.0 GB)" in t for t in c.texts())
    assert "an A100 80 GB" in c.desc and " a 80 GB" not in c.desc


def test_the_memory_budget_counts_the_users_the_kv_cache_widget_counts():
    """Figure and text agree: each row's users are the kv_cache widget's users_fit (the
    multi-head row as the custom model with n_kv = h, whose weights are its own)."""
    from backend.compute import kv_cache
    from backend.diagrams import memory_budget

    def widget(**kw):
        return kv_cache.compute(kv_cache.SPEC.resolve(kw))["values"]

    for memory in ("24", "80", "141"):
        for context in (2048, 8192):
            rows = memory_budget.rows_of("llama-3-8b", memory, context)
            texts = memory_budget.draw("llama-3-8b", memory=memory, context=context).texts()
            got = [int(t.split()[0]) for t in texts if "users ×" in t]
            gqa = widget(preset="llama-3-8b", memory=memory, context_len=context)
            mha = widget(preset="custom", n_kv=32, memory=memory, context_len=context)
            assert got == [r["fit"].users for r in rows] == [gqa["users_fit"], mha["users_fit"]]
            assert [r["weights"] for r in rows] == [gqa["weights_bytes"], mha["weights_bytes"]]
    assert [r["fit"].users for r in memory_budget.rows_of("llama-3-8b", "80", 8192)] == [64, 15]


def test_more_memory_or_shorter_contexts_fit_more_users():
    from backend.diagrams import memory_budget

    def users(**kw):
        return int(next(t for t in memory_budget.draw(**kw).texts() if "users ×" in t).split()[0])

    assert users(memory="141") > users(memory="80")
    assert users(context=2048) > users(context=8192)
    assert len([t for t in memory_budget.draw("llama-2-7b").texts() if "users ×" in t]) == 1
