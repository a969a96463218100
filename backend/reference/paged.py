"""Paged KV memory: the cache kept in fixed-size blocks found through a per-request table.

Two allocators over the same arena of token slots (`paged_replay.py` replays one seeded stream
of requests through both):

- `ContiguousKV` gives each sequence one contiguous region reserved for the longest it may grow
  (its prompt plus the maximum output), placed first-fit. What a sequence never writes is wasted,
  and the gaps left between regions may each be too small for the next reservation.
- `PagedKV` (Kwon et al. 2023, "Efficient Memory Management for Large Language Model Serving with
  PagedAttention", the vLLM paper) cuts the arena into blocks of `block_size` token slots, hands
  a sequence a block only when its last one is full, and records which physical blocks hold its
  logical blocks in a block table. Parallel samples of one prompt share the prompt's blocks
  (reference counts, copy-on-write on the first write into a shared block), and a prompt's full
  blocks are registered under a hash of their tokens so a later prompt with the same opening
  reuses them (prefix caching, whole blocks only).

Plain Python: an allocator moves integers (block ids, lengths), not tensors. The bytes a slot
stands for come from the book's own KVCache (`kv_levers.bytes_per_token`).
"""

from __future__ import annotations

from collections import deque


# --8<-- [start:pool]
class OutOfBlocks(RuntimeError):
    """The arena has no free block (paged) or no gap big enough (contiguous)."""


def cdiv(a: int, b: int) -> int:
    """Blocks needed for `a` tokens in blocks of `b`: the last, partly filled one counts."""
    return -(-a // b)


class BlockPool:
    """Physical blocks: a free list, a reference count and a fill count per block, and the
    hashes of the full prompt blocks that may be reused (prefix caching)."""

    def __init__(self, n_blocks: int, block_size: int):
        self.block_size = block_size
        self.free: deque[int] = deque(range(n_blocks))
        self.refs = [0] * n_blocks  # how many block tables point at this block
        self.fill = [0] * n_blocks  # token slots written in it, 0 .. block_size
        self.hash_of: list[int | None] = [None] * n_blocks
        self.by_hash: dict[int, int] = {}
        self.filled = 0  # slots holding a token, over all blocks in use
        self.shared = 0  # ... of them in blocks more than one table points at

    def take(self) -> int:
        if not self.free:
            raise OutOfBlocks("no free block")
        b = self.free.popleft()
        self.refs[b], self.fill[b] = 1, 0
        return b

    def share(self, b: int) -> None:
        self.refs[b] += 1
        self.shared += self.fill[b] if self.refs[b] == 2 else 0

    def write(self, b: int, n: int = 1) -> None:
        self.fill[b] += n
        self.filled += n
        self.shared += n if self.refs[b] > 1 else 0

    def release(self, b: int) -> None:
        self.refs[b] -= 1
        self.shared -= self.fill[b] if self.refs[b] == 1 else 0
        if self.refs[b] == 0:
            self.filled -= self.fill[b]  # the last table let go: the block is free again
            h, self.hash_of[b] = self.hash_of[b], None
            if h is not None and self.by_hash.get(h) == b:
                del self.by_hash[h]
            self.free.append(b)
# --8<-- [end:pool]


# --8<-- [start:paged]
def full_block_hashes(tokens: list[int], block_size: int) -> list[int]:
    """One hash per *full* block of `tokens`, each chained on the one before it, so a block
    matches only when everything before it matches too. A partly filled last block gets none."""
    hashes, prev = [], None
    for start in range(0, len(tokens) - block_size + 1, block_size):
        prev = hash((prev, tuple(tokens[start:start + block_size])))
        hashes.append(prev)
    return hashes


class PagedKV:
    """Block tables over a `BlockPool`: a sequence gets a new block only when its last is full."""

    def __init__(self, n_blocks: int, block_size: int):
        self.pool = BlockPool(n_blocks, block_size)
        self.bs = block_size
        self.tables: dict[object, list[int]] = {}  # sequence -> physical block ids, in order
        self.lengths: dict[object, int] = {}
        self.copies = 0  # copy-on-write copies made

    def add(self, seq, n_tokens: int, tokens: list[int] | None = None) -> int:
        """Prefill `n_tokens` (with their ids, if given, for prefix caching). Returns how many of
        them were found cached: whole blocks only, and never the last token, which must be
        computed again for its logits (so a prompt that is all cached still computes a block)."""
        pool, table = self.pool, []
        hashes = full_block_hashes(tokens[:n_tokens], self.bs) if tokens is not None else []
        for h in hashes[:(n_tokens - 1) // self.bs]:  # the longest run of cached full blocks
            if h not in pool.by_hash:
                break
            table.append(pool.by_hash[h])
        if cdiv(n_tokens, self.bs) - len(table) > len(pool.free):
            raise OutOfBlocks(f"{n_tokens} tokens need more blocks than are free")
        for b in table:
            pool.share(b)
        hit = len(table)
        while len(table) < cdiv(n_tokens, self.bs):
            b = pool.take()
            pool.write(b, min(self.bs, n_tokens - len(table) * self.bs))
            if len(table) < len(hashes):  # a full prompt block: others may reuse it
                pool.hash_of[b] = hashes[len(table)]
                pool.by_hash.setdefault(hashes[len(table)], b)
            table.append(b)
        self.tables[seq], self.lengths[seq] = table, n_tokens
        return hit * self.bs

    def append(self, seq) -> None:
        """Write one more token: a new block if the last is full, a private copy if it is shared."""
        table, n = self.tables[seq], self.lengths[seq]
        if n % self.bs == 0:
            table.append(self.pool.take())
        elif self.pool.refs[table[-1]] > 1:  # copy-on-write: others still read this block
            new = self.pool.take()
            self.pool.write(new, self.pool.fill[table[-1]])
            self.pool.release(table[-1])
            table[-1] = new
            self.copies += 1
        self.pool.write(table[-1])
        self.lengths[seq] = n + 1

    def fork(self, parent, child) -> None:
        """A second sample of the same prompt: the same blocks, one more reference each."""
        self.tables[child] = list(self.tables[parent])
        self.lengths[child] = self.lengths[parent]
        for b in self.tables[child]:
            self.pool.share(b)

    def free(self, seq) -> None:
        for b in reversed(self.tables.pop(seq)):
            self.pool.release(b)
        del self.lengths[seq]
# --8<-- [end:paged]

    def blocks_in_use(self) -> int:
        return len(self.pool.refs) - len(self.pool.free)

    def slots(self) -> tuple[int, int, int]:
        """(slots holding a token, slots in used blocks holding none, slots in shared blocks)."""
        pool = self.pool
        return pool.filled, self.blocks_in_use() * self.bs - pool.filled, pool.shared


# --8<-- [start:contiguous]
class ContiguousKV:
    """One region per sequence, reserved at its largest possible size, placed first-fit."""

    def __init__(self, n_slots: int):
        self.n_slots = n_slots
        self.regions: dict[object, tuple[int, int]] = {}  # sequence -> (start, size)
        self.lengths: dict[object, int] = {}

    def gaps(self) -> list[tuple[int, int]]:
        """Free (start, size) runs between the regions, in address order."""
        out, at = [], 0
        for start, size in sorted(self.regions.values()):
            if start > at:
                out.append((at, start - at))
            at = start + size
        if at < self.n_slots:
            out.append((at, self.n_slots - at))
        return out

    def add(self, seq, n_tokens: int, reserve: int) -> None:
        for start, size in self.gaps():
            if size >= reserve:
                self.regions[seq], self.lengths[seq] = (start, reserve), n_tokens
                return
        raise OutOfBlocks(f"no gap of {reserve} slots")

    def append(self, seq) -> None:
        if self.lengths[seq] == self.regions[seq][1]:
            raise OutOfBlocks("the sequence has filled its reservation")
        self.lengths[seq] += 1

    def free(self, seq) -> None:
        del self.regions[seq], self.lengths[seq]
# --8<-- [end:contiguous]


# ------------------------------------------------------------------------- worked examples

def prefix_hit(prompt: int, shared: int, block_size: int) -> int:
    """Tokens a second prompt finds cached when its first `shared` tokens equal a first
    prompt's (both `prompt` tokens long), through the allocator's own prefix cache."""
    first = list(range(prompt))
    second = first[:shared] + [prompt + i for i in range(prompt - shared)]
    kv = PagedKV(2 * cdiv(prompt, block_size), block_size)
    kv.add("first", prompt, first)
    return kv.add("second", prompt, second)


def fork_blocks(prompt: int, samples: int, block_size: int) -> tuple[int, int, int]:
    """(blocks held after each of `samples` samples of one prompt wrote its first token,
    the same without sharing, copy-on-write copies made)."""
    kv = PagedKV(samples * (cdiv(prompt, block_size) + 1), block_size)
    kv.add(0, prompt)
    for s in range(1, samples):
        kv.fork(0, s)
    for s in range(samples):
        kv.append(s)
    return kv.blocks_in_use(), samples * cdiv(prompt + 1, block_size), kv.copies


def one_request(tokens: int, block_size: int) -> tuple[int, int]:
    """(blocks, empty slots in its last block) for one request of `tokens` tokens."""
    kv = PagedKV(cdiv(tokens, block_size), block_size)
    kv.add(0, tokens)
    _, empty, _ = kv.slots()
    return len(kv.tables[0]), empty
