"""The heads diagram: h query heads joined to n_kv key/value heads, grouped as repeat_kv does."""

from __future__ import annotations

import re

import torch

from backend.diagrams import heads_sharing
from backend.reference.grouped_query import repeat_kv


def count(canvas, pattern):
    return len(re.findall(pattern, "".join(canvas.parts)))


def test_boxes_and_joins_follow_h_and_n_kv():
    for h, n_kv in ((8, 2), (32, 8), (8, 8), (8, 1)):
        c = heads_sharing.draw(n_heads=h, n_kv=n_kv)
        assert count(c, r'class="tw-d-box tw-d-query"') == h
        assert count(c, r'class="tw-d-box tw-d-key"') == n_kv
        assert count(c, r"<line ") == h  # one join per query head
    small = heads_sharing.draw(n_heads=8, n_kv=2).texts()
    assert [t for t in small if t.startswith("Q")] == [f"Q{i}" for i in range(8)]
    assert [t for t in small if t.startswith("KV")] == ["KV0", "KV1"]


def test_the_grouping_is_repeat_kvs():
    for h, n_kv in ((8, 2), (32, 8), (6, 3)):
        kv = torch.arange(n_kv, dtype=torch.float32).reshape(1, n_kv, 1, 1)  # head k holds k
        served = repeat_kv(kv, h // n_kv)[0, :, 0, 0].long().tolist()  # what query head i reads
        assert heads_sharing.groups(h, n_kv) == served


def test_labels_say_the_kind_and_the_cache_factor():
    assert "grouped-query · 4 per KV head · cache ÷ 4" in heads_sharing.draw(n_heads=8, n_kv=2).texts()
    llama = heads_sharing.draw(n_heads=32, n_kv=8)
    assert "h = 32 query heads" in llama.texts() and "n_kv = 8 key/value heads" in llama.texts()
    assert "grouped-query · 4 per KV head · cache ÷ 4" in llama.texts()
    assert "multi-head · every head its own K, V" in heads_sharing.draw(n_heads=8, n_kv=8).texts()
    assert "multi-query · 8 per KV head · cache ÷ 8" in heads_sharing.draw(n_heads=8, n_kv=1).texts()
    d = heads_sharing.draw(n_heads=8, n_kv=2).desc
    assert "query heads 0–3, 4–7 read key/value heads 0, 1" in d and "2/8" in d


def test_the_description_of_multi_head_and_multi_query_reads_right():
    """It said 'The key/value cache holds 8 heads instead of 8: 8/8 of multi-head attention's'."""
    same = heads_sharing.draw(n_heads=8, n_kv=8).desc
    assert "instead of" not in same and "holds all 8 heads, as multi-head attention's does" in same
    one = heads_sharing.draw(n_heads=8, n_kv=1).desc
    assert "holds 1 head instead of 8: 1/8" in one
