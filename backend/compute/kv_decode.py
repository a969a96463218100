"""Widget: greedy decoding with and without the KV cache, counted and timed step by step.

Generates `steps` tokens from a `prompt_len`-token prompt twice with `backend.reference.generate`
(cache on, cache off) on the book's trained model or on a small random reference model, and
reports the key rows each run computed (`GenerationResult.tokens_processed`: positions run
through the model, which is the key rows per layer per sequence) and the largest difference
between the two runs' logits (the tokens must be identical). Then it times every step of both
runs (`backend.reference.decode.step_times`, the same loop with each forward call clocked): the
figure draws time per step against the length of the text the step reads. Without a cache that
time climbs with the length, with one it stays about level, and a picture of a hundred steps
read through the fastest steps survives a noisy machine where one total does not. The totals and their
ratio are reported as secondary numbers.

Timings are taken one at a time on the whole host (`measure.timing_lock`), on one CPU thread,
and remembered per worker for MEASURE_TTL_SECONDS only; the API keeps an answer as long
(`SPEC.result_ttl`).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from functools import lru_cache

import torch

from backend import device
from backend.compute import measure as measure_lib
from backend.compute.kv_decode_models import (  # noqa: F401  (tests read them here)
    MAX_PROMPT,
    MAX_STEPS,
    RANDOM_CONFIG,
    model_for,
    prompt_for,
    random_model,
)
from backend.compute.measure import buckets, per_step, quarters, slope  # noqa: F401
from backend.compute.spec import Depends, Output, Param, WidgetSpec
from backend.compute.style import COLORS, base_layout, duration
from backend.reference import decode
from backend.reference.generate import GenerationResult, generate, token_steps

BOOK_MAX_STEPS = 96      # 32 prompt tokens + 96 steps stay inside the book model's 128 positions

SPEC = WidgetSpec(
    name="kv_decode",
    try_next=(
        "Change `steps` and compare the two curves: without the cache every new token runs the "
        "whole sequence again, so the gap between them grows with the number of tokens generated."
    ),
    title="Decoding with and without the KV cache",
    description="Time per step against position for greedy decoding with and without a KV "
                "cache, the key rows each computed, the totals, and the largest difference "
                "between the two runs' logits.",
    params=(
        Param("steps", "new tokens", "int", default=400, min=1, max=MAX_STEPS, step=1,
              unit="tokens",
              help="How many tokens to generate. Without a cache, step i re-runs every position "
                   "written so far.",
              depends=(Depends("model", {"book": {
                  "max": BOOK_MAX_STEPS, "note": "the book's model reads at most 128 positions"}}),)),
        Param("prompt_len", "prompt length", "int", default=1, min=1, max=MAX_PROMPT, step=1,
              unit="tokens", help="Tokens in the prompt: the cached run reads them all in its "
                                  "first step (prefill)."),
        Param("model", "model", "choice", default="random", options=("random", "book"),
              help="random: a 2-layer reference model with random weights (up to 400 steps); "
                   "book: the book's trained 4-layer model (up to 96 steps)."),
    ),
    outputs=(
        Output("step_ms_early_no_cache", "one step early on, no cache (fastest)", ".3g", "ms"),
        Output("step_ms_late_no_cache", "one step near the end, no cache (fastest)", ".3g", "ms"),
        Output("step_ms_early_cache", "one step early on, cache (fastest)", ".3g", "ms"),
        Output("step_ms_late_cache", "one step near the end, cache (fastest)", ".3g", "ms"),
        Output("key_rows_no_cache", "key rows computed, no cache", ",d"),
        Output("key_rows_cache", "key rows computed, cache", ",d"),
        Output("work_ratio", "work saved", ".1f", "×"),
        Output("ms_no_cache", "total time, no cache", ".3g", "ms"),
        Output("ms_cache", "total time, cache", ".3g", "ms"),
        Output("speedup", "speed-up in total", ".1f", "×"),
        Output("same_tokens", "same tokens both ways", ""),
        Output("max_logit_diff", "largest logit difference", ".2g"),
        Output("measured_on", "measured on", ""),
    ),
    # Baked for readers without the API: the default (the notebook's 400 steps), shorter runs on
    # the random model, the book's model at its own range, a few prompt lengths.
    bake=tuple({"steps": n} for n in (25, 100, 200))
    + tuple({"model": "book", "steps": n} for n in (25, 50))
    + ({"model": "book", "steps": 96, "prompt_len": 32},)  # the chapter's prefix check
    + tuple({"prompt_len": p} for p in (8, 32))
    + ({"prompt_len": 32, "steps": 1},),  # Exercise 2
    cost_hint="heavy",
    # Every bake point is in the page; warming them would cost each worker tens of seconds of
    # timing at start and hold the timing lock against the first readers.
    warm=False,
    measured=True,
    result_ttl=600,  # a timing is of one moment: the API keeps it ten minutes, not a day
)

# Work per request: the two runs once untimed (counts, logits, the filled cache; they are also
# the warm-up), then REPEATS step-timed runs of each (the fastest of three per step), but only
# as many as keep the uncached runs within TIMING_ROW_BUDGET key rows per layer, and never fewer
# than one: past about 270 steps each run is timed once, and the per-step picture is read through
# the fastest step of each stretch of steps instead. On an idle 2-core CPU a first request at 400 steps
# takes about a second; a repeated setting is answered from the worker's memory for
# MEASURE_TTL_SECONDS.
REPEATS = 3
TIMING_ROW_BUDGET = 75_000
MEASURE_TTL_SECONDS = 600
MAX_CURVE_POINTS = 60
MAX_BUCKETS = 40  # the per-step lines: the fastest step of at most this many stretches
HANDOUT_LENGTHS = (400, 800, 1000)  # the notebook's run, its "Try", a 1,000-token answer


def length_values() -> dict:
    """Key rows at 400, 800 and 1,000 tokens from a one-token prompt, from the closed form."""
    out = {}
    for n in HANDOUT_LENGTHS:
        out[f"rows_{n}_no_cache"] = token_steps(n, False)
        out[f"rows_{n}_cache"] = token_steps(n, True)
    return out


def repeats_for(steps: int, prompt_len: int) -> int:
    """Timed runs of each kind: REPEATS, fewer where that many uncached runs would pass the
    row budget, never fewer than one."""
    return max(1, min(REPEATS, TIMING_ROW_BUDGET // token_steps(steps, False, prompt_len)))


def measured_on() -> str:
    return measure_lib.measured_on(torch.float32)


@dataclass
class StepTiming:
    """Per-step milliseconds of each timed run (warm-up excluded), interleaved cached/uncached,
    and one untimed run of each for the counts, logits and cache."""

    cache_runs: tuple[tuple[float, ...], ...]     # (runs, steps)
    no_cache_runs: tuple[tuple[float, ...], ...]  # (runs, steps)
    with_cache: GenerationResult
    without_cache: GenerationResult
    timed_tokens_agree: bool  # the step-timed runs wrote the same tokens as generate
    timing_ms: float          # milliseconds the whole measurement took


@measure_lib.remembered_for(MEASURE_TTL_SECONDS, maxsize=64)
def measure(name: str, steps: int, prompt_len: int) -> StepTiming:
    model, prompt = model_for(name), prompt_for(name, prompt_len)
    dev = device.device()
    repeats = repeats_for(steps, prompt_len)
    agree = True
    runs: dict[bool, list[tuple[float, ...]]] = {True: [], False: []}
    with measure_lib.timing_lock(), measure_lib.one_cpu_thread(dev):
        t0 = time.perf_counter()
        # the untimed runs (counts, logits, the filled cache) are also the warm-up
        cached = generate(model, prompt, steps, use_cache=True, greedy=True)
        uncached = generate(model, prompt, steps, use_cache=False, greedy=True)
        for _ in range(repeats):
            for use_cache, ref in ((True, cached), (False, uncached)):
                ms, tokens = decode.step_times(model, prompt, steps, use_cache)
                runs[use_cache].append(tuple(ms))
                agree = agree and torch.equal(tokens, ref.tokens)
        timing_ms = (time.perf_counter() - t0) * 1000
    return StepTiming(tuple(runs[True]), tuple(runs[False]), cached, uncached, agree, timing_ms)


@lru_cache(maxsize=64)
def prefix_change(name: str, prompt_len: int, steps: int):
    """Per layer, how much the keys/values of the first positions move when one token is
    appended: under the causal mask, and with the mask removed (an encoder's rule); and, for
    the unmasked run, that change relative to the tensors' RMS and how many positions moved."""
    model = model_for(name)
    # one thread: a few small forward passes, which on two freshly woken threads of a busy CPU
    # took ~0.2 s each, against a few ms on one
    with measure_lib.one_cpu_thread(device.device()):
        # the text the runs wrote (greedy: the same every time)
        ids = generate(model, prompt_for(name, prompt_len), steps, use_cache=True,
                       greedy=True).tokens
        return (tuple(decode.prefix_kv_change(model, ids, causal=True)),
                tuple(decode.prefix_kv_change(model, ids, causal=False)),
                tuple(decode.prefix_kv_moves(model, ids, causal=False)), ids.size(1) - 1)


def step_values(t: StepTiming, P: int) -> dict:
    """What the per-step timing says: the per-step fastest times, their quarters and slopes, and the
    totals (the median over runs of each run's summed steps)."""
    xs = [P + i for i in range(len(t.cache_runs[0]))]  # the text's length when step i runs
    out: dict = {"step_positions": xs}
    for key, runs in (("no_cache", t.no_cache_runs), ("cache", t.cache_runs)):
        ms = per_step(runs)
        early, late = quarters(ms)
        totals = [sum(r) for r in runs]
        out.update({
            f"step_ms_{key}": ms,
            f"step_ms_early_{key}": early,
            f"step_ms_late_{key}": late,
            f"step_growth_{key}": late / early,
            f"step_slope_us_{key}": 1000 * slope(xs, ms),
            f"runs_{key}": totals,
            f"ms_{key}": statistics.median(totals),
            f"spread_{key}": [min(totals), max(totals)],
        })
    out["prefill_ms"] = out["step_ms_cache"][0]
    out["gap_early"] = out["step_ms_early_no_cache"] - out["step_ms_early_cache"]
    out["gap_late"] = out["step_ms_late_no_cache"] - out["step_ms_late_cache"]
    out["speedup"] = out["ms_no_cache"] / out["ms_cache"]
    out["repeats"] = len(t.cache_runs)
    return out


def compute(params: dict) -> dict:
    name, steps, P = params["model"], params["steps"], params["prompt_len"]
    t = measure(name, steps, P)
    cached, uncached = t.with_cache, t.without_cache
    causal, bidirectional, moves, prefix_len = prefix_change(name, P, steps)
    cfg = model_for(name).config
    positions = cached.cache.seq_len
    same = bool(torch.equal(cached.tokens, uncached.tokens)) and t.timed_tokens_agree
    values = {
        "key_rows_no_cache": uncached.tokens_processed,
        "key_rows_cache": cached.tokens_processed,
        "work_ratio": uncached.tokens_processed / cached.tokens_processed,
        **step_values(t, P),
        "tokens_identical": same,
        "same_tokens": "yes" if same else "no",
        "max_logit_diff": (cached.step_logits - uncached.step_logits).abs().max().item(),
        "cache_positions": positions,
        "cache_bytes": cached.cache.nbytes(),
        "cache_bytes_per_token": cached.cache.nbytes() // positions,
        "prefix_kv_change_causal": max(causal),
        "prefix_kv_change_bidirectional": list(bidirectional),
        "prefix_kv_relative_bidirectional": [rel for rel, _ in moves],
        "prefix_positions_moved_bidirectional": [n for _, n in moves],
        "prefix_positions": prefix_len,
        "timing_row_budget": TIMING_ROW_BUDGET,
        "timing_ms": t.timing_ms,
        "measure_ttl_s": MEASURE_TTL_SECONDS,
        "n_layers": cfg.n_layers,
        "n_kv_heads": cfg.n_kv_heads,
        "d_head": cfg.d_head,
        **length_values(),
        "device": device.device(),
        "measured_on": measured_on(),
    }
    return {
        "values": values,
        "figure": _figure(steps, P, values),
        "summary": _summary(name, steps, P, values),
        "table": _table(values),
    }


def _figure(steps: int, P: int, v: dict) -> dict:
    no, yes = COLORS["unscaled"], COLORS["scaled"]
    xs = v["step_positions"]
    data = []
    # left: time per step against the text's length, every step as a faint dot and the fastest
    # over stretches of steps as the line (a disturbed step moves a dot, not the line)
    for label, key, color in (("no cache", "no_cache", no), ("cache", "cache", yes)):
        ms = v["step_ms_" + key]
        mids, meds = buckets(xs, ms, MAX_BUCKETS)
        data.append({"type": "scatter", "mode": "markers", "x": xs, "y": ms,
                     "name": f"{label}, each step", "showlegend": False,
                     "marker": {"color": color, "size": 3, "opacity": 0.35},
                     "hovertemplate": "text of %{x} tokens: %{y:.3g} ms<extra>" + label + "</extra>"})
        data.append({"type": "scatter", "mode": "lines" if len(mids) > 2 else "lines+markers",
                     "x": mids, "y": meds, "name": f"{label}: time per step",
                     "line": {"color": color, "width": 3},
                     "hovertemplate": "around %{x:.0f} tokens: fastest %{y:.3g} ms<extra>" + label + "</extra>"})
    # right: the key rows each run has computed after n steps, the formula and the runs' counts
    cs = _curve_steps(steps)
    mode = "lines" if len(cs) > 2 else "lines+markers"
    data += [
        {"type": "scatter", "mode": mode, "x": cs, "y": [token_steps(n, False, P) for n in cs],
         "name": "no cache, key rows", "line": {"color": no, "width": 2, "dash": "dot"},
         "xaxis": "x2", "yaxis": "y2", "showlegend": False,
         "hovertemplate": "after %{x} steps: %{y:,} key rows<extra>no cache</extra>"},
        {"type": "scatter", "mode": mode, "x": cs, "y": [token_steps(n, True, P) for n in cs],
         "name": "cache, key rows", "line": {"color": yes, "width": 2, "dash": "dot"},
         "xaxis": "x2", "yaxis": "y2", "showlegend": False,
         "hovertemplate": "after %{x} steps: %{y:,} key rows<extra>cache</extra>"},
        {"type": "scatter", "mode": "markers", "x": [steps, steps],
         "y": [v["key_rows_no_cache"], v["key_rows_cache"]], "name": "key rows counted by the runs",
         "xaxis": "x2", "yaxis": "y2",
         "marker": {"size": 11, "symbol": "circle-open", "color": COLORS["accent"],
                    "line": {"width": 3}},
         "hovertemplate": "%{y:,} key rows counted<extra></extra>"},
    ]
    lines = [d["y"] for d in data[:4] if d["name"].endswith("time per step")]
    top = max(max(y) for y in lines) * 1.3  # the lines set the scale; a stray slow dot is cut off
    yaxis2 = {"type": "log", "title": {"text": "key rows computed (per layer)"}, "automargin": True,
              "anchor": "x2"}
    if v["key_rows_no_cache"] >= 10 * min(P, v["key_rows_cache"]):
        yaxis2["dtick"] = 1  # label the powers of ten only, not 2 and 5 in every decade
    layout = base_layout(
        420,
        xaxis={"domain": [0, 0.56], "title": {"text": "tokens in the text at this step"}},
        yaxis={"range": [0, top], "title": {"text": "time of one step (ms)"}, "automargin": True},
        xaxis2={"domain": [0.72, 1], "anchor": "y2", "title": {"text": "steps"},
                "rangemode": "tozero"},
        yaxis2=yaxis2,
        annotations=[
            {"text": _step_text(v), "showarrow": False,
             "x": 0.28, "y": 1.08, "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": _rows_text(steps, v["work_ratio"]) + "<br>" + _speed_text(v["speedup"]),
             "showarrow": False, "x": 0.86, "y": 1.1, "xref": "paper", "yref": "paper",
             "xanchor": "center"},
        ],
    )
    narrow = {
        "height": 760,
        "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.52, 1]},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.32]},
        "legend": {"y": -0.12},
        # the left panel's note in two lines: in one it runs past a phone's edge
        "annotations": [{**layout["annotations"][0], "text": _step_text(v).replace(": ", ":<br>", 1),
                         "x": 0.5, "y": 1.0, "yanchor": "bottom"},
                        {**layout["annotations"][1], "x": 0.5, "y": 0.4}],
        "margin": {"t": 50},
    }
    return {"data": data, "layout": layout, "narrow": narrow}


def _curve_steps(steps: int) -> list[int]:
    stride = max(1, math.ceil(steps / MAX_CURVE_POINTS))
    xs = list(range(1, steps + 1, stride))
    return xs if xs[-1] == steps else xs + [steps]


def _speed_text(speedup: float) -> str:
    """"in total: cache 2.9× faster", or "... 1.1× slower" when the cached run lost."""
    if 1 / 1.1 < speedup < 1.1:  # "1.0× slower" says nothing: show the two decimals
        return f"in total: cache {speedup:.2f}× as fast"
    return (f"in total: cache {speedup:.1f}× faster" if speedup >= 1
            else f"in total: cache {1 / speedup:.1f}× slower")


def _rows_text(steps: int, ratio: float) -> str:
    n = f"{steps} step" + ("" if steps == 1 else "s")
    return f"{n}: no key rows saved" if ratio == 1 else f"{n}: {ratio:.1f}× fewer key rows"


def _step_text(v: dict) -> str:
    """What the left panel shows, in numbers: the last quarter's step against the first's."""
    if len(v["step_positions"]) < 5:
        return "too few steps to see a trend"
    return (f"last quarter against first: no cache ×{v['step_growth_no_cache']:.1f}, "
            f"cache ×{v['step_growth_cache']:.1f}")


def _num(ms: float) -> str:
    """Milliseconds as a reader writes them: 2,485 and 833, but 0.512."""
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}"


def _ms(ms: float) -> str:
    return duration(ms)


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def _runs(n: int) -> str:
    return "one run" if n == 1 else f"{n} runs"


def _summary(name: str, steps: int, P: int, v: dict) -> str:
    which = "the book's model" if name == "book" else "the random reference model"
    same = "the same tokens" if v["tokens_identical"] else "different tokens"
    how = "the fastest of" if v["repeats"] > 1 else "from"
    return (f"Generating {_count(steps, 'token')} from a {P}-token prompt with {which}, on "
            f"{v['measured_on']} ({how} {_runs(v['repeats'])} of each): one step took "
            f"{_ms(v['step_ms_early_no_cache'])} early on and {_ms(v['step_ms_late_no_cache'])} "
            f"near the end without a cache, {_ms(v['step_ms_early_cache'])} and "
            f"{_ms(v['step_ms_late_cache'])} with one (the fastest steps of the first and last "
            f"quarter). In total {_ms(v['ms_no_cache'])} against {_ms(v['ms_cache'])}, for "
            f"{_count(v['key_rows_no_cache'], 'key row')} per layer against "
            f"{v['key_rows_cache']:,}. "
            f"Both wrote {same}, with logits at most {v['max_logit_diff']:.2g} apart.")


def _table(v: dict) -> dict:
    rows = [[label, f"{v['key_rows_' + key]:,}", _num(v['step_ms_early_' + key]),
             _num(v['step_ms_late_' + key]), _num(v['ms_' + key])]
            for label, key in (("no cache", "no_cache"), ("cache", "cache"))]
    return {"caption": f"Key rows per layer and time per step (the fastest steps of the first "
                       f"and last quarter), {_runs(v['repeats'])} of each, on "
                       f"{v['measured_on']}",
            "columns": ["run", "key rows computed", "one step, first quarter (ms)",
                        "one step, last quarter (ms)", "total (ms)"],
            "rows": rows}
