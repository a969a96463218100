"""The paged allocator against vLLM's own block arithmetic, and the replay's bookkeeping.

vLLM cannot be installed here, so the oracle is its rules, read from its source and written
out below as independent one-liners (no code copied), each with the file it comes from:

- Blocks a request needs: ``num_required_blocks = cdiv(num_tokens, self.block_size)``
  (vllm/v1/core/single_type_kv_cache_manager.py, `get_num_blocks_to_allocate` and
  `allocate_new_blocks`).
- Prefix-cache hits are whole blocks: ``max_num_blocks = max_length // self.block_size`` and
  the scan stops at the first block hash not cached, the hashes being chained
  (same file, `FullAttentionManager.find_longest_cache_hit`); only full blocks are cached,
  ``num_full_blocks = num_tokens // self.block_size`` (same file, `cache_blocks`).
- The last prompt token is never a hit: ``max_cache_hit_length = request.num_tokens - 1``,
  "we must recompute the last token to obtain logits" (vllm/v1/core/kv_cache_manager.py,
  `get_computed_blocks`).
- Copy-on-write: a block whose reference count is above 1 is not appendable; appending to it
  frees the caller's reference and allocates a new block, recording the copy
  (vllm/core/block/common.py, `CopyOnWriteTracker.cow_block_if_not_appendable`, vLLM 0.6).
- A request's blocks are freed last block first (`SingleTypeKVCacheManager.free`).
- The default block size is 16 tokens (vllm/config.py, `CacheConfig`, `block_size` default).
"""

from __future__ import annotations

import random

import pytest

from backend.reference.paged import (
    BlockPool,
    ContiguousKV,
    OutOfBlocks,
    PagedKV,
    cdiv,
    full_block_hashes,
)
from backend.reference.paged_replay import replay


def vllm_required_blocks(num_tokens: int, block_size: int) -> int:
    return -(-num_tokens // block_size)


def vllm_hit_tokens(prompt_tokens: int, cached_prefix: int, block_size: int) -> int:
    """Tokens found cached for a prompt whose first `cached_prefix` tokens were seen before."""
    max_num_blocks = (prompt_tokens - 1) // block_size
    cached_full_blocks = cached_prefix // block_size
    return min(max_num_blocks, cached_full_blocks) * block_size


@pytest.mark.parametrize("block_size", [1, 4, 16, 32])
def test_block_counts_are_vllms_cdiv_at_every_length(block_size):
    kv = PagedKV(500, block_size)
    kv.add("s", 1)
    for n in range(2, 300):
        kv.append("s")
        assert len(kv.tables["s"]) == vllm_required_blocks(n, block_size) == cdiv(n, block_size)
    kv.add("t", 123)
    assert len(kv.tables["t"]) == vllm_required_blocks(123, block_size)


@pytest.mark.parametrize("prompt, shared, bs", [(40, 40, 16), (48, 48, 16), (100, 37, 16),
                                               (100, 15, 16), (64, 64, 8), (17, 17, 16),
                                               (16, 16, 16), (33, 32, 16)])
def test_prefix_hits_are_whole_blocks_and_never_the_last_token(prompt, shared, bs):
    rng = random.Random(prompt * 1000 + shared)
    first = [rng.randrange(50_000) for _ in range(prompt)]
    second = first[:shared] + [50_000 + i for i in range(prompt - shared)]
    kv = PagedKV(64, bs)
    assert kv.add("a", len(first), first) == 0
    hit = kv.add("b", len(second), second)
    assert hit == vllm_hit_tokens(prompt, shared, bs)
    assert hit % bs == 0 and hit <= shared and hit < prompt
    # the hit blocks are the same physical blocks, with two readers each
    n = hit // bs
    assert kv.tables["a"][:n] == kv.tables["b"][:n]
    assert all(kv.pool.refs[b] == 2 for b in kv.tables["b"][:n])
    assert not set(kv.tables["a"][n:]) & set(kv.tables["b"][n:])


def test_chained_hashes_match_only_with_everything_before():
    bs = 4
    a = list(range(12))
    b = [99] + a[1:]  # differs in the first block only
    ha, hb = full_block_hashes(a, bs), full_block_hashes(b, bs)
    assert len(ha) == 3 and all(x != y for x, y in zip(ha, hb))
    assert full_block_hashes(a[:11], bs) == ha[:2]  # a partly filled block has no hash


def test_fork_shares_and_copy_on_write_copies_only_a_partly_filled_shared_block():
    kv = PagedKV(20, 16)
    kv.add(0, 40)  # blocks of 16, 16, 8
    for s in (1, 2, 3):
        kv.fork(0, s)
    assert kv.blocks_in_use() == 3 and all(kv.pool.refs[b] == 4 for b in kv.tables[0])
    # vLLM: a block with refcount > 1 is not appendable -> one copy per writer but the last
    for s in (0, 1, 2, 3):
        kv.append(s)
    assert kv.copies == 3  # the fourth writer holds the block alone by then
    assert len({kv.tables[s][-1] for s in range(4)}) == 4
    assert all(kv.pool.refs[b] == 4 for b in kv.tables[0][:2])  # full blocks stay shared
    assert kv.blocks_in_use() == 2 + 4


def test_a_full_shared_last_block_needs_no_copy():
    kv = PagedKV(20, 16)
    kv.add(0, 32)
    kv.fork(0, 1)
    kv.append(0)
    kv.append(1)
    assert kv.copies == 0 and kv.blocks_in_use() == 2 + 2


def test_freeing_releases_a_block_when_its_last_reader_goes():
    kv = PagedKV(10, 16)
    kv.add(0, 20)
    kv.fork(0, 1)
    kv.free(0)
    assert kv.blocks_in_use() == 2 and len(kv.pool.free) == 8
    kv.free(1)
    assert kv.blocks_in_use() == 0 and kv.pool.filled == 0 and kv.pool.shared == 0


def test_free_returns_blocks_last_first_like_vllm():
    kv = PagedKV(4, 4)
    kv.add(0, 16)
    kv.free(0)
    assert list(kv.pool.free) == [3, 2, 1, 0]


def test_out_of_blocks_is_an_error_not_a_partial_allocation():
    kv = PagedKV(3, 16)
    with pytest.raises(OutOfBlocks):
        kv.add(0, 49)
    assert kv.blocks_in_use() == 0 and 0 not in kv.tables


def test_pool_counters_match_a_recount():
    rng = random.Random(1)
    kv = PagedKV(64, 8)
    live = []
    for i in range(400):
        op = rng.random()
        try:
            if op < 0.2 or not live:
                kv.add(i, rng.randrange(1, 30))
                live.append(i)
            elif op < 0.3:
                kv.fork(rng.choice(live), i)
                live.append(i)
            elif op < 0.4:
                kv.free(live.pop(rng.randrange(len(live))))
            else:
                kv.append(rng.choice(live))
        except OutOfBlocks:
            pass
        used = [b for b, r in enumerate(kv.pool.refs) if r]
        assert kv.pool.filled == sum(kv.pool.fill[b] for b in used)
        assert kv.pool.shared == sum(kv.pool.fill[b] for b in used if kv.pool.refs[b] > 1)
        for s in live:  # every table covers its sequence exactly: cdiv blocks
            assert len(kv.tables[s]) == cdiv(kv.lengths[s], 8)


def test_contiguous_first_fit_leaves_holes_it_cannot_use():
    kv = ContiguousKV(100)
    for s in range(4):
        kv.add(s, 1, 25)
    kv.free(1)
    kv.free(3)
    assert kv.gaps() == [(25, 25), (75, 25)]
    with pytest.raises(OutOfBlocks):
        kv.add("big", 1, 30)  # 50 slots free, but in two holes of 25
    kv.add("fits", 1, 20)
    assert kv.regions["fits"] == (25, 20)  # the first hole that fits


def test_replay_accounts_for_every_slot_and_is_seeded():
    for scheme in ("contiguous", "paged"):
        r = replay(scheme, 8192, 16, 256, 1024, 2, steps=300)
        assert r.tokens + r.internal + r.free == pytest.approx(8192)
        assert 0 <= r.never <= r.internal
        again = replay(scheme, 8192, 16, 256, 1024, 2, steps=300)
        assert (again.tokens, again.running, again.snapshot) == (r.tokens, r.running, r.snapshot)
    assert BlockPool(3, 4).take() == 0
