"""Widget: RMSNorm against LayerNorm, and what the float32 upcast buys in bfloat16 and float16.

Rows of d = 4096 numbers, drawn as offset + scale * N(0, 1) and rounded to the chosen dtype, go
through the book's RMSNorm (reduction upcast to float32) and through the same formula computed
entirely in the dtype. Both are compared with float64 arithmetic on the same rounded input.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from backend.compute.spec import Output, Param, WidgetSpec, dtype_param
from backend.compute.style import COLORS, base_layout
from backend.reference.norms import (
    LayerNorm,
    RMSNorm,
    rmsnorm_float64,
    rmsnorm_no_upcast,
    rmsnorm_rounded_at,
    running_mean_square,
)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

SPEC = WidgetSpec(
    name="rmsnorm",
    try_next=(
        "With `dtype` at bfloat16, compare the errors against float64 with and without the "
        "float32 upcast (both are in the values), then move `offset` and `scale`: the upcast "
        "version never does worse than rounding the exact answer to bfloat16, and the version "
        "without it is sometimes more than twice as far off."
    ),
    title="RMSNorm, LayerNorm and the float32 upcast",
    description="Mean and RMS after each norm, and the rounding error with and without the upcast.",
    params=(
        Param("offset", "offset (mean of the input)", "float", default=3.0, min=-400.0, max=400.0,
              step=0.5, help="Added to every entry: how far off-centre the input is."),
        Param("scale", "scale (spread of the input)", "float", default=1.0, min=0.01, max=1000.0,
              step=0.01, scale="log2", help="Standard deviation of the random part."),
        dtype_param(DTYPES, "bfloat16", help="The precision the model runs in."),
        Param("upcast", "upcast to float32", "bool", default=True,
              help="Do the reduction in float32, as Llama's RMSNorm does."),
    ),
    outputs=(
        Output("mean_after", "mean after RMSNorm", ".3f"),
        Output("rms_after", "RMS after RMSNorm", ".3f"),
        Output("layernorm_mean_after", "mean after LayerNorm", ".3f"),
        Output("layernorm_rms_after", "RMS after LayerNorm", ".3f"),
        Output("error_upcast", "max error vs float64, upcast", ".3g"),
        Output("error_no_upcast", "max error vs float64, no upcast", ".3g"),
        Output("error_floor", "rounding the exact answer to the dtype", ".3g"),
        Output("mean_square_running_text", "mean square, running sum held in the dtype (row 1)", ""),
    ),
    bake=tuple({"dtype": t, "upcast": u, **extra} for t in DTYPES for u in (True, False)
               for extra in ({}, {"offset": 0.0}, {"offset": 300.0}, {"scale": 30.0}))
    + tuple({"offset": o} for o in (-20.0, 0.0, 1.0, 10.0, 100.0)),
)

N_ROWS, D = 32, 4096  # 131,072 numbers per request, fixed: the sliders change values, not sizes
EPS = 1e-5


def make_input(offset: float, scale: float, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """(N_ROWS, D) in the dtype; float64 holds exactly the same numbers after this rounding."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(N_ROWS, D, generator=g, dtype=torch.float64) * scale + offset).to(dtype)


@lru_cache(maxsize=1)
def _largest_draw() -> float:
    g = torch.Generator().manual_seed(0)
    return torch.randn(N_ROWS, D, generator=g, dtype=torch.float64).max().item()


def compute(params: dict) -> dict:
    offset, scale, name, upcast = params["offset"], params["scale"], params["dtype"], params["upcast"]
    dtype = DTYPES[name]
    x = make_input(offset, scale, dtype)
    exact = rmsnorm_float64(x, EPS)  # (N, D) float64
    norm = RMSNorm(D, EPS).to(dtype)
    with torch.no_grad():
        up = norm(x).double()
        plain = rmsnorm_no_upcast(x, norm.weight, EPS).double()
        ln = LayerNorm(D, EPS).double()(x.double())
    mine = up if upcast else plain
    err = lambda y: (y - exact).abs().max().item()  # noqa: E731
    finite = lambda y: bool(torch.isfinite(y).all())  # noqa: E731
    squares = x.double().pow(2)
    running = running_mean_square(x[0].double(), dtype)  # inf once a float16 total overflows
    info = torch.finfo(dtype)
    values = {
        "mean_after": mine.mean(-1).mean().item(),
        "rms_after": mine.pow(2).mean(-1).sqrt().mean().item(),
        # float64 mean of a centred row is ~1e-19: round it so it never prints as "-0.000"
        "layernorm_mean_after": round(ln.mean(-1).mean().item(), 12) + 0.0,
        "layernorm_rms_after": ln.pow(2).mean(-1).sqrt().mean().item(),
        "mean_theory": offset / math.sqrt(offset ** 2 + scale ** 2 + EPS),
        "error_upcast": err(up),
        "error_no_upcast": err(plain),
        "error_floor": err(exact.to(dtype).double()),
        # the no-upcast error, one rounding at a time (everything else exact)
        "error_round_squares": err(rmsnorm_rounded_at(x, dtype, ("squares",), EPS)),
        "error_round_mean_square": err(rmsnorm_rounded_at(x, dtype, ("mean_square",), EPS)),
        "error_round_scale": err(rmsnorm_rounded_at(x, dtype, ("mean_square", "rsqrt"), EPS)),
        "error_round_scale_product": err(rmsnorm_rounded_at(
            x, dtype, ("mean_square", "rsqrt", "product"), EPS)),
        "finite_no_upcast": finite(plain),
        "max_abs_input": x.double().abs().max().item(),
        "max_abs_exact": exact.abs().max().item(),  # the error of an all-zero output
        "squares_overflow": bool((squares > info.max).any()),
        "overflow_threshold": math.sqrt(info.max),
        # the smallest positive offset at which this draw's largest entry reaches that threshold
        "overflow_offset": math.sqrt(info.max) - scale * _largest_draw(),
        "d": D,
        "dtype_max": info.max,
        "mean_square_exact": squares[0].mean().item(),
        # JSON has no infinity: an overflowed running sum is reported as null plus a flag and words
        "mean_square_running": running if math.isfinite(running) else None,
        "mean_square_running_overflowed": not math.isfinite(running),
        "mean_square_running_text": (f"{running:.4g}" if math.isfinite(running)
                                     else f"overflows to infinity in {name}"),
        "eps_dtype": info.eps,
    }
    assert all(not isinstance(v, float) or math.isfinite(v) for v in values.values()), values
    return {"values": values, "figure": _figure(name, upcast, values),
            "summary": _summary(name, upcast, values), "table": _table(name, values)}


def _figure(name, upcast, v) -> dict:
    errors = [v["error_floor"], v["error_upcast"], v["error_no_upcast"]]
    colors = [COLORS["guide"], COLORS["scaled"], COLORS["unscaled"]]
    mine = 1 if upcast else 2
    data = [
        {"type": "bar", "x": ["mean", "RMS"], "y": [v["mean_after"], v["rms_after"]],
         "name": "RMSNorm", "marker": {"color": COLORS["scaled"]},
         "hovertemplate": "RMSNorm %{x}: %{y:.3f}<extra></extra>"},
        {"type": "bar", "x": ["mean", "RMS"], "y": [v["layernorm_mean_after"], v["layernorm_rms_after"]],
         "name": "LayerNorm", "marker": {"color": COLORS["purple"]},
         "hovertemplate": "LayerNorm %{x}: %{y:.3f}<extra></extra>"},
        # a linear axis from 0, so a factor of two between two bars looks like a factor of two
        {"type": "bar", "x": ["round exact", "upcast", "no upcast"], "y": errors,
         "xaxis": "x2", "yaxis": "y2",
         "marker": {"color": colors, "line": {"width": [3 if i == mine else 0 for i in range(3)],
                                              "color": COLORS["accent"]}},
         "showlegend": False, "hovertemplate": "%{x}: %{y:.3g}<extra></extra>"},
    ]
    layout = base_layout(
        400, barmode="group",
        xaxis={"domain": [0, 0.42], "type": "category"},
        yaxis={"title": {"text": "after the norm (row average)"}, "automargin": True},
        xaxis2={"domain": [0.58, 1], "anchor": "y2", "type": "category"},
        yaxis2={"anchor": "x2", "rangemode": "tozero", "exponentformat": "e", "automargin": True,
                "title": {"text": f"max error vs float64 ({name})"}},
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.12, "yanchor": "top"},
        annotations=[
            {"text": "RMSNorm does not centre", "showarrow": False, "x": 0.21, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": f"rounding error in {name}", "showarrow": False, "x": 0.79, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
    )
    # Phone: the charts stack; short axis titles (automargin keeps them off the tick labels)
    # and the legend, which names the top chart's bars, sits right under that chart.
    narrow = {"height": 700, "margin": {"l": 60, "r": 10, "t": 40, "b": 40},
              "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.62, 1], "title": {"text": "row average"}},
              "xaxis2": {"domain": [0, 1]},
              "yaxis2": {"domain": [0, 0.36], "title": {"text": "max error"}},
              "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 0.55, "yanchor": "top"},
              "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.04},
                              {**layout["annotations"][1], "x": 0.5, "y": 0.41}]}
    return {"data": data, "layout": layout, "narrow": narrow}


def _summary(name, upcast, v) -> str:
    return (f"After RMSNorm the rows have mean {v['mean_after']:.3f} and RMS {v['rms_after']:.3f}; "
            f"after LayerNorm, mean {v['layernorm_mean_after']:.3f} and RMS {v['layernorm_rms_after']:.3f}. "
            f"In {name} the largest error against float64 is {v['error_upcast']:.3g} with the upcast and "
            f"{v['error_no_upcast']:.3g} without it; rounding the exact answer alone costs {v['error_floor']:.3g}. "
            + (f"A running sum of the squares held in {name} overflows to infinity; the exact "
               f"mean square is {v['mean_square_exact']:.4g}."
               if v["mean_square_running_overflowed"] else
               f"A running sum of the squares held in {name} gives a mean square of "
               f"{v['mean_square_running_text']} (exact: {v['mean_square_exact']:.4g})."))


def _table(name, v) -> dict:
    return {
        "caption": f"{N_ROWS} rows of {D:,} numbers in {name}, normalised three ways.",
        "columns": ["quantity", "value"],
        "rows": [["mean after RMSNorm", f"{v['mean_after']:.3f}"],
                 ["RMS after RMSNorm", f"{v['rms_after']:.3f}"],
                 ["mean after LayerNorm", f"{v['layernorm_mean_after']:.3f}"],
                 ["RMS after LayerNorm", f"{v['layernorm_rms_after']:.3f}"],
                 ["max error, upcast", f"{v['error_upcast']:.3g}"],
                 ["max error, no upcast", f"{v['error_no_upcast']:.3g}"],
                 ["max error of rounding the exact answer", f"{v['error_floor']:.3g}"],
                 ["mean square, running sum in the dtype (row 1)", v["mean_square_running_text"]],
                 ["mean square, exact (row 1)", f"{v['mean_square_exact']:.4g}"]],
    }
