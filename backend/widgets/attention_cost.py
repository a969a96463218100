"""Widget: what attention costs, counted and measured, explicit (eager) against fused.

Counts (`backend.reference.attention_cost`): the T^2 d FLOPs of the two T x T products, the
T^2 bytes of one score matrix. Measures, on the server's device, the book's explicit attention
against `F.scaled_dot_product_attention` at the reader's T and at T/2, T/4, T/8 (the points
drawn on the analytic curves): wall-clock time (warm-up, repeats, median and spread) and peak
memory (CUDA's peak counter on a GPU; on a CPU the bytes of op outputs alive at once).

Each device has its own ceiling on the context length. Memory: the explicit path's T x T
working set must fit `MEMORY_SHARE` of `device.memory_bytes()` (free GPU memory, or the CPU's
fixed budget). Work: B h T^2 d_head at most `WORK_BUDGET[device kind]`, so a request stays
near a second. The slider's top is the ceiling at the default settings; more heads, a bigger
batch or a bigger head lower it, and a request above it is a 400 naming the ceiling and the
device.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from backend import device
from backend.reference import attention_cost as ac
from backend.reference import context
from backend.widgets import measure as measure_lib
from backend.widgets.spec import Output, Param, ParamError, WidgetSpec
from backend.widgets.style import COLORS, base_layout

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
MEMORY_SHARE = 0.5  # of the device's memory, for the explicit path's T x T working set
# B * h * T^2 * d_head per request. CPU (one thread): T = 1,448 at d_head = 64, about 40 ms per
# explicit run on a loaded 2-core host, so 6 runs of both paths at four T stay near a second.
# GPU: 2^40 (T = 131,072 at d_head = 64), about 4.4 TFLOP per explicit run.
WORK_BUDGET = {"cpu": 2 ** 27, "cuda": 2 ** 40}
REPEATS, WARMUP = 5, 1
LADDER = (8, 4, 2, 1)      # measured at T/8, T/4, T/2 and T (those of at least MIN_T)
MIN_T = 16
TABLE_LENGTHS = (8_000, 16_000, 128_000)  # handout 003's table, in memory terms
CURVE_POINTS = 40


def _kind() -> str:
    return device.kind()


def memory_budget() -> int:
    return int(device.memory_bytes() * MEMORY_SHARE)


def ceiling(n_heads: int = 1, batch: int = 1, d_head: int = 64, dtype=torch.float32) -> int:
    """The largest context this device allows at this setting (memory and work rules)."""
    by_memory = ac.largest_context(memory_budget(), n_heads, batch, dtype)
    by_work = math.isqrt(WORK_BUDGET[_kind()] // (batch * n_heads * d_head))
    return min(by_memory, by_work)


CEILING = ceiling()  # at the defaults: the slider's top on this device


def device_limits() -> dict:
    """What this device allows, for /api/health: the longest context at the defaults (batch 1,
    one head of 64, float32) and the memory budget that ceiling is planned against."""
    return {"max_context_len": CEILING, "memory_budget_bytes": memory_budget(),
            "work_budget": WORK_BUDGET[_kind()]}


class CeilingSpec(WidgetSpec):
    """The spec, with the context range's error naming the device whose ceiling it is."""

    def resolve(self, body):
        try:
            return super().resolve(body)
        except ParamError as exc:
            T = body.get("context_len") if isinstance(body, dict) else None
            if (exc.param == "context_len" and isinstance(T, (int, float))
                    and not isinstance(T, bool) and T > CEILING):
                raise ParamError(
                    f"'context length T' must be from {MIN_T} to {CEILING:,} on "
                    f"{device.device()} (this device's ceiling at batch 1, 1 head of size 64 in "
                    f"float32; more heads, batch or head size lower it), got {T:,}",
                    "context_len") from None
            raise


SPEC = CeilingSpec(
    name="attention_cost",
    title="What attention costs: explicit against fused",
    description="FLOPs and score-matrix bytes of attention, counted, and the book's explicit "
                "attention against PyTorch's fused kernel, timed and measured for peak memory "
                "on the server's device.",
    params=(
        Param("context_len", "context length T", "int", default=min(1024, CEILING), min=MIN_T,
              max=CEILING, step=1, scale="log2", unit="tokens",
              help=f"Tokens attended over. The top of the slider is this device's ceiling "
                   f"({device.device()}); more heads, batch or head size lower it."),
        Param("head_dim", "head size d_head", "int", default=64, min=16, max=256, step=16,
              help="Size of each head's queries, keys and values."),
        Param("n_heads", "heads h", "int", default=1, min=1, max=32, step=1,
              help="Heads, each with its own T × T score matrix."),
        Param("batch", "batch B", "int", default=1, min=1, max=16, step=1,
              help="Sequences attended at once."),
        Param("dtype", "dtype", "choice", default="float32", options=tuple(DTYPES),
              help="Number format of queries, keys and values."),
    ),
    outputs=(
        Output("flops", "FLOPs of the T × T products", ".3g"),
        Output("score_bytes", "bytes of the score matrix", ".3g", "B"),
        Output("ms_eager", "explicit, median", ".3g", "ms"),
        Output("ms_fused", "fused, median", ".3g", "ms"),
        Output("peak_bytes_eager", "explicit, peak memory", ".3g", "B"),
        Output("peak_bytes_fused", "fused, peak memory", ".3g", "B"),
        Output("max_abs_diff", "largest |explicit − fused|", ".2g"),
        Output("ceiling", "largest T at this setting", ",d", "tokens"),
        Output("device", "measured on", ""),
    ),
    bake=tuple({"context_len": t} for t in (16, 64, 256, 512, CEILING) if t <= CEILING)
    + ({"head_dim": 128}, {"n_heads": 4, "context_len": min(512, CEILING)},
       {"dtype": "bfloat16"}, {"dtype": "float16"}),
    cost_hint="heavy",
)


def measured_on(dtype) -> str:
    return measure_lib.measured_on(dtype)


def check_ceiling(T: int, d_head: int, n_heads: int, batch: int, dtype) -> int:
    limit = ceiling(n_heads, batch, d_head, dtype)
    if T > limit:
        raise ParamError(
            f"'context length T' must be at most {limit:,} on {device.device()} at batch "
            f"{batch} × {n_heads} head{'s' if n_heads != 1 else ''} × head size {d_head} in "
            f"{str(dtype).replace('torch.', '')} (the explicit path's T × T scores must fit "
            f"this device's budget), got {T:,}", "context_len")
    return limit


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
        with torch.no_grad():
            diff = (ac.eager(q, k, v).float() - ac.fused(q, k, v).float()).abs().max().item()
    out["max_abs_diff"] = diff
    out["max_abs_v"] = v.abs().max().float().item()
    return out


def table_values() -> dict:
    """Handout 003's 8,000 / 16,000 / 128,000 table in bytes: one head's scores in bfloat16."""
    table = {}
    for n in TABLE_LENGTHS:
        text, work = context.growth(n, TABLE_LENGTHS[0])
        table[str(n)] = {"text": text, "work": work,
                         "score_bytes": ac.score_bytes(n, 1, 1, torch.bfloat16),
                         "score_bytes_32": ac.score_bytes(n, 32, 1, torch.bfloat16),
                         "flops_32": ac.score_flops(n, 128, 32, 1)}
        table[str(n)]["score_gb"] = table[str(n)]["score_bytes"] / 1e9
        table[str(n)]["score_gb_32"] = table[str(n)]["score_bytes_32"] / 1e9
        table[str(n)]["tflop_32"] = table[str(n)]["flops_32"] / 1e12
    return {"table": table}


def compute(params: dict) -> dict:
    T, d, h, B = params["context_len"], params["head_dim"], params["n_heads"], params["batch"]
    dtype = DTYPES[params["dtype"]]
    limit = check_ceiling(T, d, h, B, dtype)
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
        "spread_eager": eager_runs.slowest - eager_runs.fastest,
        "spread_fused": fused_runs.slowest - fused_runs.fastest,
        "runs_eager": list(eager_runs.ms),
        "runs_fused": list(fused_runs.ms),
        "repeats": REPEATS,
        "peak_bytes_eager": m["peak_eager"][-1],
        "peak_bytes_fused": m["peak_fused"][-1],
        "max_abs_diff": m["max_abs_diff"],
        "max_abs_v": m["max_abs_v"],
        "score_mib": ac.score_bytes(T, h, B, dtype) / 2 ** 20,
        "peak_mib_eager": m["peak_eager"][-1] / 2 ** 20,
        "peak_mib_fused": m["peak_fused"][-1] / 2 ** 20,
        "memory_ratio": m["peak_eager"][-1] / m["peak_fused"][-1],
        "ladder_T": list(m["T"]),
        "ladder_fastest_eager": [r.fastest for r in m["eager"]],
        "ladder_fastest_fused": [r.fastest for r in m["fused"]],
        "ladder_ms_eager": [r.median for r in m["eager"]],
        "ladder_ms_fused": [r.median for r in m["fused"]],
        "ladder_peak_eager": list(m["peak_eager"]),
        "ladder_peak_fused": list(m["peak_fused"]),
        "ceiling": limit,
        "ceiling_memory": ac.largest_context(memory_budget(), h, B, dtype),
        "ceiling_work": math.isqrt(WORK_BUDGET[_kind()] // (B * h * d)),
        # The same rule on accelerators of 80 GB and 141 GB, all of it free.
        "ceiling_80gb": ac.largest_context(int(80e9 * MEMORY_SHARE), h, B, dtype),
        "ceiling_141gb": ac.largest_context(int(141e9 * MEMORY_SHARE), h, B, dtype),
        "ceiling_default": CEILING,
        "memory_bytes": device.memory_bytes(),
        "memory_budget": memory_budget(),
        "memory_mib": device.memory_bytes() / 2 ** 20,
        "memory_budget_mib": memory_budget() / 2 ** 20,
        "work_budget": WORK_BUDGET[_kind()],
        "crossover_T": 2 * h * d,  # score FLOPs = projection FLOPs at T = 2 d
        "device": device.device(),
        "measured_on": measured_on(dtype),
        **table_values(),
    }
    return {
        "values": values,
        "figure": _figure(T, d, h, B, dtype, values),
        "summary": _summary(T, values),
        "table": _table(values),
    }


def _curve_T(T: int) -> list[int]:
    lo, hi = MIN_T, max(T, CEILING)
    return sorted({int(round(lo * (hi / lo) ** (i / (CURVE_POINTS - 1))))
                   for i in range(CURVE_POINTS)})


def _figure(T, d, h, B, dtype, v) -> dict:
    xs, ladder = _curve_T(T), v["ladder_T"]
    eager_c, fused_c, guide = COLORS["unscaled"], COLORS["scaled"], COLORS["guide"]
    # Time panel: the analytic FLOPs curve, scaled to pass through the largest explicit run,
    # with both paths' measured medians (bars: fastest to slowest run) on it.
    scale = v["ladder_ms_eager"][-1] / ac.score_flops(T, d, h, B)
    m_eager, m_fused = v["ladder_ms_eager"], v["ladder_ms_fused"]
    data = [
        {"type": "scatter", "mode": "lines", "x": xs,
         "y": [ac.score_flops(t, d, h, B) * scale for t in xs],
         "name": "4·B·h·T²·d FLOPs (scaled to the explicit run at T)",
         "line": {"color": guide, "dash": "dash"}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers", "x": ladder, "y": m_eager,
         "name": "explicit, measured", "marker": {"color": eager_c, "size": 9},
         "legendgroup": "eager",
         "hovertemplate": "T=%{x}: explicit %{y:.3g} ms (median)<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": ladder, "y": m_fused,
         "name": "fused, measured", "marker": {"color": fused_c, "size": 9, "symbol": "diamond"},
         "legendgroup": "fused",
         "hovertemplate": "T=%{x}: fused %{y:.3g} ms (median)<extra></extra>"},
        # Memory panel: the analytic score matrix and the explicit working set, measured peaks.
        {"type": "scatter", "mode": "lines", "x": xs,
         "y": [ac.score_bytes(t, h, B, dtype) for t in xs], "name": "score matrix B·h·T² (bytes)",
         "line": {"color": guide}, "xaxis": "x2", "yaxis": "y2", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": xs,
         "y": [ac.eager_bytes(t, h, B, dtype) for t in xs],
         "name": f"explicit working set ({v['eager_bytes_per_score']} B per score)",
         "line": {"color": eager_c, "dash": "dot"}, "xaxis": "x2", "yaxis": "y2",
         "legendgroup": "eager", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers", "x": ladder, "y": v["ladder_peak_eager"],
         "name": "explicit, peak", "marker": {"color": eager_c, "size": 9},
         "xaxis": "x2", "yaxis": "y2", "legendgroup": "eager", "showlegend": False,
         "hovertemplate": "T=%{x}: explicit peak %{y:.3s}B<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": ladder, "y": v["ladder_peak_fused"],
         "name": "fused, peak", "marker": {"color": fused_c, "size": 9, "symbol": "diamond"},
         "xaxis": "x2", "yaxis": "y2", "legendgroup": "fused", "showlegend": False,
         "hovertemplate": "T=%{x}: fused peak %{y:.3s}B<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]],
         "y": [v["memory_budget"]] * 2, "name": f"{v['device']} budget",
         "line": {"color": COLORS["accent"], "dash": "dashdot"}, "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": "budget %{y:.3s}B<extra></extra>"},
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


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def _summary(T: int, v: dict) -> str:
    return (f"At T = {T:,} the explicit attention took {v['ms_eager']:.3g} ms and peaked at "
            f"{_bytes(v['peak_bytes_eager'])}; the fused kernel took {v['ms_fused']:.3g} ms and "
            f"peaked at {_bytes(v['peak_bytes_fused'])} (medians of {v['repeats']} runs on "
            f"{v['measured_on']}). One score matrix is {_bytes(v['score_bytes'])}; the largest "
            f"context this setting allows here is {v['ceiling']:,}.")


def _table(v: dict) -> dict:
    rows = [[f"{t:,}", f"{me:.3g}", f"{mf:.3g}", _bytes(pe), _bytes(pf)]
            for t, me, mf, pe, pf in zip(v["ladder_T"], v["ladder_ms_eager"],
                                         v["ladder_ms_fused"], v["ladder_peak_eager"],
                                         v["ladder_peak_fused"])]
    return {"caption": f"Measured on {v['measured_on']}: medians of {v['repeats']} runs, and "
                       "peak memory of each path.",
            "columns": ["T", "explicit (ms)", "fused (ms)", "explicit peak", "fused peak"],
            "rows": rows}
