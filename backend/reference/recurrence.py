"""A recurrent network, and why its steps cannot run at the same time.

An RNN (Elman, 1990) reads one token per step and carries a hidden state h from each step to
the next: h_t = tanh(h_{t-1} W_h + x_t W_x + b). Step t needs step t-1's output, so the T steps
of a sequence run one after another, whatever the hardware. The same arithmetic with the
previous states known in advance is one matrix product over all T positions, which is the shape
of work a Transformer layer does during training. And on the way back, a gradient crossing T
steps is multiplied by one factor per step, so it shrinks or grows geometrically (Bengio,
Simard and Frasconi, 1994).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch


# --8<-- [start:rnn_step]
def rnn_step(h: torch.Tensor, x: torch.Tensor, W_h: torch.Tensor, W_x: torch.Tensor,
             b: torch.Tensor) -> torch.Tensor:
    """One step of the recurrence: the new state from the old state and one input."""
    # h: (d_h,)  x: (d_x,)  W_h: (d_h, d_h)  W_x: (d_x, d_h)  b: (d_h,)
    return torch.tanh(h @ W_h + x @ W_x + b)                      # (d_h,)
# --8<-- [end:rnn_step]


# --8<-- [start:one_after_another]
def one_after_another(X: torch.Tensor, W_h: torch.Tensor, W_x: torch.Tensor, b: torch.Tensor,
                      h0: torch.Tensor | None = None) -> torch.Tensor:
    """Run the RNN over a whole sequence; returns every state h_1 .. h_T."""
    T, d_h = X.shape[0], W_h.shape[0]                             # X: (T, d_x)
    h = torch.zeros(d_h, dtype=X.dtype, device=X.device) if h0 is None else h0
    states = []
    for t in range(T):
        h = rnn_step(h, X[t], W_h, W_x, b)                        # waits for step t-1
        states.append(h)
    return torch.stack(states)                                    # (T, d_h)
# --8<-- [end:one_after_another]


# --8<-- [start:all_at_once]
def all_at_once(H_prev: torch.Tensor, X: torch.Tensor, W_h: torch.Tensor, W_x: torch.Tensor,
                b: torch.Tensor) -> torch.Tensor:
    """The same T updates when every previous state is already known: no step waits."""
    # H_prev: (T, d_h), the states before each step: h_0 .. h_{T-1};  X: (T, d_x)
    return torch.tanh(H_prev @ W_h + X @ W_x + b)                 # (T, d_h)
# --8<-- [end:all_at_once]


# --8<-- [start:gradient_product]
def gradient_through_steps(factor: float, steps: int) -> list[float]:
    """d h_t / d h_0 for t = 0 .. steps, when each step scales the gradient by `factor`.

    The chain rule multiplies one local derivative d h_t / d h_{t-1} per step; for the
    recurrence h_t = factor * h_{t-1} every one of them is `factor`."""
    local = torch.full((steps,), factor, dtype=torch.float64)    # (steps,) one per step
    running = torch.cumprod(local, dim=0)                         # (steps,) product so far
    return [1.0] + running.tolist()                               # t = 0 needs no product
# --8<-- [end:gradient_product]


@dataclass(frozen=True)
class Timing:
    """Wall-clock milliseconds of repeated runs of both versions, interleaved.

    The reported time of each version is its *fastest* run. Load elsewhere on the machine (a
    pre-empted thread, a cache another process flushed) only ever adds time to a run, and it
    hits the long loop far more often than the short product, so a median or mean drifts up
    with the load and inflates the speed-up; the minimum is the least-disturbed run."""

    sequential_ms: tuple[float, ...]
    parallel_ms: tuple[float, ...]
    # Per run of the loop, the milliseconds of each stretch of its steps (`time_both`). A run of
    # a thousand steps lasts tens of milliseconds and on a busy machine is seldom left alone, so
    # no whole run is undisturbed; but a pre-emption lands in one stretch of one run, so the
    # loop's time is each stretch's fastest run, summed.
    stretches_ms: tuple[tuple[float, ...], ...] = ()

    @property
    def ms_sequential(self) -> float:
        if self.stretches_ms:
            return sum(min(runs) for runs in zip(*self.stretches_ms))
        return min(self.sequential_ms)

    @property
    def ms_parallel(self) -> float:
        return min(self.parallel_ms)

    @property
    def speedup(self) -> float:
        return self.ms_sequential / self.ms_parallel


def random_problem(length: int, width: int, generator: torch.Generator, device: str = "cpu",
                   dtype: torch.dtype = torch.float32):
    """Inputs, previous states and weights of one sequence, scaled so tanh does not saturate."""
    def draw(*shape, scale=1.0):
        return torch.randn(*shape, generator=generator, dtype=dtype).to(device) * scale
    X = draw(length, width)                                       # (T, d)
    H_prev = torch.tanh(draw(length, width))                      # (T, d), like real states
    W_h = draw(width, width, scale=width ** -0.5)                 # (d, d)
    W_x = draw(width, width, scale=width ** -0.5)                 # (d, d)
    b = torch.zeros(width, dtype=dtype).to(device)                # (d,)
    return X, H_prev, W_h, W_x, b


# --8<-- [start:timing]
MAX_STRETCHES = 40  # the loop is clocked at most this many times per run


def time_both(X, H_prev, W_h, W_x, b, repeats: int = 5, warmup: int = 1) -> Timing:
    """Time the loop and the single product on the same numbers, alternating runs so both are
    sampled over the same stretch of time. The loop is `one_after_another` with the clock read
    after every stretch of steps (at most MAX_STRETCHES per run); `Timing` reports the product's
    fastest run and the sum of each stretch's fastest run. GPU work is asynchronous:
    synchronise before reading the clock, or the clock measures only the launch."""
    sync = torch.cuda.synchronize if X.device.type == "cuda" else (lambda: None)
    T, d_h = X.shape[0], W_h.shape[0]
    stretch = -(-T // MAX_STRETCHES)                              # ceil(T / MAX_STRETCHES)

    def clocked_loop() -> tuple[float, ...]:
        marks = []
        sync()
        marks.append(time.perf_counter())
        h = torch.zeros(d_h, dtype=X.dtype, device=X.device)
        states = []
        for t in range(T):                                        # one_after_another's loop
            h = rnn_step(h, X[t], W_h, W_x, b)
            states.append(h)
            if (t + 1) % stretch == 0 and t + 1 < T:
                sync()
                marks.append(time.perf_counter())
        torch.stack(states)                                       # in the last stretch
        sync()
        marks.append(time.perf_counter())
        return tuple((end - start) * 1000 for start, end in zip(marks, marks[1:]))

    def clock(fn) -> float:
        sync()
        start = time.perf_counter()
        fn()
        sync()
        return (time.perf_counter() - start) * 1000

    seq, par = [], []
    with torch.no_grad():
        for i in range(warmup + repeats):
            s = clocked_loop()
            p = clock(lambda: all_at_once(H_prev, X, W_h, W_x, b))
            if i >= warmup:  # the first runs pay for allocation and kernel start-up
                seq.append(s)
                par.append(p)
    return Timing(tuple(sum(s) for s in seq), tuple(par), tuple(seq))
# --8<-- [end:timing]
