"""Paged KV memory: the cache kept in fixed-size blocks found through a per-request table.

Two allocators over the same arena of token slots, replaying the same seeded stream of requests:

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

import random
from collections import deque
from dataclasses import dataclass, field


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


# ------------------------------------------------------------------------------------ replay

@dataclass(frozen=True)
class Request:
    prompt: int  # tokens in the prompt, shared by every sample
    outputs: tuple[int, ...]  # tokens each parallel sample will write before it stops


def request_stream(seed: int, mean_len: int, max_len: int, samples: int):
    """An endless seeded stream of requests. Prompt and output lengths are each drawn from an
    exponential distribution of mean `mean_len / 2` (many short, a few long), clipped so that a
    prompt plus any of its outputs is at most `max_len` tokens."""
    rng = random.Random(seed)
    while True:
        prompt = min(max_len - 1, 1 + int(rng.expovariate(2 / mean_len)))
        outs = tuple(min(max_len - prompt, 1 + int(rng.expovariate(2 / mean_len)))
                     for _ in range(samples))
        yield Request(prompt, outs)


@dataclass
class Replay:
    """Time-averaged slot counts over the measured steps, and the arena at the last step."""

    scheme: str
    n_slots: int
    tokens: float = 0.0  # slots holding a real token (a shared token once)
    internal: float = 0.0  # slots inside an allocation that hold no token now
    never: float = 0.0  # ... of which no token will ever fill (the sequence stops first)
    free: float = 0.0  # free slots, too few (paged) or in gaps too small (contiguous) to admit
    shared: float = 0.0  # slots holding a token that several sequences read
    running: float = 0.0  # requests running at once
    finished: int = 0  # requests finished during the measured steps
    preempted: int = 0  # requests sent back to the queue for lack of blocks (paged)
    copies: int = 0  # copy-on-write copies (paged)
    measured_steps: int = 0
    snapshot: list[int] = field(default_factory=list)  # per slot: a `SLOT` code


def steps_for(mean_len: int) -> int:
    """Long enough for requests of this mean length to come and go a few times: 4 mean lengths,
    from 256 to 4,096 steps. The work is then about steps x running samples, a few times the
    arena's slots, whatever the lengths."""
    return max(256, min(4096, 4 * mean_len))


SLOT = {"free": 0, "token": 1, "reserved": 2, "never": 3, "shared": 4}


# --8<-- [start:replay]
def replay(scheme: str, n_slots: int, block_size: int, mean_len: int, max_len: int,
           samples: int = 1, steps: int | None = None, seed: int = 0) -> Replay:
    """Serve an always-waiting queue of requests for `steps` decode steps and measure the second
    half. Each step admits requests first in, first out while they fit, then every running
    sample writes one token; a sample that has written its output is freed."""
    steps = steps_for(mean_len) if steps is None else steps
    stream = request_stream(seed, mean_len, max_len, samples)
    queue: deque[Request] = deque()
    running: dict[int, tuple[Request, list[int]]] = {}  # id -> (request, samples still going)
    paged = scheme == "paged"
    kv = PagedKV(n_slots // block_size, block_size) if paged else ContiguousKV(n_slots)
    out, next_id = Replay(scheme, n_slots), 0
    for step in range(steps):
        while True:  # admit
            if not queue:
                queue.append(next(stream))
            req = queue[0]
            try:
                if paged:  # the prompt once, plus room for each sample's first new token
                    if cdiv(req.prompt, block_size) + samples > len(kv.pool.free):
                        break
                    kv.add((next_id, 0), req.prompt)
                    for s in range(1, samples):
                        kv.fork((next_id, 0), (next_id, s))
                else:  # each sample its own region, for the longest it may grow
                    placed = []
                    for s in range(samples):
                        try:
                            kv.add((next_id, s), req.prompt, max_len)
                        except OutOfBlocks:
                            for p in placed:
                                kv.free(p)
                            raise
                        placed.append((next_id, s))
            except OutOfBlocks:
                break
            queue.popleft()
            running[next_id] = (req, list(range(samples)))
            next_id += 1
        for rid in list(running):  # decode: one token per running sample
            if rid not in running:
                continue  # preempted earlier in this step
            req, live = running[rid]
            for s in list(live):
                if not _write(kv, running, queue, rid, s, out, step >= steps // 2):
                    break  # this request itself went back to the queue
                if kv.lengths[(rid, s)] == req.prompt + req.outputs[s]:
                    kv.free((rid, s))
                    live.remove(s)
            if rid in running and not live:
                del running[rid]
                out.finished += step >= steps // 2
        if step >= steps // 2:
            _measure(out, kv, running, paged)
# --8<-- [end:replay]
    n = out.measured_steps
    for name in ("tokens", "internal", "never", "free", "shared", "running"):
        setattr(out, name, getattr(out, name) / n)
    out.copies = kv.copies if paged else 0
    out.snapshot = _snapshot(kv, running, paged, n_slots)
    return out


def _write(kv, running: dict, queue: deque, rid: int, s: int, out: Replay, counted: bool) -> bool:
    """One token for sample `s` of request `rid`. Out of blocks (paged only), the newest running
    request goes back to the front of the queue, to start over later, and the write is retried.
    False when the newest was `rid` itself."""
    while True:
        try:
            kv.append((rid, s))
            return True
        except OutOfBlocks:
            victim = max(running)
            vreq, vlive = running.pop(victim)
            for vs in vlive:
                kv.free((victim, vs))
            queue.appendleft(vreq)
            out.preempted += counted
            if victim == rid:
                return False


def _measure(out: Replay, kv, running: dict, paged: bool) -> None:
    out.measured_steps += 1
    out.running += len(running)
    if paged:
        tokens, empty, shared = kv.slots()
        # a last block's empty slots: the sequence may write some, but never past the block
        out.tokens, out.internal, out.shared = (out.tokens + tokens, out.internal + empty,
                                                out.shared + shared)
        out.free += len(kv.pool.free) * kv.bs
        out.never += _paged_never(kv, running)
        return
    tokens = sum(kv.lengths.values())
    reserved = sum(size for _, size in kv.regions.values())
    out.tokens += tokens
    out.internal += reserved - tokens
    out.never += sum(kv.regions[(rid, s)][1] - req.prompt - req.outputs[s]
                     for rid, (req, live) in running.items() for s in live)
    out.free += kv.n_slots - reserved


def _paged_never(kv: PagedKV, running: dict) -> int:
    """Slots of the blocks in use that no token will fill: each live sample's final last block
    is only partly written, and only that block is wasted for good (counted when it is the last
    block already held)."""
    never = 0
    for rid, (req, live) in running.items():
        for s in live:
            final = req.prompt + req.outputs[s]
            if cdiv(final, kv.bs) == len(kv.tables[(rid, s)]):
                never += cdiv(final, kv.bs) * kv.bs - final
    return never


def _snapshot(kv, running: dict, paged: bool, n_slots: int) -> list[int]:
    cells = [SLOT["free"]] * n_slots
    if paged:
        bs = kv.bs
        for b, refs in enumerate(kv.pool.refs):
            if refs:
                fill = kv.pool.fill[b]
                code = SLOT["shared"] if refs > 1 else SLOT["token"]
                cells[b * bs:b * bs + fill] = [code] * fill
                cells[b * bs + fill:(b + 1) * bs] = [SLOT["reserved"]] * (bs - fill)
        return cells
    for (rid, s), (start, size) in kv.regions.items():
        req = running[rid][0]
        n, final = kv.lengths[(rid, s)], req.prompt + req.outputs[s]
        cells[start:start + n] = [SLOT["token"]] * n
        cells[start + n:start + final] = [SLOT["reserved"]] * (final - n)
        cells[start + final:start + size] = [SLOT["never"]] * (size - final)
    return cells


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
