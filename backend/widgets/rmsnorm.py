"""Widget: RMSNorm against LayerNorm, and what the float32 upcast buys in bfloat16 and float16.

Rows of d = 4096 numbers, drawn as offset + scale * N(0, 1) and rounded to the chosen dtype, go
through the book's RMSNorm (reduction upcast to float32) and through the same formula computed
entirely in the dtype. Both are compared with float64 arithmetic on the same rounded input.
"""

from __future__ import annotations

import torch

from backend.reference.norms import (LayerNorm, RMSNorm, rmsnorm_float64, rmsnorm_no_upcast,
                                     running_mean_square)
from backend.widgets.spec import Output, Param, WidgetSpec
from backend.widgets.style import COLORS, base_layout

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

SPEC = WidgetSpec(
    name="rmsnorm",
    title="RMSNorm, LayerNorm and the float32 upcast",
    description="Mean and RMS after each norm, and the rounding error with and without the upcast.",
    params=(
        Param("offset", "offset (mean of the input)", "float", default=3.0, min=-400.0, max=400.0,
              step=0.5, help="Added to every entry: how far off-centre the input is."),
        Param("scale", "scale (spread of the input)", "float", default=1.0, min=0.01, max=1000.0,
              step=0.01, scale="log2", help="Standard deviation of the random part."),
        Param("dtype", "dtype", "choice", default="bfloat16", options=tuple(DTYPES),
              help="The precision the model runs in."),
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
    values = {
        "mean_after": mine.mean(-1).mean().item(),
        "rms_after": mine.pow(2).mean(-1).sqrt().mean().item(),
        "layernorm_mean_after": ln.mean(-1).mean().item(),
        "layernorm_rms_after": ln.pow(2).mean(-1).sqrt().mean().item(),
        "mean_theory": offset / (offset ** 2 + scale ** 2) ** 0.5,
        "error_upcast": err(up),
        "error_no_upcast": err(plain),
        "error_floor": err(exact.to(dtype).double()),
        "finite_no_upcast": finite(plain),
        "squares_overflow": bool((squares > torch.finfo(dtype).max).any()),
        "mean_square_exact": squares[0].mean().item(),
        "mean_square_running": running_mean_square(x[0].double(), dtype),
        "eps_dtype": torch.finfo(dtype).eps,
    }
    return {"values": values, "figure": _figure(name, upcast, values),
            "summary": _summary(name, upcast, values), "table": _table(name, values)}


def _figure(name, upcast, v) -> dict:
    floor = max(v["error_floor"], 1e-12)
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
        {"type": "bar", "x": ["round exact", "upcast", "no upcast"],
         "y": [max(e, floor / 10) for e in errors], "xaxis": "x2", "yaxis": "y2",
         "marker": {"color": colors, "line": {"width": [3 if i == mine else 0 for i in range(3)],
                                              "color": COLORS["accent"]}},
         "customdata": errors, "showlegend": False,
         "hovertemplate": "%{x}: %{customdata:.3g}<extra></extra>"},
    ]
    layout = base_layout(
        400, barmode="group",
        xaxis={"domain": [0, 0.42], "type": "category"},
        yaxis={"title": {"text": "after the norm (row average)"}},
        xaxis2={"domain": [0.56, 1], "anchor": "y2", "type": "category"},
        yaxis2={"anchor": "x2", "type": "log", "title": {"text": f"max error vs float64 ({name})"}},
        annotations=[
            {"text": "RMSNorm does not centre", "showarrow": False, "x": 0.21, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
            {"text": f"rounding error in {name}", "showarrow": False, "x": 0.78, "y": 1.08,
             "xref": "paper", "yref": "paper", "xanchor": "center"},
        ],
    )
    narrow = {"height": 680, "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.6, 1]},
              "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.4]}, "legend": {"y": -0.1},
              "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.04},
                              {**layout["annotations"][1], "x": 0.5, "y": 0.45}]}
    return {"data": data, "layout": layout, "narrow": narrow}


def _summary(name, upcast, v) -> str:
    return (f"After RMSNorm the rows have mean {v['mean_after']:.3f} and RMS {v['rms_after']:.3f}; "
            f"after LayerNorm, mean {v['layernorm_mean_after']:.3f} and RMS {v['layernorm_rms_after']:.3f}. "
            f"In {name} the largest error against float64 is {v['error_upcast']:.3g} with the upcast and "
            f"{v['error_no_upcast']:.3g} without it; rounding the exact answer alone costs {v['error_floor']:.3g}.")


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
                 ["max error of rounding the exact answer", f"{v['error_floor']:.3g}"]],
    }
