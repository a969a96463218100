"""Widget: what prefix caching saves on one request's bill.

A request of `input_tokens`, the first `cached_tokens` of which are a prefix the provider has
kept cached, plus `output_tokens` generated. Priced three ways by backend/reference/pricing.py
(in exact decimal fractions): with no caching, as the first request (which writes the prefix at
the write price), and as a later request (which reads it at the cached price). Defaults: the
LLM-101 handout's text-to-SQL example (400 in, 100 out, 350 cached; $10 / $1 / $50 / $12.50 per
million tokens).
"""

from __future__ import annotations

from backend.compute.rules import Limit
from backend.compute.spec import Output, Param, WidgetSpec
from backend.compute.style import COLORS, SERIES, base_layout
from backend.reference import pricing
from backend.reference.serving import cached_prefix_tokens

MAX_TOKENS = 131_072  # a long context window; the sliders move in powers of two
# What a cache can serve of a shared prefix. Providers: nothing below a minimum cacheable length
# (at least 1,024 tokens at OpenAI and Anthropic, more for some Anthropic models), then OpenAI's
# steps of 128 tokens. Self-hosted engines: whole blocks of keys and values (vLLM's default block
# is 16 tokens), and never the prompt's last token, which must run to give the first new token.
PROVIDER_MINIMUM, PROVIDER_STEP, ENGINE_BLOCK = 1024, 128, 16
# The rules across params, as data the page follows (it clamps, never sends a refused setting):
# the cached prefix is part of the input, and writing the cache costs at least the input price
# (a provider that charges nothing extra for the write bills it at the input price).
CACHED_IN_INPUT = Limit(0, ((1, ("cached_tokens",)), (-1, ("input_tokens",))),
                        "the cached prefix is part of the input")
WRITE_AT_LEAST_INPUT = Limit(0, ((1, ("price_input",)), (-1, ("price_write",))),
                             "writing the prefix costs at least an uncached input")


SPEC = WidgetSpec(
    name="prefix_cache_cost",
    try_next=(
        "Move `cached_tokens` towards `input_tokens`: the more of the prompt is a cached prefix, "
        "the more of it is billed at the cached price, `price_cached`."
    ),
    title="What a cached prefix saves",
    description="One request's price with and without a cached prompt prefix.",
    params=(
        Param("input_tokens", "input tokens", "int", default=400, min=1, max=MAX_TOKENS, step=1,
              scale="log2", help="The whole prompt: the shared prefix and what follows it."),
        Param("cached_tokens", "cached prefix tokens", "int", default=350, min=1,
              max=MAX_TOKENS, step=1, scale="log2", limits=(CACHED_IN_INPUT,),
              help="How many of the input tokens, from the start, are a prefix already cached. "
                   "At most the input tokens. (The first bar is the request with nothing cached.)"),
        Param("output_tokens", "output tokens", "int", default=100, min=1, max=MAX_TOKENS,
              step=1, scale="log2"),
        Param("price_input", "input price", "float", default=10.0, min=0.0, max=200.0,
              step=0.01, unit="$ per million tokens", limits=(WRITE_AT_LEAST_INPUT,),
              help="At most the cache write price."),
        Param("price_cached", "cached input price", "float", default=1.0, min=0.0, max=200.0,
              step=0.01, unit="$ per million tokens"),
        Param("price_output", "output price", "float", default=50.0, min=0.0, max=200.0,
              step=0.01, unit="$ per million tokens"),
        Param("price_write", "cache write price", "float", default=12.5, min=0.0, max=200.0,
              step=0.01, unit="$ per million tokens",
              help="What the first request pays for the prefix it writes to the cache. At least "
                   "the input price: a provider that charges nothing extra for the write bills "
                   "it at the input price, so set the two equal."),
    ),
    outputs=(
        Output("cost_full", "per request, no caching ($)", ".5f"),
        Output("cost_cached", "per request, prefix cached ($)", ".5f"),
        Output("saving", "saving per cached request (negative: it costs more)", ".0%"),
        Output("cost_first_write", "first request, writes the prefix ($)", ".6f"),
        Output("break_even_requests", "requests until caching has paid", "d"),
    ),
    bake=(tuple({"cached_tokens": c} for c in (1, 50, 100, 200, 256, 300, 400))
          + tuple({"input_tokens": n} for n in (350, 512, 1024, 4000, 4096, 16384))
          + tuple({"output_tokens": n} for n in (1, 16, 128, 1024))),
    cost_hint="light",
)


def compute(params: dict) -> dict:
    n_in, n_out, n_cached = params["input_tokens"], params["output_tokens"], params["cached_tokens"]
    p_in, p_out = params["price_input"], params["price_output"]
    full = pricing.bill(n_in, n_out, 0, p_in, p_out, params["price_cached"])
    cached = pricing.bill(n_in, n_out, n_cached, p_in, p_out, params["price_cached"])
    write = pricing.first_write(n_in, n_out, n_cached, p_in, p_out, params["price_write"])
    even = pricing.requests_to_break_even(full, write, cached)
    values = {
        "cost_full": float(full.total),
        "cost_cached": float(cached.total),
        "saving": float(pricing.saving(full, cached)),
        "cost_first_write": float(write.total),
        "write_premium": float(write.total - full.total),
        "saving_per_request": float(full.total - cached.total),
        "break_even_requests": even if even is not None else 0,
        "pays_back": even is not None,
        "cached_share": n_cached / n_in,
        "output_share_full": float(full.output / full.total) if full.total else 0.0,
        "fresh_input_tokens": n_in - n_cached,
        "provider_minimum": PROVIDER_MINIMUM,
        "provider_step": PROVIDER_STEP,
        "engine_block": ENGINE_BLOCK,
        "cacheable_provider": cached_prefix_tokens(n_cached, PROVIDER_STEP, PROVIDER_MINIMUM),
        "cacheable_engine": cached_prefix_tokens(n_cached, ENGINE_BLOCK, prompt=n_in),
    }
    out = {"values": values, "figure": _figure(full, write, cached, n_cached),
           "summary": _summary(params, values), "table": _table(full, write, cached)}
    if n_cached < PROVIDER_MINIMUM:
        prefix = "the 1-token prefix is" if n_cached == 1 else f"all {n_cached:,} prefix tokens are"
        out["notice"] = (f"This bill assumes {prefix} cached. A provider "
                         f"with a {PROVIDER_MINIMUM:,}-token minimum (OpenAI, Anthropic; some "
                         f"Anthropic models need more) caches none of a prefix this short; a self-hosted engine with "
                         f"blocks of {ENGINE_BLOCK} reuses {values['cacheable_engine']:,} of them.")
    if even is None:
        out["notice"] = out.get("notice", "") + (" " if "notice" in out else "") + (
            "A cached request costs no less than an uncached one at these prices, "
            "so caching never pays for itself, however cheap the write (requests "
            "until caching has paid: 0 means never).")
    return out


ROWS = ("no caching", "first request (writes the prefix)", "later request (prefix cached)")
# the same three on the bar chart's axis, broken in two so a phone keeps room for the bars
AXIS = ("no caching", "first request<br>(writes the prefix)", "later request<br>(prefix cached)")


def _figure(full, write, cached, n_cached: int) -> dict:
    bills = (full, write, cached)
    parts = (("input at the input price", "uncached_input", SERIES[0]),
             (f"prefix ({n_cached:,} tokens) at its cache price", "cached_input", SERIES[4]),
             ("output", "output", SERIES[2]))
    data = [{"type": "bar", "orientation": "h", "y": list(AXIS),
             "x": [float(getattr(b, attr)) for b in bills], "name": name,
             "marker": {"color": colour},
             "hovertemplate": "%{y}: $%{x:.5f}<extra>" + name + "</extra>"}
            for name, attr, colour in parts]
    data.append({"type": "scatter", "mode": "markers", "y": list(AXIS),
                 "x": [float(b.total) for b in bills], "name": "total",
                 "marker": {"symbol": "line-ns-open", "size": 18, "color": COLORS["accent"],
                            "line": {"width": 3}},
                 "hovertemplate": "%{y}: $%{x:.5f} in all<extra></extra>"})
    layout = base_layout(
        340, barmode="stack",
        xaxis={"title": {"text": "dollars per request"}, "tickprefix": "$", "rangemode": "tozero"},
        yaxis={"autorange": "reversed", "automargin": True},
        margin={"l": 60, "r": 10, "t": 20, "b": 50},
        legend={"orientation": "h", "y": -0.3, "traceorder": "normal"},
    )
    narrow = {"height": 460, "yaxis": {"automargin": True, "tickfont": {"size": 10}},
              "legend": {"y": -0.45, "font": {"size": 11}}}
    return {"data": data, "layout": layout, "narrow": narrow}


def _summary(params: dict, v: dict) -> str:
    return (f"{params['input_tokens']:,} input tokens ({params['cached_tokens']:,} of them a cached "
            f"prefix) and {params['output_tokens']:,} output tokens cost ${v['cost_full']:.5f} "
            f"without caching and ${v['cost_cached']:.5f} once the prefix is cached, "
            f"{_change(v['saving'])}; the request that writes the prefix costs "
            f"${v['cost_first_write']:.5f}.")


def _change(saving: float) -> str:
    if saving > 0:
        return f"{saving:.0%} less"
    return "no less" if saving == 0 else f"{-saving:.0%} more"


def _table(full, write, cached) -> dict:
    rows = [[name, f"${float(b.uncached_input):.5f}", f"${float(b.cached_input):.5f}",
             f"${float(b.output):.5f}", f"${float(b.total):.5f}"]
            for name, b in zip(ROWS, (full, write, cached))]
    return {"caption": "One request's price by part, in dollars",
            "columns": ["request", "input at input price", "prefix at its cache price", "output",
                        "total"],
            "rows": rows}
