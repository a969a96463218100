"""Widget: what one decode step takes on a card, by the roofline (backend/reference/decode_time.py).

Analytic, not measured: the bytes a step reads are the book's own weights and cache (counted on
the meta device by `serving`), the FLOPs are 2 x params per user plus attention over the cache,
and the card's memory bandwidth and peak FLOP/s are its published figures (`serving.CARDS`, each
with its datasheet). The step time is the slower of reading and computing at those ceilings, a
lower bound no real server reaches. Cards with no published figure (the generic 24 GB card)
are not offered. Batches that do not fit in the card's memory at that context are reported as
such, from `serving.users_fit`, and left off the throughput curve.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

from backend.compute.spec import Output, Param, WidgetSpec
from backend.compute.style import COLORS, base_layout, duration
from backend.reference import decode_time as dt
from backend.reference.presets import DECODER_PRESETS, PRESETS
from backend.reference.serving import CARDS, GB, cache_bytes, users_fit

TIMED_CARDS = tuple(k for k, c in CARDS.items() if c.bandwidth is not None)
MAX_BATCH = 1024
MAX_CONTEXT = 1_048_576
X_LO, X_HI = 0.5, 4096
RIDGES = {k: dt.ridge_point(CARDS[k]) for k in TIMED_CARDS}
RIDGE_MIN = min(RIDGES, key=RIDGES.get)
RIDGE_MAX = max(RIDGES, key=RIDGES.get)
VERIFY_K = 4  # drafted tokens one speculative step checks  # FLOP per byte on the roofline's axis

SPEC = WidgetSpec(
    name="decode_roofline",
    try_next=(
        "Raise `batch`: one decode step reads the weights once for all the users in it, so the "
        "whole batch's tokens per second grow far faster than each step slows, until reading "
        "the users' caches dominates."
    ),
    title="What one decode step takes",
    description="The least time a decode step can take on one card: the bytes it reads (every "
                "weight, each user's cache) over the card's published memory bandwidth, or its "
                "FLOPs over the published peak, whichever is slower. Analytic, not measured.",
    params=(
        Param("card", "accelerator", "choice", default="80", options=TIMED_CARDS,
              option_labels=tuple(CARDS[k].name for k in TIMED_CARDS),
              help="; ".join(f"{CARDS[k].name}: {CARDS[k].bandwidth_gbs} GB/s, "
                             f"{CARDS[k].peak_tflops} TFLOP/s" for k in TIMED_CARDS)
                   + ". Published figures (the datasheets are named in the chapter's notes)."),
        Param("preset", "model", "choice", default="llama-3-8b", options=DECODER_PRESETS,
              help="A real model's published config; weights and cache in bfloat16."),
        Param("batch", "users in the batch B", "int", default=1, min=1, max=MAX_BATCH, step=1,
              scale="log2", help="Users decoded together, one token each per step."),
        Param("context_len", "context length T", "int", default=8192, min=1, max=MAX_CONTEXT,
              step=1, scale="log2", unit="tokens",
              help="Tokens each user's cache holds when the step runs."),
        Param("price", "card price", "float", default=2.0, min=0.1, max=20.0, step=0.05,
              unit="$ per hour",
              help="What an hour of the card costs you (to rent, or its purchase and power "
                   "spread over its hours): an assumption to set, not a quote."),
    ),
    outputs=(
        Output("step_ms", "step time, at least", ".3g", "ms"),
        Output("tok_s_user", "tokens/s per user, at most", ".3g"),
        Output("tok_s_total_shown", "tokens/s in all, at most"),  # 3 significant figures
        Output("bound", "what binds"),
        Output("intensity", "arithmetic intensity", ".3g", "FLOP/byte"),
        Output("ridge", "card's ridge point", ".3g", "FLOP/byte"),
        Output("users_fit", "users at T that fit", ",d"),
        Output("dollars_per_million", "$ per million tokens, at least", ".3g"),
    ),
    bake=(tuple({"card": k} for k in TIMED_CARDS)
          + tuple({"batch": 4 ** i} for i in range(6))
          + tuple({"context_len": 4 ** i} for i in range(11))),
    cost_hint="light",
)


def _curve_batches(fit: int) -> list[int]:
    """Powers of two up to what fits (and the slider's top), and the fitting count itself."""
    top = min(fit, MAX_BATCH)
    out = [b for b in (2 ** i for i in range(11)) if b <= top]
    if top >= 1 and top not in out:
        out.append(top)
    return out


def compute(params: dict) -> dict:
    cfg = PRESETS[params["preset"]]
    card = CARDS[params["card"]]
    B, T = params["batch"], params["context_len"]
    s = dt.step(cfg, card, B, T)
    per_user, _ = cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.d_head, T, 1)
    fit = users_fit(card.memory_bytes, s.weight_bytes, per_user)
    one = dt.step(cfg, card, 1, T)
    cb = dt.compute_bound_batch(cfg, card, T)
    never = dt.never_compute_bound_from(cfg, card)
    verify = dt.verify_step(cfg, card, B, T, VERIFY_K)
    curve = []
    for b in _curve_batches(fit.users):
        sb = dt.step(cfg, card, b, T)
        curve.append([b, float(sb.tokens_per_s_per_user), float(sb.tokens_per_s),
                      float(sb.seconds * 1000), sb.bound])
    bw, peak = card.bandwidth, card.peak_flops
    values = {
        "card_name": card.name,
        "bandwidth_gbs": float(bw / 10**9),
        "peak_tflops": float(peak / 10**12),
        "ridge": float(dt.ridge_point(card)),
        # the lowest and highest ridge over the cards the widget offers, and whose they are
        "ridge_min": float(min(RIDGES.values())), "ridge_min_card": CARDS[RIDGE_MIN].name,
        "ridge_max": float(max(RIDGES.values())), "ridge_max_card": CARDS[RIDGE_MAX].name,
        # the model's own shapes, as the formulas name them
        "n_layers": cfg.n_layers, "n_heads": cfg.n_heads, "n_kv_heads": cfg.n_kv_heads,
        "d_head": cfg.d_head, "max_seq_len": cfg.max_seq_len,
        "cache_bytes_per_number": per_user // (2 * cfg.n_layers * cfg.n_kv_heads * cfg.d_head * T),
        "beyond_max_seq_len": T > cfg.max_seq_len,
        "weights_gb": s.weight_bytes / GB,
        "cache_gb": s.cache_bytes / GB,
        "per_user_gb": per_user / GB,
        "bytes_gb": (s.weight_bytes + s.cache_bytes) / GB,
        "flops_t": (s.weight_flops + s.attention_flops) / 10**12,
        "weights_read_ms": float(s.weight_bytes / bw * 1000),
        "cache_read_ms": float(s.cache_bytes / bw * 1000),
        "read_ms": float(s.read_s * 1000),
        "compute_ms": float(s.compute_s * 1000),
        "step_ms": float(s.seconds * 1000),
        "tok_s_user": float(s.tokens_per_s_per_user),
        "tok_s_total": float(s.tokens_per_s),
        "tok_s_total_shown": _sig3(float(s.tokens_per_s)),
        "card_ms_per_token": float(s.seconds_per_token * 1000),
        # the card's hour spread over the tokens it serves in it, at the roofline's pace
        "price": params["price"],
        "dollars_per_million": float(s.seconds_per_token * Fraction(str(params["price"]))
                                     / 3600 * 10**6),
        "bound": s.bound,
        "memory_bound": s.bound == "memory",
        "intensity": float(dt.intensity(cfg, B, T)),
        "intensity_one_user": float(dt.intensity(cfg, 1, T)),
        "cache_intensity": cfg.n_heads / cfg.n_kv_heads,  # FLOP per cache byte, any B
        "attained_tflops": float((s.weight_flops + s.attention_flops) / s.seconds / 10**12),
        "weights_compute_batch": dt.weights_compute_batch(cfg, card),
        "compute_bound_batch": cb or 0,
        "ever_compute_bound": cb is not None,
        "never_compute_bound_from": never or 0,
        "floor_ms": float(one.weight_bytes / bw * 1000),  # batch 1, weights alone
        "floor_tok_s": float(bw / one.weight_bytes),
        "prefill_ms": float(dt.prefill_time(cfg, card, T) * 1000),  # one user's prompt of T
        "prefill_compute_bound": dt.prefill_time(cfg, card, T) > Fraction(
            s.weight_bytes + per_user, bw),
        "verify_ms": float(verify.seconds * 1000),
        "verify_over_step": float(verify.seconds / s.seconds),
        "verify_k": VERIFY_K,
        "spare_prefill_tokens": dt.spare_prefill_tokens(cfg, card, B, T),
        "users_fit": fit.users,
        "card_gb": card.memory_bytes / GB,  # what CUDA reports: more than the name's "80 GB"
        "card_reported_gib": card.reported_gib,
        "weights_fit": fit.weights_fit,
        "batch_fits": B <= fit.users,
        "cache_over_weights": s.cache_bytes / s.weight_bytes,
        "curve": curve,
        "preset": params["preset"], "batch": B, "context_len": T,
    }
    out = {"values": values, "figure": _figure(params, values), "summary": _summary(params, values),
           "table": _table(values)}
    notice = _notice(params, values)
    if notice:
        out["notice"] = notice
    return out


def facts(params: dict) -> dict:
    """Values only the prose quotes: how many operations one eager decode step of the book's
    model dispatches at this preset's shape (the chapter's notes on timing a step on a GPU), and
    the batch-1 floor with the weights stored in bfloat16, int8 and int4."""
    cfg, card = PRESETS[params["preset"]], CARDS[params["card"]]
    out = {"eager_step_ops": eager_step_operations(params["preset"])}
    for fmt in dt.WEIGHT_FORMATS:  # the batch-1 floor, weights alone, in each number format
        w = dt.weight_bytes_as(cfg, fmt)
        out[f"weights_gb_{fmt}"] = w / GB
        out[f"floor_ms_{fmt}"] = float(Fraction(w) / card.bandwidth * 1000)
        out[f"floor_tok_s_{fmt}"] = float(card.bandwidth / Fraction(w))
    return out


@cache
def eager_step_operations(preset: str, context: int = 8) -> int:
    """The operations one decode step of the book's `DecoderLM` dispatches in eager PyTorch, at
    batch 1 after a prompt of `context` tokens, in bfloat16, on the meta device (shapes only,
    nothing allocated). Counted: each operation that returns a new tensor, which on a GPU is a
    kernel the CPU launches; views (and `_unsafe_view`, a view PyTorch does not mark as one) and
    operations that return no tensor are left out."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from backend.reference.model import DecoderLM

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            made = out if isinstance(out, (tuple, list)) else (out,)
            if (not func.is_view and func.overloadpacket is not torch.ops.aten._unsafe_view
                    and any(isinstance(t, torch.Tensor) for t in made)):
                self.n += 1
            return out

    with torch.device("meta"), torch.no_grad():
        model = DecoderLM(PRESETS[preset]).to(torch.bfloat16).eval()
        cache = model.new_cache()
        model(torch.zeros(1, context, dtype=torch.long), cache=cache)
        with Count() as count:
            model(torch.zeros(1, 1, dtype=torch.long), cache=cache)
    return count.n


def _sig3(x: float) -> str:
    """Three significant figures, with thousands separators: 2.23, 1,540, 40,600."""
    return f"{float(f'{x:.3g}'):,.{max(0, 2 - math.floor(math.log10(abs(x))))}f}" if x else "0"


def _users(n: int) -> str:
    return "1 user" if n == 1 else f"{n:,} users"


def _tokens(n: int) -> str:
    return "1 token" if n == 1 else f"{n:,} tokens"


def _notice(params: dict, v: dict) -> str:
    if not v["weights_fit"]:
        return (f"{params['preset']}'s weights ({v['weights_gb']:.1f} GB) do not fit in the "
                f"{v['card_name']}: it cannot serve anyone alone, and the times below are for a "
                f"card that does not exist.")
    notes = []
    if not v["batch_fits"]:
        B = params["batch"]
        verb = "does" if B == 1 else "do"
        holds = ("holds no user's cache at this length" if v["users_fit"] == 0 else
                 f"holds the cache of at most {_users(v['users_fit'])}")
        notes.append(f"{_users(B)} at {_tokens(params['context_len'])} {verb} not fit: beside "
                     f"the weights the {v['card_name']} {holds}. The times below are for a card "
                     f"with more memory.")
    if v["beyond_max_seq_len"]:
        notes.append(f"{params['preset']}'s published context is at most {v['max_seq_len']:,} "
                     f"tokens; the times below are the arithmetic for its shapes at "
                     f"{_tokens(params['context_len'])}, a length this model was not released "
                     f"to read.")
    return " ".join(notes)


def short_tick(t: float) -> str:
    """A tick label as plotly.js writes its own log ticks: 200, 500, 1k, 20k, 1M. Written in
    full, "1,000" widened the axis's margin on a phone until the panel's x labels touched."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if t >= size:
            return f"{t / size:g}{suffix}"
    return f"{t:g}"


def one_two_five(values: list[float]) -> dict:
    """A log axis's ticks over `values` at 1, 2 and 5 per decade (at powers of ten only over
    wider spans): plotly.js labels a log axis spanning about one decade at its single power of
    ten only (tokens/s in all from 119 to 1,540 read "100" and nothing else). Under a factor of 5
    there are too few such ticks: the axis is then linear, with plotly.js's own ticks."""
    values = [x for x in values if x > 0]
    if not values:
        return {"type": "log"}
    lo, hi = min(values), max(values)
    if hi < 5 * lo:
        return {"type": "linear"}
    per_decade = (1, 2, 5) if hi < 100 * lo else (1,)  # over 2 decades: 10 to the k (no crowd)
    ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
             for m in per_decade]
    ticks = [t for t in ticks if lo / 1.25 <= t <= hi * 1.25]  # plotly pads its range a little
    return {"type": "log", "tickvals": ticks, "ticktext": [short_tick(t) for t in ticks]}


def _figure(params: dict, v: dict) -> dict:
    bw_tb, peak, ridge = v["bandwidth_gbs"] / 1000, v["peak_tflops"], v["ridge"]
    roof_x = [X_LO, ridge, X_HI]
    roof_y = [X_LO * bw_tb, peak, peak]
    here = "your step" if v["batch_fits"] else "your step (does not fit in memory)"
    curve = v["curve"]
    data = [
        {"type": "scatter", "mode": "lines", "x": roof_x, "y": roof_y,
         "name": f"roof: {v['card_name']}", "line": {"color": COLORS["guide"], "width": 3},
         "hovertemplate": "%{x:.3g} FLOP/B: at most %{y:.3g} TFLOP/s<extra>roof</extra>"},
        {"type": "scatter", "mode": "lines", "x": [ridge, ridge], "y": [X_LO * bw_tb, peak],
         "name": f"ridge point ({ridge:.0f} FLOP/B)",
         "line": {"color": COLORS["guide"], "dash": "dot", "width": 1}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers", "x": [v["intensity_one_user"]],
         "y": [min(peak, v["intensity_one_user"] * bw_tb)], "name": "1 user",
         "marker": {"color": COLORS["scaled"], "size": 9},
         "hovertemplate": "1 user: %{x:.3g} FLOP/B<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": [v["intensity"]], "y": [v["attained_tflops"]],
         "name": here, "legendgroup": "step", "marker": {"color": COLORS["accent"], "size": 14,
                                  "symbol": "circle" if v["batch_fits"] else "x-open",
                                  "line": {"width": 3}},
         "hovertemplate": "%{x:.3g} FLOP/B, %{y:.3g} TFLOP/s<extra>your step</extra>"},
        {"type": "scatter", "mode": "lines+markers", "x": [c[1] for c in curve],
         "y": [c[2] for c in curve], "name": "batches that fit (B = 1, 2, 4, …)",
         "line": {"color": COLORS["scaled"]}, "marker": {"size": 7},
         "customdata": [c[0] for c in curve], "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": "B=%{customdata}: %{x:.3g} tok/s each, %{y:,.3r} in all"
                          "<extra></extra>"},
    ]
    if v["batch_fits"]:
        # The same step on the right-hand chart: one legend entry ("your step") for both marks,
        # never a second name for it ("B = 1" beside "1 user" read as two things).
        data.append({"type": "scatter", "mode": "markers", "x": [v["tok_s_user"]],
                     "y": [v["tok_s_total"]], "name": f"B = {params['batch']:,}",
                     "legendgroup": "step", "showlegend": False,
                     "marker": {"color": COLORS["accent"], "size": 13, "symbol": "circle-open",
                                "line": {"width": 3}}, "xaxis": "x2", "yaxis": "y2",
                     "hoverinfo": "skip"})
    layout = base_layout(
        460,
        title={"text": f"{params['preset']} on the {v['card_name']}, T = {params['context_len']:,}"},
        xaxis={"type": "log", "domain": [0, 0.44], "range": [-0.4, 3.7],
               "title": {"text": "FLOP per byte read"}},
        yaxis={"type": "log", "title": {"text": "TFLOP/s, at most"}, "automargin": True},
        xaxis2={"type": "log", "domain": [0.58, 1], "anchor": "y2",
                "title": {"text": "tokens/s per user"}},
        yaxis2={**one_two_five([c[2] for c in curve] + ([v["tok_s_total"]] if v["batch_fits"] else [])),
                "anchor": "x2",
                "title": {"text": "tokens/s in all"}, "automargin": True},
        margin={"l": 60, "r": 10, "t": 60, "b": 50},
        legend={"orientation": "h", "y": -0.25},
    )
    narrow = {
        "height": 820, "title": {"font": {"size": 13}},
        "margin": {"l": 60, "r": 10, "t": 50, "b": 170},
        "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.6, 1]},
        "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.4]},
        "legend": {"y": -0.12, "yanchor": "top", "font": {"size": 11}},
    }
    return {"data": data, "layout": layout, "narrow": narrow}


def _summary(params: dict, v: dict) -> str:
    B, T = params["batch"], params["context_len"]
    fits = ("" if v["batch_fits"] else " (it does not fit in its memory)" if B == 1
            else " (they do not fit in its memory)")
    return (f"One decode step of {_users(B)} at {_tokens(T)}{fits} reads "
            f"{_sig3(v['bytes_gb'])} GB ({_sig3(v['weights_gb'])} GB of weights, {_sig3(v['cache_gb'])} GB "
            f"of cache) and does {_sig3(v['flops_t'])} TFLOP. On the {v['card_name']} "
            f"({v['bandwidth_gbs']:,.0f} GB/s, {v['peak_tflops']:.4g} TFLOP/s) that takes at least "
            f"{duration(v['step_ms'])}, {v['bound']}-bound: at most {_sig3(v['tok_s_user'])} tokens/s "
            f"per user and {_sig3(v['tok_s_total'])} in all. The step does {_sig3(v['intensity'])} "
            f"FLOP per byte; the card's ridge point is {v['ridge']:.0f}.")


def _table(v: dict) -> dict:
    rows = [[f"{b:,}", f"{ms:.3g}", f"{u:.3g}", _sig3(t), bound]
            for b, u, t, ms, bound in v["curve"]]
    return {
        "caption": (f"Batches that fit at T = {v['context_len']:,} on the {v['card_name']}: the "
                    f"least step time and the most tokens per second the roofline allows."),
        "columns": ["users B", "step (ms)", "tokens/s per user", "tokens/s in all", "bound"],
        "rows": rows,
    }
