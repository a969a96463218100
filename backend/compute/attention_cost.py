"""Widget: what attention costs, counted and measured, explicit (eager) against fused.

Counts (`backend.reference.attention_cost`): the T^2 d FLOPs of the two T x T products, the
T^2 bytes of one score matrix. Measures, on the server's device, the book's explicit attention
against `F.scaled_dot_product_attention` at the reader's T and at T/2, T/4, T/8 (the points
drawn on the analytic curves): wall-clock time (warm-up, repeats, median and spread) and peak
memory (CUDA's peak counter on a GPU; on a CPU the bytes of op outputs alive at once).

Each device has its own ceiling on the context length. Memory: the explicit path's T x T
working set must fit `MEMORY_SHARE` of `device.memory_bytes()` (free GPU memory, or the CPU's
fixed budget). Work: B h T^2 d_head at most `WORK_BUDGET[device kind]`, so a request stays
near a second. The slider's top is the ceiling at the current setting: both rules are the
spec's `Limit`s (data the page evaluates too), so the heads, the batch, the head size and the
dtype lower it together, on the page and in the API alike; a request above the ceiling is a 400
naming the ceiling, the setting and the device.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from backend import device
from backend.budgets import MEMORY_SHARE, WORK_BUDGET, memory_budget, work_budget  # noqa: F401
from backend.compute import measure as measure_lib
from backend.compute.attention_cost_facts import llama_crossover, table_values
from backend.compute.spec import Limit, Output, Param, ParamError, WidgetSpec, dtype_param  # noqa: F401
from backend.compute.style import COLORS, base_layout, duration
from backend.reference import attention_cost as ac

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
REPEATS, WARMUP = 5, 1
LADDER = (8, 4, 2, 1)      # measured at T/8, T/4, T/2 and T (those of at least MIN_T)
MIN_T = 16
CURVE_POINTS = 40


def limits() -> tuple[Limit, Limit]:
    """The context length's two rules on this device, as data the page evaluates too (spec
    `Limit`): memory, B h T^2 bytes_per_score <= MEMORY_SHARE of the device's memory (the
    explicit path's T x T working set, `ac.largest_context`); work, B h T^2 d_head <=
    WORK_BUDGET. Both follow every control at once."""
    note = f"this device's ceiling on {device.device()}"
    per_score = {name: ac.eager_bytes_per_score(dt) for name, dt in DTYPES.items()}
    scores = ("context_len", "context_len", "batch", "n_heads")
    return (Limit(memory_budget(), ((1, scores + (("dtype", per_score),)),), note=note),
            Limit(work_budget(), ((1, scores + ("head_dim",)),), note=note))


LIMITS = limits()
_T = Param("context_len", "context length T", "int", default=MIN_T, min=MIN_T, max=2 ** 40, step=1)


def ceiling(n_heads: int = 1, batch: int = 1, d_head: int = 64, dtype=torch.float32) -> int:
    """The largest context this device allows at this setting (memory and work rules)."""
    name = next(n for n, dt in DTYPES.items() if dt == dtype)
    setting = {"n_heads": n_heads, "batch": batch, "head_dim": d_head, "dtype": name}
    top = 2 ** 40  # the rules' own answer, whatever the slider's range
    return min(lim.top(_T, setting, MIN_T, top) for lim in LIMITS)


CEILING = ceiling()  # at the defaults: the slider's top on this device


def slider_top(n_heads: int = 1, batch: int = 1, d_head: int = 64, dtype=torch.float32) -> int:
    """The largest T the page offers at this setting: the ceiling, capped at the slider's own
    top (a smaller head allows more by the rules, but the slider does not reach further)."""
    return min(CEILING, ceiling(n_heads, batch, d_head, dtype))


def device_limits() -> dict:
    """What this device allows, for /api/health: the longest context at the defaults (batch 1,
    one head of 64, float32) and the memory budget that ceiling is planned against."""
    return {"max_context_len": CEILING, "memory_budget_bytes": memory_budget(),
            "work_budget": work_budget()}


def check_limit(values: dict) -> int:
    return slider_top(values["n_heads"], values["batch"], values["head_dim"],
                      DTYPES[values["dtype"]])


def context_ceiling(values: dict) -> dict:
    """'context length T' is at most this device's ceiling at the setting: the explicit path's
    T × T working set within half the device's memory, and B h T² d_head within its work
    budget (more heads, batch or head size lower it)."""
    h = values["n_heads"]
    return {"context_len": {
        "max": check_limit(values),
        "why": f"on {device.device()} at batch {values['batch']} × {h} head"
               f"{'s' if h != 1 else ''} of size {values['head_dim']} in {values['dtype']} "
               f"(this device's ceiling at that setting; more heads, batch or head size lower it)"}}


SPEC = WidgetSpec(
    name="attention_cost",
    try_next=(
        "Double `context_len`: the explicit attention's score matrix takes four times the memory "
        "(it has T × T entries), while the fused kernel never stores it."
    ),
    title="What attention costs: explicit against fused",
    description="FLOPs and score-matrix bytes of attention, counted, and the book's explicit "
                "attention against PyTorch's fused kernel, timed and measured for peak memory "
                "on the server's device.",
    params=(
        Param("context_len", "context length T", "int", default=min(1024, CEILING), min=MIN_T,
              max=CEILING, step=1, scale="log2", unit="tokens",
              help=f"Tokens attended over. The top of the slider is this device's ceiling "
                   f"({device.device()}); more heads, batch or head size lower it.",
              limits=LIMITS),
        Param("head_dim", "head size d_head", "int", default=64, min=16, max=256, step=16,
              help="Size of each head's queries, keys and values."),
        Param("n_heads", "heads h", "int", default=1, min=1, max=32, step=1,
              help="Heads, each with its own T × T score matrix."),
        Param("batch", "batch B", "int", default=1, min=1, max=16, step=1,
              help="Sequences attended at once."),
        dtype_param(DTYPES, "float32", help="Number format of queries, keys and values."),
    ),
    outputs=(
        Output("flops", "FLOPs of the T × T products", ".3g"),
        Output("score_mib", "one score matrix", ".3g", "MiB"),
        Output("ms_eager", "explicit, median", ".3g", "ms"),
        Output("ms_fused", "fused, median", ".3g", "ms"),
        Output("peak_mib_eager", "explicit, peak memory", ".3g", "MiB"),
        Output("peak_mib_fused", "fused, peak memory", ".3g", "MiB"),
        Output("max_abs_diff", "largest |explicit − fused|", ".2g"),
        Output("ceiling", "largest T at this setting", ",d", "tokens"),
        Output("fused_kernel", "kernel the fused call ran", ""),
        Output("device", "measured on", ""),
    ),
    bake=tuple({"context_len": t} for t in (16, 64, 256, 512, CEILING) if t <= CEILING)
    + ({"head_dim": 128}, {"n_heads": 4, "context_len": min(512, CEILING)},
       {"dtype": "bfloat16"}, {"dtype": "float16"}),
    cost_hint="heavy",
    measured=True,
    limits=context_ceiling,
)


@lru_cache(maxsize=128)
def measure(T: int, d_head: int, n_heads: int, batch: int, dtype_name: str) -> dict:
    """Times and peak memory of both paths at T and the smaller ladder points (one request's
    worth; cached per worker so a repeated setting re-times nothing)."""
    dtype, dev = DTYPES[dtype_name], device.device()
    points = sorted({T // f for f in LADDER if T // f >= MIN_T} | {T})
    out = {"T": [], "eager": [], "fused": [], "peak_eager": [], "peak_fused": []}
    with measure_lib.timing_lock(), measure_lib.one_cpu_thread(dev):
        for t in points:
            q, k, v = ac.random_qkv(batch, n_heads, t, d_head, dtype, dev)
            eager_runs, fused_runs = ac.time_paths([ac.eager, ac.fused], (q, k, v),
                                                   repeats=REPEATS, warmup=WARMUP)
            out["T"].append(t)
            out["eager"].append(eager_runs)
            out["fused"].append(fused_runs)
            out["peak_eager"].append(ac.peak_bytes(ac.eager, q, k, v))
            out["peak_fused"].append(ac.peak_bytes(ac.fused, q, k, v))
        kernel = ac.fused_kernel(q, k, v)
        with torch.no_grad():
            diff = (ac.eager(q, k, v).float() - ac.fused(q, k, v).float()).abs().max().item()
    out["max_abs_diff"] = diff
    out["fused_kernel"] = kernel
    out["max_abs_v"] = v.abs().max().float().item()
    return out


# The workers of a lecture-hall server: WEB_CONCURRENCY in compose.yaml and in the cluster's
# configmap (a test holds them equal). On a GPU each plans against its share of the card.
SHIPPED_WORKERS = 2


def gpu_memory_ceiling(free_bytes: int, workers: int, n_heads: int = 1, batch: int = 1,
                       dtype=torch.float32) -> int:
    """The memory rule's ceiling on a GPU with `free_bytes` free at the server's start and
    `workers` workers, as a worker computes it: its share of the card (`device.worker_share`),
    of which MEMORY_SHARE is the request's budget."""
    budget = int(device.worker_share(free_bytes, workers) * MEMORY_SHARE)
    return ac.largest_context(budget, n_heads, batch, dtype)


def facts(params: dict) -> dict:
    """Values only the prose quotes (`{{ value(...) }}`), worked out when the book is built and
    never per request: the handout's table, Llama-3-8B's crossovers, this device's budgets and
    the memory rule's ceiling on GPUs with 80 GB and 141 GB free."""
    h, B, dtype = params["n_heads"], params["batch"], DTYPES[params["dtype"]]
    return {
        # GPUs with 80 GB and 141 GB free, served by the lecture hall's workers, or by one alone
        "shipped_workers": SHIPPED_WORKERS,
        "min_timed_len": MIN_T,  # ladder points below it are not timed
        "ceiling_80gb": gpu_memory_ceiling(int(80e9), SHIPPED_WORKERS, h, B, dtype),
        "ceiling_141gb": gpu_memory_ceiling(int(141e9), SHIPPED_WORKERS, h, B, dtype),
        "ceiling_80gb_one_worker": gpu_memory_ceiling(int(80e9), 1, h, B, dtype),
        "ceiling_141gb_one_worker": gpu_memory_ceiling(int(141e9), 1, h, B, dtype),
        "ceiling_default": CEILING,
        "memory_bytes": device.memory_bytes(),
        "memory_budget": memory_budget(),
        "memory_mib": device.memory_bytes() / 2 ** 20,
        "memory_budget_mib": memory_budget() / 2 ** 20,
        "work_budget": work_budget(),
        # score = projection FLOPs at T = 2 d
        "crossover_T": ac.crossover_context(params["head_dim"], h),
        **llama_crossover(),
        **table_values(),
    }


def compute(params: dict) -> dict:
    T, d, h, B = params["context_len"], params["head_dim"], params["n_heads"], params["batch"]
    dtype = DTYPES[params["dtype"]]
    limit = check_limit(params)  # `resolve` refused a T above it (the spec's `limits` hook)
    by_work = math.isqrt(work_budget() // (B * h * d))
    m = measure(T, d, h, B, params["dtype"])
    eager_runs, fused_runs = m["eager"][-1], m["fused"][-1]
    values = {
        "T": T,
        "flops": ac.score_flops(T, d, h, B),
        "projection_flops": ac.projection_flops(T, d, h, B),
        "score_bytes": ac.score_bytes(T, h, B, dtype),
        "eager_bytes": ac.eager_bytes(T, h, B, dtype),
        "eager_bytes_per_score": ac.eager_bytes_per_score(dtype),
        "ms_eager": eager_runs.median,
        "ms_fused": fused_runs.median,
        "fastest_eager": eager_runs.fastest,
        "fastest_fused": fused_runs.fastest,
        "slowest_eager": eager_runs.slowest,
        "slowest_fused": fused_runs.slowest,
        "spread_eager": eager_runs.slowest - eager_runs.fastest,
        "spread_fused": fused_runs.slowest - fused_runs.fastest,
        "runs_eager": list(eager_runs.ms),
        "runs_fused": list(fused_runs.ms),
        "repeats": REPEATS,
        "peak_bytes_eager": m["peak_eager"][-1],
        "peak_bytes_fused": m["peak_fused"][-1],
        "max_abs_diff": m["max_abs_diff"],
        "max_abs_v": m["max_abs_v"],
        "fused_kernel": m["fused_kernel"],
        "score_mib": ac.score_bytes(T, h, B, dtype) / 2 ** 20,
        "peak_mib_eager": m["peak_eager"][-1] / 2 ** 20,
        "peak_mib_fused": m["peak_fused"][-1] / 2 ** 20,
        "memory_ratio": m["peak_eager"][-1] / m["peak_fused"][-1],
        "ladder_T": list(m["T"]),
        "ladder_fastest_eager": [r.fastest for r in m["eager"]],
        "ladder_fastest_fused": [r.fastest for r in m["fused"]],
        "ladder_ms_eager": [r.median for r in m["eager"]],
        "ladder_ms_fused": [r.median for r in m["fused"]],
        "ladder_slowest_eager": [r.slowest for r in m["eager"]],
        "ladder_slowest_fused": [r.slowest for r in m["fused"]],
        "fused_bytes": ac.fused_bytes(T, d, h, B, dtype),
        "ladder_peak_eager": list(m["peak_eager"]),
        "ladder_peak_fused": list(m["peak_fused"]),
        "ceiling": limit,
        "ceiling_memory": ac.largest_context(memory_budget(), h, B, dtype),
        "ceiling_work": by_work,
        # which rule binds at this setting (or the slider's own top, for a small head)
        "ceiling_rule": ("time" if limit == by_work
                         else "memory" if limit == ac.largest_context(memory_budget(), h, B, dtype)
                         else "slider"),
        "device": device.device(),
        "measured_on": measure_lib.measured_on(dtype),
    }
    return {
        "values": values,
        "figure": _figure(T, d, h, B, dtype, values),
        "summary": _summary(T, values),
        "table": _table(values),
    }


def _curve_T(top: int) -> list[int]:
    """Points for the formula curves, from the slider's bottom to this setting's ceiling."""
    lo, hi = MIN_T, top
    return sorted({int(round(lo * (hi / lo) ** (i / (CURVE_POINTS - 1))))
                   for i in range(CURVE_POINTS)})


def _bars(median: list, fastest: list, slowest: list, color: str) -> dict:
    """Error bars from the fastest to the slowest run around each median."""
    return {"type": "data", "symmetric": False, "color": color, "thickness": 1.5, "width": 4,
            "array": [hi - m for m, hi in zip(median, slowest)],
            "arrayminus": [m - lo for m, lo in zip(median, fastest)]}


def _figure(T, d, h, B, dtype, v) -> dict:
    top = v["ceiling"]
    xs, ladder = _curve_T(top), v["ladder_T"]
    eager_c, fused_c, guide = COLORS["unscaled"], COLORS["scaled"], COLORS["guide"]
    mark = COLORS["accent"]
    # Time panel: the analytic FLOPs curve, scaled to pass through the explicit run at T, with
    # both paths' measured medians on it (bars: fastest to slowest run).
    scale = v["ladder_ms_eager"][-1] / ac.score_flops(T, d, h, B)
    m_eager, m_fused = v["ladder_ms_eager"], v["ladder_ms_fused"]
    flops_curve = [ac.score_flops(t, d, h, B) * scale for t in xs]
    t_lo = min(flops_curve[0], *v["ladder_fastest_eager"], *v["ladder_fastest_fused"])
    t_hi = max(flops_curve[-1], *v["ladder_slowest_eager"], *v["ladder_slowest_fused"])
    score_curve = [ac.score_bytes(t, h, B, dtype) for t in xs]
    eager_curve = [ac.eager_bytes(t, h, B, dtype) for t in xs]
    fused_curve = [ac.fused_bytes(t, d, h, B, dtype) for t in xs]
    b_lo = min(fused_curve[0], score_curve[0], *v["ladder_peak_fused"])
    b_hi = max(eager_curve[-1], *v["ladder_peak_eager"])
    rule = {"time": "time rule", "memory": "memory rule", "slider": "slider's top"}
    ceiling_name = f"ceiling here: T = {top:,} ({rule[v['ceiling_rule']]})"
    data = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": flops_curve,
         "name": "T² FLOPs, scaled to the explicit run",
         "line": {"color": guide, "dash": "dash"}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers", "x": ladder, "y": m_eager,
         "name": "explicit, measured", "marker": {"color": eager_c, "size": 9},
         "error_y": _bars(m_eager, v["ladder_fastest_eager"], v["ladder_slowest_eager"], eager_c),
         "legendgroup": "eager",
         "hovertemplate": "T=%{x}: explicit %{y:.3g} ms (median)<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": ladder, "y": m_fused,
         "name": "fused, measured", "marker": {"color": fused_c, "size": 9, "symbol": "diamond"},
         "error_y": _bars(m_fused, v["ladder_fastest_fused"], v["ladder_slowest_fused"], fused_c),
         "legendgroup": "fused",
         "hovertemplate": "T=%{x}: fused %{y:.3g} ms (median)<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [top, top], "y": [t_lo, t_hi],
         "name": ceiling_name, "legendgroup": "ceiling",
         "line": {"color": mark, "dash": "dashdot"}, "hoverinfo": "skip"},
        # Memory panel: the formulas (score matrix, explicit working set, fused output) and
        # the measured peaks.
        {"type": "scatter", "mode": "lines", "x": xs, "y": score_curve,
         "name": "one score matrix", "line": {"color": guide},
         "xaxis": "x2", "yaxis": "y2", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": xs, "y": eager_curve,
         "name": f"explicit working set ({v['eager_bytes_per_score']} B per pair)",
         "line": {"color": eager_c, "dash": "dot"}, "xaxis": "x2", "yaxis": "y2",
         "legendgroup": "eager", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": xs, "y": fused_curve,
         "name": "fused: output + 1 per query",
         "line": {"color": fused_c, "dash": "dot"}, "xaxis": "x2", "yaxis": "y2",
         "legendgroup": "fused", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers", "x": ladder, "y": v["ladder_peak_eager"],
         "name": "explicit, peak", "marker": {"color": eager_c, "size": 9},
         "xaxis": "x2", "yaxis": "y2", "legendgroup": "eager", "showlegend": False,
         "customdata": [b / 2 ** 20 for b in v["ladder_peak_eager"]],
         "hovertemplate": "T=%{x}: explicit peak %{customdata:.3g} MiB<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": ladder, "y": v["ladder_peak_fused"],
         "name": "fused, peak", "marker": {"color": fused_c, "size": 9, "symbol": "diamond"},
         "xaxis": "x2", "yaxis": "y2", "legendgroup": "fused", "showlegend": False,
         "customdata": [b / 2 ** 20 for b in v["ladder_peak_fused"]],
         "hovertemplate": "T=%{x}: fused peak %{customdata:.3g} MiB<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [top, top], "y": [b_lo, b_hi],
         "name": ceiling_name, "legendgroup": "ceiling", "showlegend": False,
         "line": {"color": mark, "dash": "dashdot"}, "xaxis": "x2", "yaxis": "y2",
         "hoverinfo": "skip"},
    ]
    axis_t = {"type": "log", "title": {"text": "context length T"}}
    layout = base_layout(
        460,
        xaxis={**axis_t, "domain": [0, 0.44]},
        yaxis={"type": "log", "title": {"text": "time per call (ms)"}, "automargin": True},
        xaxis2={**axis_t, "domain": [0.56, 1], "anchor": "y2"},
        yaxis2={"type": "log", "anchor": "x2", "title": {"text": "bytes"}, "automargin": True},
        legend={"orientation": "h", "y": -0.25},
        annotations=[
            {"text": f"time at T = {T:,}", "showarrow": False, "x": 0.22, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": f"memory ({v['device']})", "showarrow": False, "x": 0.78, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
    )
    narrow = {
        "height": 820,
        "margin": {"l": 60, "r": 10, "t": 40, "b": 190},
        "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.6, 1]},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.4]},
        "legend": {"y": -0.12, "yanchor": "top"},
        "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.04},
                        {**layout["annotations"][1], "x": 0.5, "y": 0.44}],
    }
    return {"data": data, "layout": layout, "narrow": narrow}


def _mib(n: float) -> str:
    return f"{n / 2 ** 20:.3g} MiB"


def _medians(n: int) -> str:
    return "one run" if n == 1 else f"medians of {n} runs"


def _summary(T: int, v: dict) -> str:
    return (f"At T = {T:,} the explicit attention took {duration(v['ms_eager'])} and peaked at "
            f"{_mib(v['peak_bytes_eager'])}; the fused call ran {v['fused_kernel']} and took "
            f"{duration(v['ms_fused'])}, peaking at {_mib(v['peak_bytes_fused'])} "
            f"({_medians(v['repeats'])} on {v['measured_on']}). One score matrix is "
            f"{_mib(v['score_bytes'])}; the largest "
            f"context this setting allows here is {v['ceiling']:,} (the "
            f"{ {'time': 'time rule', 'memory': 'memory rule', 'slider': 'slider top'}[v['ceiling_rule']]}).")


def _table(v: dict) -> dict:
    rows = [[f"{t:,}", f"{me:.3g} ({fe:.3g}–{se:.3g})", f"{mf:.3g} ({ff:.3g}–{sf:.3g})",
             f"{pe / 2 ** 20:.3g}", f"{pf / 2 ** 20:.3g}"]
            for t, me, fe, se, mf, ff, sf, pe, pf in zip(
                v["ladder_T"], v["ladder_ms_eager"], v["ladder_fastest_eager"],
                v["ladder_slowest_eager"], v["ladder_ms_fused"], v["ladder_fastest_fused"],
                v["ladder_slowest_fused"], v["ladder_peak_eager"], v["ladder_peak_fused"])]
    return {"caption": f"Measured on {v['measured_on']}: median (fastest–slowest) of "
                       f"{v['repeats']} runs, and peak memory of each path in MiB; the fused "
                       f"call ran {v['fused_kernel']}.",
            "columns": ["T", "explicit (ms)", "fused (ms)", "explicit peak (MiB)",
                        "fused peak (MiB)"],
            "rows": rows}
