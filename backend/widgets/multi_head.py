"""Widget: many query heads, fewer key/value heads.

One causal self-attention layer (the book's `GroupedQueryAttention`, with RoPE) over a real
sentence. Its weights are seeded, not trained: the sliders change the layer's *shape*, and a
trained model exists for one shape only. The multi-head layer (n_kv = h) is drawn once per
(h, d); the grouped-query layer is made from it by mean-pooling each group's key and value
projections (Ainslie et al., 2023), so the two can be compared output for output.
"""

from __future__ import annotations

from functools import lru_cache


from backend.reference.config import ModelConfig
from backend.reference.counting import count_module
from backend.reference.head_cost import head_table
from backend.reference.kv_sharing import (kv_bytes_per_token, mean_pool_kv, relative_error,
                                          run_layer, seeded_attention, word_vectors)
from backend.reference.two_heads import example as two_heads_example
from backend.widgets.spec import Output, Param, ParamError, WidgetSpec
from backend.widgets.style import SERIES, WEIGHT_SCALE, base_layout

SENTENCE = "The keys to the cabinet were on the table"
WORDS = SENTENCE.lower().split()
SEED = 0
MAX_HEADS = 16
COST_SEQ_LEN = 2048  # context length at which the chapter's FLOP table is counted

LABEL_H, LABEL_KV, LABEL_D = "query heads h", "key/value heads n_kv", "model width d"


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


SPEC = WidgetSpec(
    name="multi_head",
    title="Many heads, shared keys and values",
    description="Per-head attention maps of one causal layer, its parameters and KV cache, "
                "as the key/value heads are shared by more query heads.",
    params=(
        Param("n_heads", LABEL_H, "int", default=8, min=1, max=MAX_HEADS, step=1,
              help="Query heads; each is d / h numbers wide and has its own W_Q."),
        Param("n_kv", LABEL_KV, "int", default=2, min=1, max=MAX_HEADS, step=1,
              help="Key/value heads: 1 is multi-query, h is ordinary multi-head attention. "
                   "Must divide h."),
        Param("d_model", LABEL_D, "int", default=512, min=32, max=1024, step=32,
              help="Numbers per token; must be a multiple of h."),
    ),
    outputs=(
        Output("d_head", "width of one head d/h", ".0f"),
        Output("n_rep", "query heads per KV head", ".0f"),
        Output("params_attention", "attention parameters", ",d"),
        Output("params_kv", "of which W_K and W_V", ",d"),
        Output("kv_bytes_per_token", "KV cache per token per layer (bf16)", ",.0f", "bytes"),
        Output("kv_fraction", "cache vs multi-head", ".3f"),
        Output("relative_error", "output change vs multi-head", ".3f"),
    ),
    # Offline: every valid (h, n_kv) for h a power of two at d = 512, and a sweep of d.
    bake=tuple({"n_heads": h, "n_kv": k} for h in (1, 2, 4, 8, 16) for k in _divisors(h))
    + tuple({"d_model": d} for d in (64, 128, 256, 1024)),
)


def check(params: dict) -> None:
    """The cross-parameter rules, in the labels the reader sees."""
    h, n_kv, d = params["n_heads"], params["n_kv"], params["d_model"]
    if n_kv > h or h % n_kv:
        choices = ", ".join(str(k) for k in _divisors(h))
        raise ParamError(f"'{LABEL_KV}' must divide '{LABEL_H}': with {h} query heads choose "
                         f"one of {choices}, got {n_kv}", "n_kv")
    if d % h:
        raise ParamError(f"'{LABEL_D}' must be a multiple of '{LABEL_H}' so every head gets "
                         f"d / h numbers: {d} is not a multiple of {h}", "d_model")


def config_for(h: int, n_kv: int, d: int) -> ModelConfig:
    return ModelConfig(vocab_size=1, d_model=d, n_layers=1, n_heads=h, n_kv_heads=n_kv, d_ff=1)


@lru_cache(maxsize=8)
def _multi_head(h: int, d: int):
    """The n_kv = h layer, its input and output; read-only after construction."""
    cfg = config_for(h, h, d)
    layer = seeded_attention(cfg, SEED)
    x = word_vectors(WORDS, d)  # (1, T, d)
    y, w = run_layer(layer, x, cfg)
    return layer, cfg, x, y, w, kv_bytes_per_token(layer, x, cfg)


@lru_cache(maxsize=1)
def _constants() -> dict:
    """The chapter's fixed examples: the handout's two heads and the published head shapes."""
    return {"two_heads": two_heads_example(), "head_table": list(head_table(COST_SEQ_LEN)),
            "cost_seq_len": COST_SEQ_LEN}


def compute(params: dict) -> dict:
    check(params)
    h, n_kv, d = params["n_heads"], params["n_kv"], params["d_model"]
    mha, mha_cfg, x, y_mha, w_mha, kv_mha = _multi_head(h, d)
    cfg = config_for(h, n_kv, d)
    layer = mean_pool_kv(mha, mha_cfg, n_kv)
    y, w = run_layer(layer, x, cfg)
    kv = kv_bytes_per_token(layer, x, cfg)
    maps = w[0]  # (h, T, T)
    groups = [i // cfg.n_rep for i in range(h)]  # repeat_kv: KV head j serves heads j*n_rep..
    values = {
        "d_head": cfg.d_head,
        "n_rep": cfg.n_rep,
        "params_attention": count_module(layer),
        "params_kv": count_module(layer.k_proj) + count_module(layer.v_proj),
        "params_attention_mha": count_module(mha),
        "params_kv_mha": count_module(mha.k_proj) + count_module(mha.v_proj),
        "kv_bytes_per_token": kv,
        "kv_bytes_per_token_mha": kv_mha,
        "kv_fraction": kv / kv_mha,
        "relative_error": relative_error(y, y_mha),
        "max_weight_change": float((w - w_mha).abs().max()),
        "words": WORDS,
        "groups": groups,
        "maps": [[[round(float(v), 3) for v in row] for row in m] for m in maps],
        **_constants(),
    }
    return {"values": values, "figure": _figure(values, h, n_kv, d),
            "summary": _summary(values, h, n_kv), "table": _table(values)}


def _summary(v: dict, h: int, n_kv: int) -> str:
    kind = ("multi-head attention" if n_kv == h else
            "multi-query attention" if n_kv == 1 else "grouped-query attention")
    return (f"{h} attention maps over the sentence '{SENTENCE}', one per query head, "
            f"{kind} with {n_kv} key/value head{'s' if n_kv > 1 else ''}. "
            f"The KV cache is {v['kv_fraction']:.3f} of the multi-head layer's, and the output "
            f"differs from it by {v['relative_error']:.3f} (relative).")


def _table(v: dict) -> dict:
    last = v["words"][-1]
    return {
        "caption": f"Weight from the last word, '{last}', to every word, per query head",
        "columns": ["head", "KV head"] + v["words"],
        "rows": [[i, g] + [round(x, 3) for x in m[-1]] for i, (g, m) in
                 enumerate(zip(v["groups"], v["maps"]))],
    }


def _grid(h: int, cols: int, gap: float = 0.06) -> list[tuple[list[float], list[float]]]:
    """(x domain, y domain) of each head's panel, filled row by row from the top."""
    rows = -(-h // cols)
    w, hgt = (1 - gap * (cols - 1)) / cols, (1 - gap * 1.6 * (rows - 1)) / rows
    out = []
    for i in range(h):
        r, c = divmod(i, cols)
        x0, y1 = c * (w + gap), 1 - r * (hgt + gap * 1.6)
        out.append(([round(x0, 4), round(x0 + w, 4)], [round(y1 - hgt, 4), round(y1, 4)]))
    return out


def _axes_and_titles(v: dict, h: int, cols: int) -> dict:
    layout = {"annotations": []}
    rows = -(-h // cols)
    for i, (xd, yd) in enumerate(_grid(h, cols)):
        n = "" if i == 0 else str(i + 1)
        r, c = divmod(i, cols)
        layout[f"xaxis{n}"] = {"domain": xd, "anchor": f"y{n}", "showticklabels": r == rows - 1
                               or i + cols >= h, "tickangle": -60, "tickfont": {"size": 9}}
        layout[f"yaxis{n}"] = {"domain": yd, "anchor": f"x{n}", "autorange": "reversed",
                               "showticklabels": c == 0, "tickfont": {"size": 9}}
        g = v["groups"][i]
        layout["annotations"].append({
            "text": f"head {i} · KV {g}", "showarrow": False, "xref": "paper", "yref": "paper",
            "x": (xd[0] + xd[1]) / 2, "y": yd[1], "yanchor": "bottom", "xanchor": "center",
            "font": {"size": 11, "color": SERIES[g % len(SERIES)]}})
    return layout


def _figure(v: dict, h: int, n_kv: int, d: int) -> dict:
    words = v["words"]
    ticks = list(range(len(words)))
    data = []
    for i, m in enumerate(v["maps"]):
        n = "" if i == 0 else str(i + 1)
        data.append({
            "type": "heatmap", "z": m, "x": ticks, "y": ticks, "zmin": 0, "zmax": 1,
            "colorscale": WEIGHT_SCALE, "reversescale": False, "showscale": i == 0,
            "colorbar": {"title": {"text": "weight"}, "thickness": 10, "len": 0.5},
            "xaxis": f"x{n}", "yaxis": f"y{n}", "name": f"head {i}",
            "hovertemplate": f"head {i}, KV {v['groups'][i]}<br>word %{{y}} → word %{{x}}<br>"
                             "weight %{z:.3f}<extra></extra>",
        })
    cols = min(4, h)
    rows = -(-h // cols)
    layout = base_layout(height=150 + 170 * rows, **_axes_and_titles(v, h, cols))
    layout["margin"] = {"l": 70, "r": 10, "t": 40, "b": 70}
    for key in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
        layout[key].update({"tickmode": "array", "tickvals": ticks, "ticktext": words})
    layout["title"] = {"text": f"h = {h} query heads, n_kv = {n_kv} key/value heads, d = {d}",
                       "font": {"size": 13}}
    ncols = min(2, h)
    nrows = -(-h // ncols)
    narrow = {"height": 120 + 170 * nrows, **_axes_and_titles(v, h, ncols)}
    return {"data": data, "layout": layout, "narrow": narrow}
