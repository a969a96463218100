"""The replay behind the paged-KV widget: one endless, seeded stream of requests served by
`ContiguousKV` and by `PagedKV` (`paged.py`) over the same arena, with the arena's slots counted
at every measured step (tokens, reserved, never written, free, shared).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from .paged import ContiguousKV, OutOfBlocks, PagedKV, cdiv


@dataclass(frozen=True)
class Request:
    prompt: int  # tokens in the prompt, shared by every sample
    outputs: tuple[int, ...]  # tokens each parallel sample will write before it stops
    # tokens each sample had written when the request was preempted (empty: never run). They are
    # kept, and their keys and values computed again with the prompt's when it is admitted again
    written: tuple[int, ...] = ()


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


def stream_lengths(seed: int, mean_len: int, max_len: int, n: int = 20_000) -> tuple[float, float]:
    """The first `n` requests of the stream (one sample each): their mean length, prompt plus
    answer, and the share cut at `max_len`. Near the maximum many requests are cut there, so
    their mean falls below `mean_len`."""
    stream = request_stream(seed, mean_len, max_len, 1)
    lengths = [r.prompt + r.outputs[0] for r in (next(stream) for _ in range(n))]
    return sum(lengths) / n, sum(length == max_len for length in lengths) / n


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
    victims_written: int = 0  # tokens the preempted requests had written, all samples together
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
           samples: int = 1, steps: int | None = None, seed: int = 0,
           watermark: float = 0.0) -> Replay:
    """Serve an always-waiting queue of requests for `steps` decode steps and measure the second
    half. Each step admits requests first in, first out while they fit, then every running
    sample writes one token; a sample that has written its output is freed. `watermark`: the
    share of the paged arena's blocks that admission leaves free (vLLM's scheduler keeps 1%)."""
    steps = steps_for(mean_len) if steps is None else steps
    stream = request_stream(seed, mean_len, max_len, samples)
    queue: deque[Request] = deque()
    running: dict[int, tuple[Request, list[int]]] = {}  # id -> (request, samples still going)
    paged = scheme == "paged"
    kv = PagedKV(n_slots // block_size, block_size) if paged else ContiguousKV(n_slots)
    reserve = int(watermark * (n_slots // block_size)) if paged else 0
    out, next_id = Replay(scheme, n_slots), 0
    for step in range(steps):
        while True:  # admit
            if not queue:
                queue.append(next(stream))
            req = queue[0]
            if not _admit(kv, req, next_id, paged, max_len, reserve):
                break
            queue.popleft()
            running[next_id] = (req, list(range(len(req.outputs))))
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


def _admit(kv, req: Request, rid: int, paged: bool, max_len: int, reserve: int) -> bool:
    """Place request `rid` if it fits, else place nothing. Paged: the prompt once (its blocks
    shared by every sample), each sample's tokens written before a preemption, and then room
    for each sample's next token plus `reserve` blocks still free. Contiguous: each sample its
    own region, for the longest it may grow."""
    placed = []
    try:
        if paged:
            kv.add((rid, 0), req.prompt)
            placed.append((rid, 0))
            for s in range(1, len(req.outputs)):
                kv.fork((rid, 0), (rid, s))
                placed.append((rid, s))
            for s, written in enumerate(req.written):  # one prefill with the prompt
                for _ in range(written):
                    kv.append((rid, s))
            if len(kv.pool.free) < len(req.outputs) + reserve:
                raise OutOfBlocks("no room left for the next tokens")
        else:
            for s in range(len(req.outputs)):
                kv.add((rid, s), req.prompt, max_len)
                placed.append((rid, s))
    except OutOfBlocks:
        for p in placed:
            kv.free(p)
        return False
    return True


def _write(kv, running: dict, queue: deque, rid: int, s: int, out: Replay, counted: bool) -> bool:
    """One token for sample `s` of request `rid`. Out of blocks (paged only), the newest running
    request gives up its blocks and goes back to the front of the queue with the tokens it has
    written (recompute preemption, as vLLM's), and the write is retried. False when the newest
    was `rid` itself."""
    while True:
        try:
            kv.append((rid, s))
            return True
        except OutOfBlocks:
            victim = max(running)
            vreq, vlive = running.pop(victim)
            written = tuple(kv.lengths[(victim, vs)] - vreq.prompt for vs in vlive)
            for vs in vlive:
                kv.free((victim, vs))
            # the samples still going, each with the tokens it has written so far
            queue.appendleft(Request(vreq.prompt, tuple(vreq.outputs[vs] for vs in vlive), written))
            out.preempted += counted
            out.victims_written += counted * sum(written)
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
