"""Widget: greedy decoding with and without the KV cache, counted and timed.

Generates `steps` tokens from a `prompt_len`-token prompt twice with `backend.reference.generate`
(cache on, cache off) on the book's trained model or on a small random reference model, and
reports the key rows each run computed (`GenerationResult.tokens_processed`: positions run
through the model, which is the key rows per layer per sequence), the wall-clock time of each
(`backend.reference.decode.time_decode`: warm-up, interleaved repeats, median and spread), and
the largest difference between the two runs' logits (the tokens must be identical).

Timings are taken one at a time on the whole host (`measure.timing_lock`), on one CPU thread,
and remembered per worker for each (model, steps, prompt length).
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from functools import lru_cache

import torch

from backend import device
from backend.reference import decode
from backend.reference.config import ModelConfig
from backend.reference.generate import token_steps
from backend.reference.model import DecoderLM
from backend.widgets import measure as measure_lib
from backend.widgets.spec import Depends, Output, Param, WidgetSpec
from backend.widgets.style import COLORS, base_layout

BOOK_MAX_STEPS = 96      # 32 prompt tokens + 96 steps stay inside the book model's 128 positions
MAX_STEPS = 400          # the handout's run (see the work note under REPEATS)
MAX_PROMPT = 32

SPEC = WidgetSpec(
    name="kv_decode",
    title="Decoding with and without the KV cache",
    description="Key rows computed and wall-clock time of greedy decoding with and without a "
                "KV cache, and the largest difference between the two runs' logits.",
    params=(
        Param("steps", "new tokens", "int", default=100, min=1, max=MAX_STEPS, step=1,
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
        Output("key_rows_no_cache", "key rows computed, no cache", ",d"),
        Output("key_rows_cache", "key rows computed, cache", ",d"),
        Output("work_ratio", "work saved", ".1f", "×"),
        Output("ms_no_cache", "time, no cache (median)", ".3g", "ms"),
        Output("ms_cache", "time, cache (median)", ".3g", "ms"),
        Output("speedup", "speed-up (medians)", ".1f", "×"),
        Output("same_tokens", "same tokens both ways", ""),
        Output("max_logit_diff", "largest logit difference", ".2g"),
        Output("measured_on", "measured on", ""),
    ),
    # Baked for readers without the API: the handout's 400 and a sweep below it on the random
    # model, the book's model at its own range, a few prompt lengths.
    bake=tuple({"steps": n} for n in (25, 50, 96, 200, 400))
    + tuple({"model": "book", "steps": n} for n in (25, 50, 96))
    + tuple({"prompt_len": p} for p in (8, 32))
    + ({"prompt_len": 32, "steps": 1},),  # Exercise 2
    cost_hint="heavy",
    # Every bake point is in the page; warming them would cost each worker tens of seconds of
    # timing at start and hold the timing lock against the first readers.
    warm=False,
)

# The random reference model: small, so its time is mostly the per-step work every decoder pays
# (one forward call per step), which is what the cache saves.
RANDOM_CONFIG = ModelConfig(vocab_size=256, d_model=32, n_layers=2, n_heads=2, n_kv_heads=1,
                            d_ff=64, max_seq_len=MAX_PROMPT + MAX_STEPS)
RANDOM_SEED = 0
# Work per request: a short warm-up of each run, then REPEATS runs of each (a median and a
# spread need three), but only as many as keep the uncached runs within TIMING_ROW_BUDGET key
# rows per layer, and never fewer than one: past about 270 steps each run is timed once. So a
# request times at most max(TIMING_ROW_BUDGET, 92,600) uncached key rows (one run at 400 steps
# from 32 prompt tokens) plus the cheap cached runs. On an idle 2-core CPU a first request at
# 400 steps then takes under a second (it took 2-10 s with three runs), the default (100 steps,
# three runs) about a third of one; a repeated setting is answered from the worker's memory.
REPEATS = 3
TIMING_ROW_BUDGET = 75_000
WARMUP_STEPS = 8
PROMPT_TEXT_SEED = 0
MAX_CURVE_POINTS = 60
HANDOUT_LENGTHS = (400, 800, 1000)  # handout 003: the exercise, its "Try", the token-step box


def handout_values() -> dict:
    """Handout 003's token-step counts (one-token prompt), from the same closed form."""
    out = {}
    for n in HANDOUT_LENGTHS:
        out[f"handout_rows_{n}_no_cache"] = token_steps(n, False)
        out[f"handout_rows_{n}_cache"] = token_steps(n, True)
    return out


@lru_cache(maxsize=2)
def model_for(name: str) -> DecoderLM:
    dev = device.device()
    if name == "book":
        from backend.bookmodel.load import shared_model
        model = shared_model()[0]
        # `.to` moves a module in place: other widgets share this one on the CPU, so a GPU gets
        # its own copy
        return model if dev == "cpu" else copy.deepcopy(model).to(dev)
    torch.manual_seed(RANDOM_SEED)
    return DecoderLM(RANDOM_CONFIG).eval().to(dev)


def prompt_for(name: str, prompt_len: int) -> torch.Tensor:
    """(1, prompt_len) ids: the start of a held-out sentence for the book's model, a seeded
    draw for the random one."""
    if name == "book":
        from backend.bookmodel.load import heldout_sentences, shared_model
        tok = shared_model()[1]
        ids = tok.encode(" ".join(heldout_sentences()[:4])).ids[:prompt_len]
    else:
        g = torch.Generator().manual_seed(PROMPT_TEXT_SEED)
        ids = torch.randint(0, RANDOM_CONFIG.vocab_size, (prompt_len,), generator=g).tolist()
    return torch.tensor([ids], device=device.device())


def repeats_for(steps: int, prompt_len: int) -> int:
    """Timed runs of each kind: REPEATS, fewer where that many uncached runs would pass the
    row budget, never fewer than one."""
    return max(1, min(REPEATS, TIMING_ROW_BUDGET // token_steps(steps, False, prompt_len)))


def measured_on() -> str:
    return measure_lib.measured_on(torch.float32)


@lru_cache(maxsize=64)
def measure(name: str, steps: int, prompt_len: int) -> tuple[decode.DecodeTiming, float]:
    """The timing, and the milliseconds it took (warm-up and every timed run together)."""
    model, prompt = model_for(name), prompt_for(name, prompt_len)
    dev = device.device()
    with measure_lib.timing_lock(), measure_lib.one_cpu_thread(dev):
        t0 = time.perf_counter()
        t = decode.time_decode(model, prompt, steps, repeats=repeats_for(steps, prompt_len),
                               warmup_steps=WARMUP_STEPS)
        return t, (time.perf_counter() - t0) * 1000


@lru_cache(maxsize=64)
def prefix_change(name: str, prompt_len: int, steps: int):
    """Per layer, how much the keys/values of the first positions move when one token is
    appended: under the causal mask, and with the mask removed (an encoder's rule); and, for
    the unmasked run, that change relative to the tensors' RMS and how many positions moved."""
    model = model_for(name)
    ids = measure(name, steps, prompt_len)[0].with_cache.tokens  # the text the runs wrote
    # one thread here too: a few small forward passes, which on two freshly woken threads of a
    # busy CPU took ~0.2 s each, against a few ms on one
    with measure_lib.one_cpu_thread(device.device()):
        return (tuple(decode.prefix_kv_change(model, ids, causal=True)),
                tuple(decode.prefix_kv_change(model, ids, causal=False)),
                tuple(decode.prefix_kv_moves(model, ids, causal=False)), ids.size(1) - 1)


def compute(params: dict) -> dict:
    name, steps, P = params["model"], params["steps"], params["prompt_len"]
    t, timing_ms = measure(name, steps, P)
    cached, uncached = t.with_cache, t.without_cache
    causal, bidirectional, moves, prefix_len = prefix_change(name, P, steps)
    cfg = model_for(name).config
    positions = cached.cache.seq_len
    values = {
        "key_rows_no_cache": uncached.tokens_processed,
        "key_rows_cache": cached.tokens_processed,
        "work_ratio": uncached.tokens_processed / cached.tokens_processed,
        "ms_no_cache": statistics.median(t.no_cache_ms),
        "ms_cache": statistics.median(t.cache_ms),
        "spread_no_cache": [min(t.no_cache_ms), max(t.no_cache_ms)],
        "spread_cache": [min(t.cache_ms), max(t.cache_ms)],
        "runs_no_cache": list(t.no_cache_ms),
        "runs_cache": list(t.cache_ms),
        "repeats": len(t.cache_ms),
        "speedup": statistics.median(t.no_cache_ms) / statistics.median(t.cache_ms),
        "tokens_identical": bool(torch.equal(cached.tokens, uncached.tokens)),
        "same_tokens": "yes" if torch.equal(cached.tokens, uncached.tokens) else "no",
        "max_logit_diff": (cached.step_logits - uncached.step_logits).abs().max().item(),
        "cache_positions": positions,
        "cache_bytes": t.cache_bytes,
        "cache_bytes_per_token": t.cache_bytes // positions,
        "prefix_kv_change_causal": max(causal),
        "prefix_kv_change_bidirectional": list(bidirectional),
        "prefix_kv_relative_bidirectional": [rel for rel, _ in moves],
        "prefix_positions_moved_bidirectional": [n for _, n in moves],
        "prefix_positions": prefix_len,
        "timing_row_budget": TIMING_ROW_BUDGET,
        "timing_ms": timing_ms,
        "n_layers": cfg.n_layers,
        "n_kv_heads": cfg.n_kv_heads,
        "d_head": cfg.d_head,
        **handout_values(),
        "device": device.device(),
        "measured_on": measured_on(),
    }
    return {
        "values": values,
        "figure": _figure(steps, P, values),
        "summary": _summary(name, steps, P, values),
        "table": _table(values),
    }


def _curve_steps(steps: int) -> list[int]:
    stride = max(1, math.ceil(steps / MAX_CURVE_POINTS))
    xs = list(range(1, steps + 1, stride))
    return xs if xs[-1] == steps else xs + [steps]


def _speed_text(speedup: float) -> str:
    """"2.9× faster", or "1.1× slower" when the cached run lost."""
    return f"cache {speedup:.1f}× faster" if speedup >= 1 else f"cache {1 / speedup:.1f}× slower"


def _rows_text(steps: int, ratio: float) -> str:
    n = f"{steps} step" + ("" if steps == 1 else "s")
    return f"{n}: no key rows saved" if ratio == 1 else f"{n}: {ratio:.1f}× fewer key rows"


def _figure(steps: int, P: int, v: dict) -> dict:
    xs = _curve_steps(steps)
    # a curve of one or two points draws no visible line: mark its points
    mode = "lines" if len(xs) > 2 else "lines+markers"
    no, yes, guide = COLORS["unscaled"], COLORS["scaled"], COLORS["guide"]
    data = [
        {"type": "scatter", "mode": mode, "x": xs, "y": [token_steps(n, False, P) for n in xs],
         "name": "no cache (formula)", "line": {"color": no, "width": 2},
         "hovertemplate": "after %{x} steps: %{y:,} key rows<extra>no cache</extra>"},
        {"type": "scatter", "mode": mode, "x": xs, "y": [token_steps(n, True, P) for n in xs],
         "name": "cache (formula)", "line": {"color": yes, "width": 2},
         "hovertemplate": "after %{x} steps: %{y:,} key rows<extra>cache</extra>"},
        {"type": "scatter", "mode": "markers", "x": [steps, steps],
         "y": [v["key_rows_no_cache"], v["key_rows_cache"]], "name": "counted by the runs",
         "marker": {"size": 12, "symbol": "circle-open", "color": COLORS["accent"],
                    "line": {"width": 3}},
         "hovertemplate": "%{y:,} key rows counted<extra></extra>"},
    ]
    labels = ["no cache", "cache"]
    for label, key, color in zip(labels, ("no_cache", "cache"), (no, yes)):
        lo, hi = v["spread_" + key]
        med = v["ms_" + key]
        data.append({"type": "bar", "x": [label], "y": [med], "name": f"{label} (median)",
                     "marker": {"color": color}, "showlegend": False, "xaxis": "x2",
                     "yaxis": "y2", "error_y": {"type": "data", "symmetric": False,
                                                "array": [hi - med], "arrayminus": [med - lo],
                                                "color": guide},
                     "text": [f"{med:.3g} ms"], "textposition": "outside", "cliponaxis": False,
                     "hovertemplate": "%{x}: median %{y:.3g} ms<extra></extra>"})
        data.append({"type": "scatter", "mode": "markers", "x": [label] * v["repeats"],
                     "y": v["runs_" + key], "name": f"{label}, each run", "showlegend": False,
                     "marker": {"color": guide, "size": 5}, "xaxis": "x2", "yaxis": "y2",
                     "hovertemplate": "one run: %{y:.3g} ms<extra></extra>"})
    top = max(v["runs_no_cache"] + v["runs_cache"]) * 1.25
    yaxis = {"type": "log", "title": {"text": "key rows computed (per layer)"}, "automargin": True}
    if v["key_rows_no_cache"] >= 10 * min(P, v["key_rows_cache"]):
        yaxis["dtick"] = 1  # label the powers of ten only, not 2 and 5 in every decade
    layout = base_layout(
        420,
        xaxis={"domain": [0, 0.55], "title": {"text": "tokens generated"}, "rangemode": "tozero"},
        yaxis=yaxis,
        xaxis2={"domain": [0.68, 1], "anchor": "y2", "type": "category"},
        yaxis2={"anchor": "x2", "range": [0, top], "title": {"text": "time (ms)", "standoff": 4}},
        annotations=[
            {"text": _rows_text(steps, v["work_ratio"]), "showarrow": False,
             "x": 0.27, "y": 1.08, "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": _speed_text(v["speedup"]), "showarrow": False, "x": 0.84, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
    )
    narrow = {
        "height": 720,
        "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.6, 1]},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.38]},
        "legend": {"y": -0.12},
        "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.04},
                        {**layout["annotations"][1], "x": 0.5, "y": 0.43}],
    }
    return {"data": data, "layout": layout, "narrow": narrow}


def _num(ms: float) -> str:
    """Milliseconds as a reader writes them: 2,485 and 833, but 0.512."""
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}"


def _ms(ms: float) -> str:
    return _num(ms) + " ms"


def _summary(name: str, steps: int, P: int, v: dict) -> str:
    which = "the book's model" if name == "book" else "the random reference model"
    same = "the same tokens" if v["tokens_identical"] else "different tokens"
    return (f"Generating {steps} tokens from a {P}-token prompt with {which}, the run without a "
            f"cache computed {v['key_rows_no_cache']:,} key rows per layer and the cached run "
            f"{v['key_rows_cache']:,}; medians of {v['repeats']} runs on {v['measured_on']}: "
            f"{_ms(v['ms_no_cache'])} against {_ms(v['ms_cache'])}. Both wrote {same}, "
            f"with logits at most {v['max_logit_diff']:.2g} apart.")


def _table(v: dict) -> dict:
    rows = [[label, f"{v['key_rows_' + key]:,}", _num(v['ms_' + key]),
             f"{_num(v['spread_' + key][0])}–{_num(v['spread_' + key][1])}"]
            for label, key in (("no cache", "no_cache"), ("cache", "cache"))]
    return {"caption": f"Key rows per layer and wall-clock time, {v['repeats']} runs each, on "
                       f"{v['measured_on']}",
            "columns": ["run", "key rows computed", "median time (ms)", "fastest–slowest (ms)"],
            "rows": rows}
