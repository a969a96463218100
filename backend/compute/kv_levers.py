"""Widget: one model's KV cache under each lever, per token and per user at a context length.

Llama-3-8B's shape, one lever at a time (backend/reference/kv_levers.py); every size is what the
book's KVCache holds after filling it on the meta device, so the work is a few dozen meta
tensors whatever the context.
"""

from __future__ import annotations

from backend.compute.spec import Output, Param, WidgetSpec
from backend.compute.style import COLORS, SERIES, base_layout
from backend.reference import kv_levers
from backend.reference.kv_levers import BASE, LEVERS, MLA_LATENT, MLA_ROPE
from backend.reference.latent_attention import step_flops

SPEC = WidgetSpec(
    name="kv_levers",
    try_next=(
        "Raise `context_len` to 131072: a sliding window keeps a fixed number of positions, so "
        "its cut grows with the context, while the cuts of grouped-query attention, MLA and the "
        "smaller number formats stay the same at any length."
    ),
    title="The cache's levers, one model",
    description="Llama-3-8B's KV cache per token and per user under each lever.",
    params=(
        Param("context_len", "context length", "int", default=32768, min=1024, max=131072,
              step=1, scale="log2", unit="tokens",
              help="Tokens one user's conversation holds."),
    ),
    outputs=(
        Output("gqa_user_gb", "one user, grouped-query as built (GB)", ".2f"),
        Output("mla_user_gb", "one user, latent attention (GB)", ".2f"),
        Output("window_user_gb", "one user, sliding window (GB)", ".2f"),
    ),
    bake=tuple({"context_len": t} for t in (1024, 4096, 8192, 16384, 65536, 131072)),
)


def compute(params: dict) -> dict:
    t = params["context_len"]
    base = kv_levers.user_bytes("gqa", t)
    values = {"context_len": t}
    for lever in LEVERS:
        user = kv_levers.user_bytes(lever.key, t)
        values.update({f"{lever.key}_bytes_per_token": kv_levers.bytes_per_token(lever.key),
                       f"{lever.key}_user_bytes": user,
                       f"{lever.key}_user_gb": user / 1e9,
                       f"{lever.key}_held_per_token": user / t,
                       f"{lever.key}_cut": base / user,
                       f"{lever.key}_saving_vs_mha": 1 - user / kv_levers.user_bytes("mha", t)})
    # latent attention at decode: rebuilding every cached token's keys and values per step,
    # against scoring the latents with the key matrix taken into the query (one layer's FLOPs)
    mla = step_flops(BASE.n_heads, BASE.d_head, MLA_LATENT, t)
    values.update({"mla_expanded_gflops": mla.expanded / 1e9,
                   "mla_absorbed_gflops": mla.absorbed / 1e9,
                   "mla_absorbed_saving": mla.expanded / mla.absorbed,
                   "mla_numbers_per_token": MLA_LATENT + MLA_ROPE})  # per layer, all heads
    return {"values": values, "figure": _figure(values), "table": _table(values),
            "summary": _summary(values)}


def _figure(v: dict) -> dict:
    names = [lever.name for lever in LEVERS]
    colours = [COLORS["unscaled"] if lv.key == "mha" else
               COLORS["scaled"] if lv.key == "gqa" else SERIES[2] for lv in LEVERS]
    sizes = [v[f"{lv.key}_user_gb"] for lv in LEVERS]
    # a linear axis, so that bar lengths compare as sizes do, and each bar's value printed on it
    data = [{"type": "bar", "orientation": "h", "y": names, "x": sizes,
             "marker": {"color": colours}, "text": [_gb(x) for x in sizes],
             "textposition": "outside", "cliponaxis": False,
             "hovertemplate": "%{y}: %{x:.3f} GB<extra></extra>", "name": "one user"}]
    layout = base_layout(
        360, showlegend=False,
        xaxis={"title": {"text": f"GB, one user at {v['context_len']:,} tokens"},
               "range": [0, 1.3 * max(sizes)]},
        yaxis={"autorange": "reversed", "automargin": True},
        margin={"l": 10, "r": 20, "t": 20, "b": 50},
    )
    # On a phone the levers' names take 40% of the width: the axis runs further past the
    # longest bar so that its label ("17.18 GB") ends inside the figure, not cut at its edge,
    # and its title takes two lines.
    title = f"GB, one user<br>at {v['context_len']:,} tokens"
    return {"data": data, "layout": layout,
            "narrow": {"height": 420, "yaxis": {"automargin": True, "tickfont": {"size": 10}},
                       "xaxis": {"range": [0, 1.6 * max(sizes)], "title": {"text": title}},
                       "margin": {"b": 66}}}


def _gb(x: float) -> str:
    """A bar's label: two decimals, three below 0.1 GB so that the smallest still reads."""
    return f"{x:.3f} GB" if x < 0.1 else f"{x:.2f} GB"


def _against_built(cut: float) -> str:
    """The cache against grouped-query as built, in words: 'n× smaller', 'n× larger', 'same'."""
    if cut == 1:
        return "same"
    return f"{cut:.3g}× smaller" if cut > 1 else f"{1 / cut:.3g}× larger"


def _table(v: dict) -> dict:
    rows = [[lv.name, lv.cached, f"{v[f'{lv.key}_bytes_per_token']:,}",
             f"{v[f'{lv.key}_user_gb']:.2f}", _against_built(v[f"{lv.key}_cut"])]
            for lv in LEVERS]
    return {"caption": f"Llama-3-8B's cache under each lever, one user at "
                       f"{v['context_len']:,} tokens",
            "columns": ["lever", "one token, one layer", "bytes per token",
                        "one user (GB)", "against as built"],
            "rows": rows}


def _summary(v: dict) -> str:
    others = [v[f"{lv.key}_user_gb"] for lv in LEVERS if lv.key not in ("mha", "gqa")]
    return (f"At {v['context_len']:,} tokens one user's Llama-3-8B cache is "
            f"{v['gqa_user_gb']:.2f} GB as built, {v['mha_user_gb']:.2f} GB with one key/value "
            f"head per query head, and from {min(others):.2f} to {max(others):.2f} GB under the "
            f"other levers.")
