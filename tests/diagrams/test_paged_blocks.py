"""The paged-cache diagram: drawn from token counts and a block size by the book's allocator."""

from __future__ import annotations

import pytest

from backend.diagrams import paged_blocks
from backend.reference.paged import cdiv


def _blocks(c):
    """Physical block numbers drawn under the strip (the mono digits after the 'free'/owner)."""
    texts = c.texts()
    start = texts.index("physical blocks in memory")
    return [t for t in texts[start:] if t.isdigit()]


def test_the_picture_follows_its_configuration():
    small = paged_blocks.draw(lengths=(37, 20), block_size=16, free=2)
    assert len(_blocks(small)) == 3 + 2 + 2
    # a third request and bigger blocks: other tables, other fills
    other = paged_blocks.draw(lengths=(10, 30, 3), block_size=8, free=0)
    assert len(_blocks(other)) == 2 + 4 + 1
    assert "free" not in other.texts() and small.texts().count("free") == 2
    assert "C: 3 tokens" in other.texts() and "3/8" in other.texts()
    assert small.render("a") != other.render("a")


@pytest.mark.parametrize("lengths, bs", [((37, 20), 16), ((10, 30, 3), 8), ((64,), 32),
                                         ((5, 5, 5), 4)])
def test_labels_are_the_allocators_block_tables(lengths, bs):
    c = paged_blocks.draw(lengths=lengths, block_size=bs, free=1)
    kv, n_blocks = paged_blocks.tables(list(lengths), bs, 1)
    texts = c.texts()
    for r, n in enumerate(lengths):
        table = kv.tables[r]
        assert len(table) == cdiv(n, bs)  # the block count vLLM's cdiv gives
        assert "table " + " ".join(map(str, table)) in texts
        # every logical block is full but the last, which holds the remainder
        fills = [kv.pool.fill[b] for b in table]
        assert fills[:-1] == [bs] * (len(table) - 1) and fills[-1] == n - bs * (len(table) - 1)
    assert f"{n_blocks} physical blocks" in c.desc and f"blocks of {bs} token slots" in c.desc


def test_requests_writing_in_turn_interleave_in_memory():
    kv, _ = paged_blocks.tables([37, 20], 16, 2)
    assert kv.tables[0] == [0, 2, 4] and kv.tables[1] == [1, 3]
    assert "points at physical blocks 0, 2, 4" in paged_blocks.draw().desc


def test_out_of_range_configurations_are_refused():
    for kw in ({"lengths": ()}, {"block_size": 5}, {"lengths": (200, 200)}, {"free": 9}):
        with pytest.raises(ValueError):
            paged_blocks.draw(**kw)
