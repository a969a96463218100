"""Widget: the same matrix work done one step after another (an RNN) and all at once.

Times `backend.reference.recurrence.one_after_another` (T dependent steps) against
`all_at_once` (one product over all T positions) on the server's own device, and shows the
gradient product a recurrence multiplies along those T steps on the way back.

Timings are taken one at a time on the whole host (`measure.timing_lock`, which serialises
timings only). The product's time is its fastest run; the loop's is the fastest run of each
stretch of its steps, summed (`recurrence.time_both`), since at a thousand steps hardly any whole
run escapes a pre-emption. A timing whose fastest is not repeated by other runs
(`measure.settled`, `loop_settled`) is re-measured, up to `MAX_ROUNDS` rounds.
"""

from __future__ import annotations

import math
import statistics
from functools import lru_cache

import torch

from backend import device
from backend.compute import measure as measure_lib
from backend.compute.spec import Output, Param, WidgetSpec
from backend.compute.style import COLORS, base_layout, duration
from backend.reference import recurrence

SPEC = WidgetSpec(
    name="sequential_vs_parallel",
    try_next=(
        "Raise `length` one stop at a time: the speed-up rises steeply over the first few dozen "
        "steps and then stops rising, because the single product also does one row of work per "
        "step. Set `width` to 16, where it is still climbing at 1024. Then move `factor` above 1 "
        "and watch the gradient carried back through the steps explode instead of vanish."
    ),
    title="One step after another, or all at once",
    description="Wall-clock time of an RNN's T dependent steps against the same arithmetic "
                "as one matrix product, and the gradient product along T steps.",
    params=(
        Param("length", "sequence length T", "int", default=100, min=1, max=1024, step=1,
              scale="log2", unit="steps",
              help="How many tokens the sequence has: steps for the loop, rows for the product."),
        Param("width", "hidden width d", "int", default=256, min=16, max=512, step=1,
              scale="log2",
              help="Size of the hidden state; each step multiplies it by two d × d matrices."),
        Param("factor", "per-step gradient factor", "float", default=0.9, min=0.5, max=1.5,
              step=0.01,
              help="What one step multiplies the gradient by on its way back (right panel)."),
    ),
    outputs=(
        Output("ms_sequential", "one after another (fastest of each stretch, summed)", ".3g",
               "ms"),
        Output("ms_parallel", "all at once (fastest run)", ".3g", "ms"),
        Output("speedup", "speed-up", ".1f", "×"),
        Output("gradient_product", "gradient after T steps", ".3g"),
        Output("measured_on", "measured on", ""),
    ),
    # Baked for readers without the API: a sweep of lengths at the default width, a few widths,
    # the chapter's table of speed-ups, and the per-step factors the chapter names. Factor
    # changes reuse one timing.
    bake=tuple({"length": 4 ** i} for i in range(6))
    + tuple({"width": w} for w in (16, 64, 512))
    + ({"length": 8},)
    + tuple({"length": n, "width": w} for w in (16, 512) for n in (1, 8, 64, 1024))
    + tuple({"factor": f} for f in (0.5, 0.99, 1.0, 1.01, 1.1, 1.5)),
    cost_hint="heavy",
    measured=True,
)

# Work per request: T steps of two (d, d) products, at most 2**28 multiply-adds per version per
# run (T = 1024, d = 512: about 0.15 s per pair of runs on one CPU thread, so a round of 9
# pairs is under 1.5 s and MAX_ROUNDS rounds stay inside the lock's 10 s wait). The slider
# ranges stay inside this budget at every corner, checked below, so no setting is refused.
MAX_WORK = 2 ** 28
REPEAT_WORK = 2 ** 27          # small problems get more repeats (7 .. 31), big ones fewer
MIN_REPEATS, MAX_REPEATS = 7, 31
MAX_ROUNDS = 3                 # re-measure (pooling the runs) while the fastest is unconfirmed
DTYPE = torch.float32
MAX_CURVE_POINTS = 65          # points per gradient curve, whatever T (a straight line on log y)


def _max_work_of_ranges() -> int:
    return int(SPEC.param("length").max) * int(SPEC.param("width").max) ** 2


assert _max_work_of_ranges() <= MAX_WORK, "widen MAX_WORK only after timing the new corner"


def repeats_for(length: int, width: int) -> int:
    return min(MAX_REPEATS, max(MIN_REPEATS, REPEAT_WORK // (length * width * width)))


def measured_on() -> str:
    return measure_lib.measured_on(DTYPE)


def loop_settled(timing: recurrence.Timing) -> bool:
    """measure.settled for the loop's stretches: the sum of each stretch's SETTLED_AGREE-th
    fastest run lies within SETTLED_TOLERANCE of the sum of the fastest."""
    if not timing.stretches_ms:
        return measure_lib.settled(timing.sequential_ms)
    k = min(measure_lib.SETTLED_AGREE, len(timing.stretches_ms))
    kth = sum(sorted(runs)[k - 1] for runs in zip(*timing.stretches_ms))
    return kth <= timing.ms_sequential * (1 + measure_lib.SETTLED_TOLERANCE)


def is_settled(timing: recurrence.Timing) -> bool:
    return loop_settled(timing) and measure_lib.settled(timing.parallel_ms)


@lru_cache(maxsize=256)  # every stop of both sliders (66) and more
def measure(length: int, width: int) -> recurrence.Timing:
    """One timing per (T, d) per worker: moving the factor slider re-times nothing.

    A round whose fastest runs are not confirmed by others (load got into most of them) is
    followed by another, and the runs are pooled; the lock is let go between rounds."""
    dev = device.device()
    g = torch.Generator().manual_seed(0)
    problem = recurrence.random_problem(length, width, g, dev, DTYPE)
    seq, par, stretches = (), (), ()
    for round_ in range(MAX_ROUNDS):
        with measure_lib.timing_lock(), measure_lib.one_cpu_thread(dev):
            t = recurrence.time_both(*problem, repeats=repeats_for(length, width),
                                     warmup=2 if round_ == 0 else 1)
        seq, par = seq + t.sequential_ms, par + t.parallel_ms
        stretches += t.stretches_ms
        pooled = recurrence.Timing(seq, par, stretches)
        if is_settled(pooled):
            break
    return pooled


def compute(params: dict) -> dict:
    T, d, factor = params["length"], params["width"], params["factor"]
    timing = measure(T, d)
    curve = recurrence.gradient_through_steps(factor, T)
    values = {
        "ms_sequential": timing.ms_sequential,
        "ms_parallel": timing.ms_parallel,
        "speedup": timing.speedup,
        "runs_sequential": list(timing.sequential_ms),
        "runs_parallel": list(timing.parallel_ms),
        "median_sequential": statistics.median(timing.sequential_ms),
        "median_parallel": statistics.median(timing.parallel_ms),
        "spread_sequential": max(timing.sequential_ms) - min(timing.sequential_ms),
        "spread_parallel": max(timing.parallel_ms) - min(timing.parallel_ms),
        "repeats": len(timing.sequential_ms),
        "max_stretches": recurrence.MAX_STRETCHES,
        "settled": is_settled(timing),
        "us_per_step": timing.ms_sequential * 1000 / T,
        "gradient_product": curve[-1],
        "measured_on": measured_on(),
        "device": device.device(),
        "dtype": str(DTYPE).replace("torch.", ""),
        "torch": torch.__version__,
    }
    out = {
        "values": values,
        "figure": _figure(T, d, factor, values, curve),
        "summary": _summary(T, d, factor, values),
        "table": _table(values),
    }
    if not values["settled"]:
        out["notice"] = ("The machine was busy during this timing: even after re-measuring, no "
                         "two runs agreed on the fastest time, so these numbers may be inflated.")
    return out


def _ms(x: float) -> str:
    return duration(x)


def _summary(T, d, factor, v) -> str:
    steps = "1 step" if T == 1 else f"{T} steps"
    each = "at its one step" if T == 1 else f"at each of the {T} steps"
    return (f"At {steps} of width {d}, the loop took {_ms(v['ms_sequential'])} and the single "
            f"product {_ms(v['ms_parallel'])} ({v['repeats']} runs each on {v['measured_on']}: "
            f"the product's fastest run, the loop's fastest run of each stretch of steps, "
            f"summed), a speed-up of {v['speedup']:.1f}×. A gradient multiplied by "
            f"{factor:g} {each} ends at {v['gradient_product']:.3g}.")


def _table(v) -> dict:
    rows = [[name, f"{v['ms_' + key]:.3g}", f"{v['median_' + key]:.3g}",
             f"{max(v['runs_' + key]):.3g}"]
            for name, key in (("one after another", "sequential"), ("all at once", "parallel"))]
    return {"caption": f"Wall-clock time in ms, {v['repeats']} runs each, on {v['measured_on']}; "
                       "the loop's fastest is each stretch of steps' fastest run, summed",
            "columns": ["version", "fastest (ms)", "median run (ms)", "slowest run (ms)"],
            "rows": rows}


def _figure(T, d, factor, v, curve) -> dict:
    seq, par = v["runs_sequential"], v["runs_parallel"]
    names = ["one after another", "all at once"]
    colors = [COLORS["unscaled"], COLORS["scaled"]]
    data = []
    for name, runs, best, color in zip(names, (seq, par),
                                       (v["ms_sequential"], v["ms_parallel"]), colors):
        data.append({"type": "bar", "x": [name], "y": [best], "name": f"{name} (fastest)",
                     "marker": {"color": color}, "showlegend": False,
                     "text": [f"{best:.3g} ms"], "textposition": "outside",
                     "cliponaxis": False,
                     "hovertemplate": "%{x}: fastest %{y:.3g} ms<extra></extra>"})
        data.append({"type": "scatter", "mode": "markers", "x": [name] * len(runs), "y": runs,
                     "name": f"{name}, each run", "showlegend": False,
                     "marker": {"color": COLORS["guide"], "size": 5},
                     "hovertemplate": "one whole run: %{y:.3g} ms<extra></extra>"})
    # A linear axis from zero, so bar heights compare as times do. Runs slower than twice the
    # taller bar (a disturbed run) fall off the top; the table lists the slowest run.
    tallest = max(v["ms_sequential"], v["ms_parallel"])
    top = max(1.3 * tallest, min(max(seq + par), 2 * tallest)) * 1.05
    stride = max(1, math.ceil(len(curve) / MAX_CURVE_POINTS))
    steps = list(range(0, len(curve), stride))
    if steps[-1] != len(curve) - 1:
        steps.append(len(curve) - 1)
    for f, color, dash, label in ((0.9, COLORS["guide"], "dot", "0.9 per step"),
                                  (1.1, COLORS["guide"], "dash", "1.1 per step")):
        if abs(f - factor) > 1e-9:
            data.append({"type": "scatter", "mode": "lines", "x": steps,
                         "y": [f ** t for t in steps], "name": label,
                         "line": {"color": color, "dash": dash}, "xaxis": "x2", "yaxis": "y2",
                         "hoverinfo": "skip"})
    data.append({"type": "scatter", "mode": "lines", "x": steps, "y": [curve[t] for t in steps],
                 "name": f"{factor:g} per step", "line": {"color": COLORS["accent"], "width": 3},
                 "xaxis": "x2", "yaxis": "y2",
                 "hovertemplate": "after %{x} steps: %{y:.3g}<extra></extra>"})
    layout = base_layout(
        height=420,
        xaxis={"domain": [0, 0.42]},
        yaxis={"type": "linear", "range": [0, top], "rangemode": "tozero",
               "title": {"text": "wall-clock time (ms)"}},
        xaxis2={"domain": [0.58, 1], "anchor": "y2",
                "title": {"text": "steps the gradient travels back"},
                **({"dtick": 1} if T <= 8 else {})},
        yaxis2={"anchor": "x2", "type": "log", "exponentformat": "power", "automargin": True,
                "title": {"text": "gradient multiplier", "standoff": 6}},
        annotations=[
            {"text": f"T = {T}, d = {d}: {v['speedup']:.1f}× faster at once", "showarrow": False,
             "x": 0.21, "y": 1.08, "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": f"{factor:g}<sup>{T}</sup> = {v['gradient_product']:.3g}",
             "showarrow": False, "x": 0.79, "y": 1.08, "xref": "paper", "yref": "paper",
             "xanchor": "center"},
        ],
    )
    narrow = {
        "height": 700,
        "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.62, 1]},
        "xaxis2": {"domain": [0, 1]},
        # Phones: fewer, shorter ticks (1e-64, not 10 to the -64 with a superscript) so the
        # labels leave room for the axis title beside them.
        "yaxis2": {"domain": [0, 0.38], "exponentformat": "e", "nticks": 5},
        "legend": {"y": -0.12},
        "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.04},
                        {**layout["annotations"][1], "x": 0.5, "y": 0.43}],
    }
    return {"data": data, "layout": layout, "narrow": narrow}
