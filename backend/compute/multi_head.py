"""Widget: many query heads, fewer key/value heads.

One causal self-attention layer (the book's `GroupedQueryAttention`, with RoPE) over a real
sentence. Its weights are seeded, not trained: the sliders change the layer's *shape*, and a
trained model exists for one shape only. The multi-head layer (n_kv = h) is drawn once per
(h, d); the grouped-query layer is made from it by mean-pooling each group's key and value
projections (Ainslie et al., 2023), so the two can be compared output for output.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from backend.compute.spec import Depends, Output, Param, ParamError, WidgetSpec
from backend.compute.style import SERIES, TICK_PX, WEIGHT_SCALE, base_layout
from backend.reference.config import ModelConfig
from backend.reference.counting import count_module
from backend.reference.head_cost import head_table, init_stds
from backend.reference.kv_sharing import (
    kv_bytes_per_token,
    mean_pool_kv,
    relative_error,
    run_layer,
    seeded_attention,
    word_vectors,
)
from backend.reference.rng import isolated_rng
from backend.reference.two_heads import example as two_heads_example

SENTENCE = "The keys to the cabinet were on the table"
WORDS = SENTENCE.lower().split()
SEED = 0
MAX_HEADS = 16
COST_SEQ_LEN = 2048  # context length at which the chapter's FLOP table is counted

D_MIN, D_MAX, D_STEP = 32, 1024, 32
LABEL_H, LABEL_KV, LABEL_D = "query heads h", "key/value heads n_kv", "model width d"


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _widths(h: int) -> list[int]:
    """Model widths on the slider's step that h divides into even head widths (RoPE rotates
    pairs). On the step of 32 every multiple of h qualifies: d/h keeps a factor of two."""
    return [d for d in range(D_MIN, D_MAX + 1, D_STEP) if d % h == 0 and (d // h) % 2 == 0]


def check(params: dict) -> None:
    """The cross-parameter rules, in the labels the reader sees."""
    h, n_kv, d = params["n_heads"], params["n_kv"], params["d_model"]
    if n_kv > h or h % n_kv:
        choices = ", ".join(str(k) for k in _divisors(h))
        raise ParamError(f"'{LABEL_KV}' must divide '{LABEL_H}': with {h} query heads choose "
                         f"one of {choices}, got {n_kv}", "n_kv")
    if d not in _widths(h):
        raise ParamError(f"'{LABEL_D}' must be a multiple of {D_STEP} and of '{LABEL_H}' so "
                         f"every head gets an even number d / h of numbers (RoPE turns pairs): "
                         f"got {d} with {h} query heads", "d_model")


SPEC = WidgetSpec(
    name="multi_head",
    try_next=(
        "Set `n_kv` to 1 (one shared key and value head, multi-query attention) with `n_heads` at "
        "16: the cache per token shrinks to a sixteenth while every query head stays."
    ),
    title="Many heads, shared keys and values",
    description="Per-head attention maps of one causal layer, its parameters and KV cache, "
                "as the key/value heads are shared by more query heads.",
    params=(
        Param("n_heads", LABEL_H, "int", default=8, min=1, max=MAX_HEADS, step=1,
              help="Query heads; each is d / h numbers wide and has its own W_Q."),
        Param("n_kv", LABEL_KV, "int", default=2, min=1, max=MAX_HEADS, step=1,
              help="Key/value heads: 1 is multi-query, h is ordinary multi-head attention. "
                   "Must divide h.",
              depends=(Depends("n_heads", {h: {"max": h, "allowed": _divisors(h),
                                               "note": "n_kv must divide h"}
                                           for h in range(1, MAX_HEADS + 1)}),)),
        Param("d_model", LABEL_D, "int", default=512, min=D_MIN, max=D_MAX, step=D_STEP,
              help="Numbers per token, in steps of 32; must be a multiple of h.",
              depends=(Depends("n_heads", {h: {"allowed": _widths(h),
                                               "note": "d must be a multiple of 32 and of h"}
                                           for h in range(1, MAX_HEADS + 1)}),)),
    ),
    outputs=(
        Output("d_head", "width of one head d/h", ".0f"),
        Output("n_rep", "query heads per KV head", ".0f"),
        Output("params_attention", "attention parameters", ",d"),
        Output("params_kv", "of which W_K and W_V", ",d"),
        Output("kv_bytes_per_token", "KV cache per token per layer (bf16)", ",.0f", "bytes"),
        Output("kv_fraction", "cache vs multi-head", ".4f"),
        Output("relative_error", "output change vs multi-head (1 = outputting zeros)", ".3f"),
        Output("norm_ratio", "output size vs multi-head", ".2f"),
        Output("entropy", "mean spread of a row (nats)", ".2f"),
    ),
    # Offline: every valid (h, n_kv) for h a power of two at d = 512, and a sweep of d.
    bake=tuple({"n_heads": h, "n_kv": k} for h in (1, 2, 4, 8, 16) for k in _divisors(h))
    + tuple({"d_model": d} for d in (64, 128, 256, 1024)),
    check=check,
)


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
    """The chapter's fixed examples: the two heads over "the river bank" and the published head shapes."""
    return {"two_heads": two_heads_example(), "head_table": list(head_table(COST_SEQ_LEN)),
            "cost_seq_len": COST_SEQ_LEN, "init": init_stds(512, 8)}


# Sentences for the trained measurement: plain English, none of them the chapter's own.
TRAINED_SENTENCES = (
    "The keys to the cabinet were on the table.",
    "The animal didn't cross the street because it was too tired.",
    "She poured the water from the jug into the glass until it was full.",
    "After the storm, the river rose and flooded the fields near the village.",
    "The committee postponed the vote because two members were ill.",
    "He read the letter twice before he understood what it meant.",
    "Most trains leave the station on time, but the last one is often late.",
    "The children who live next door play football in the park every Sunday.",
)


@lru_cache(maxsize=1)
def trained_pooling() -> dict | None:
    """The same mean-pooling on *trained* heads: MiniLM's 12 query heads in each of its 6
    layers, their keys and values pooled into n_kv contiguous groups (weights and biases), the
    attention output after W_O compared with the original's over every sentence above. None
    when this server cannot load MiniLM."""
    from backend.compute import attention_models
    from backend.reference.grouped_query import repeat_kv

    try:
        model, tok = attention_models._hf(str(attention_models.minilm_dir()))
    except ParamError:
        return None
    n_heads = model.config.num_attention_heads
    d_head = model.config.hidden_size // n_heads
    choices = [k for k in range(n_heads - 1, 0, -1) if n_heads % k == 0]  # 6, 4, 3, 2, 1
    diff2 = {k: [0.0] * len(model.encoder.layer) for k in choices}
    ref2 = [0.0] * len(model.encoder.layer)

    def heads(x, lin, n):  # (T, d) -> (n, T, d_head)
        return lin(x).view(x.shape[0], n, d_head).transpose(0, 1)

    with torch.no_grad():
        for text in TRAINED_SENTENCES:
            enc = tok(text, return_tensors="pt")
            hidden = model(**enc, output_hidden_states=True).hidden_states  # input to each layer
            for li, layer in enumerate(model.encoder.layer):
                att, x = layer.attention, hidden[li][0]  # (T, d)
                q = heads(x, att.self.query, n_heads)  # (h, T, d_head)

                # bidirectional attention, then W_O (its bias left out); called at once below
                def output(k, v, q=q, x=x, att=att):
                    w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d_head), dim=-1)
                    ctx = (w @ v).transpose(0, 1).reshape(x.shape[0], -1)  # (T, d)
                    return ctx @ att.output.dense.weight.T

                y = output(heads(x, att.self.key, n_heads), heads(x, att.self.value, n_heads))
                ref2[li] += float(y.pow(2).sum())
                for n_kv in choices:
                    n_rep = n_heads // n_kv
                    pooled = []
                    for lin in (att.self.key, att.self.value):
                        with isolated_rng():  # every weight is copied in below
                            pool = torch.nn.Linear(lin.in_features, n_kv * d_head)
                        pool.weight.copy_(lin.weight.view(n_kv, n_rep, d_head, -1).mean(1).reshape(n_kv * d_head, -1))
                        pool.bias.copy_(lin.bias.view(n_kv, n_rep, d_head).mean(1).reshape(-1))
                        pooled.append(repeat_kv(heads(x, pool, n_kv)[None], n_rep)[0])  # (h, T, d_head)
                    diff2[n_kv][li] += float((output(*pooled) - y).pow(2).sum())
    return {
        "n_heads": n_heads,
        "n_layers": len(model.encoder.layer),
        "n_sentences": len(TRAINED_SENTENCES),
        "n_kv": choices,
        "n_rep": [n_heads // k for k in choices],
        # relative change of the attention output, per n_kv choice, per layer
        "change": [[math.sqrt(diff2[k][li] / ref2[li]) for li in range(len(ref2))] for k in choices],
        "random_theory": [math.sqrt(1 - k / n_heads) for k in choices],
    }


def _trained_summary(t: dict | None) -> dict | None:
    """Per n_kv choice, the least and most changed layer."""
    if t is None:
        return None
    return {**t, "change_min": [min(row) for row in t["change"]],
            "change_max": [max(row) for row in t["change"]]}


def compute(params: dict) -> dict:
    h, n_kv, d = params["n_heads"], params["n_kv"], params["d_model"]
    mha, mha_cfg, x, y_mha, w_mha, kv_mha = _multi_head(h, d)
    cfg = config_for(h, n_kv, d)
    layer = mean_pool_kv(mha, mha_cfg, n_kv)
    # Groups of one pool nothing: the layer is the multi-head one, so its output is too (run
    # again from copied weights, BLAS may sum in another order and differ in the last bit).
    y, w = (y_mha, w_mha) if n_kv == h else run_layer(layer, x, cfg)
    kv = kv_bytes_per_token(layer, x, cfg)
    maps = w[0]  # (h, T, T)
    groups = [i // cfg.n_rep for i in range(h)]  # repeat_kv: KV head j serves heads j*n_rep..
    values = {
        "n_heads": h, "d_model": d,
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
        "norm_ratio": float(y.norm() / y_mha.norm()),
        "cosine": float((y * y_mha).sum() / (y.norm() * y_mha.norm())),
        "entropy": _entropy(w),
        "entropy_mha": _entropy(w_mha),
        "shrink_theory": 1 / math.sqrt(cfg.n_rep),
        "v_shrink": _head_norm(layer.v_proj.weight, n_kv, d).mean().item()
        / _head_norm(mha.v_proj.weight, h, d).mean().item(),
        "max_weight_change": float((w - w_mha).abs().max()),
        "words": WORDS,
        "groups": groups,
    }
    rounded = [[[round(float(v), 3) for v in row] for row in m] for m in maps]
    return {"values": values, "figure": _figure(values, rounded, h, n_kv, d),
            "summary": _summary(values, h, n_kv), "table": _table(values, rounded)}


def facts(params: dict) -> dict:
    """Values only the prose quotes (`{{ value(...) }}`), worked out when the book is built and
    never per request: the chapter's fixed examples (the head table's FLOP counter costs a
    worker seconds of imports on first use) and the pooling measured on MiniLM's trained heads
    (loading the model costs seconds more). None of them depends on the sliders."""
    return {**_constants(), "trained": _trained_summary(trained_pooling())}


def _head_norm(weight: torch.Tensor, n: int, d: int) -> torch.Tensor:
    """Frobenius norm of each head's block of a (n * d_head, d) projection: (n,)."""
    return weight.detach().reshape(n, -1, d).flatten(1).norm(dim=1)


def _entropy(w: torch.Tensor) -> float:
    """Mean entropy (nats) of the attention rows, every head and position: 0 is one-hot,
    larger is flatter."""
    return float(-(w * w.clamp_min(1e-30).log()).sum(-1).mean())


def tick_labels(words: list[str]) -> list[str]:
    """Words made unique by a subscript where they repeat (the₁, the₂, the₃), so an axis of
    categories keeps all nine positions and the hover names the word."""
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    seen: dict[str, int] = {}
    out = []
    for w in words:
        seen[w] = seen.get(w, 0) + 1
        out.append(w + str(seen[w]).translate(sub) if words.count(w) > 1 else w)
    return out


def _summary(v: dict, h: int, n_kv: int) -> str:
    kind = ("multi-head attention" if n_kv == h else
            "multi-query attention" if n_kv == 1 else "grouped-query attention")
    return (f"{h} attention map{'s' if h > 1 else ''} over the sentence '{SENTENCE}', one per query head, "
            f"{kind} with {n_kv} key/value head{'s' if n_kv > 1 else ''}. "
            f"The KV cache is {v['kv_fraction']:.4f} of the multi-head layer's, and the output "
            f"differs from it by {v['relative_error']:.3f} (relative; outputting zeros would "
            f"score 1), its size {v['norm_ratio']:.2f} of the multi-head output's.")


def _table(v: dict, maps: list) -> dict:
    last = v["words"][-1]
    return {
        "caption": f"Weight from the last word, '{last}', to every word, per query head",
        "columns": ["head", "KV head"] + tick_labels(v["words"]),
        "rows": [[i, g] + m[-1] for i, (g, m) in enumerate(zip(v["groups"], maps))],
    }


PANEL_PX, TITLE_PX, TOP_PX, BOTTOM_PX = 150, 30, 40, 80  # heights in pixels


def _height(rows: int) -> int:
    return TOP_PX + BOTTOM_PX + rows * PANEL_PX + (rows - 1) * TITLE_PX


def _grid(h: int, cols: int, gap: float = 0.05) -> list[tuple[list[float], list[float]]]:
    """(x domain, y domain) of each head's panel, filled row by row from the top. The vertical
    gap is a fixed number of pixels (room for a title), whatever the number of rows."""
    rows = -(-h // cols)
    plot_px = _height(rows) - TOP_PX - BOTTOM_PX
    w = (1 - gap * (cols - 1)) / cols
    hgt, vgap = PANEL_PX / plot_px, TITLE_PX / plot_px
    out = []
    for i in range(h):
        r, c = divmod(i, cols)
        x0, y1 = c * (w + gap), 1 - r * (hgt + vgap)
        out.append(([round(x0, 4), round(x0 + w, 4)],
                    [round(max(y1 - hgt, 0), 4), round(y1, 4)]))
    return out


def title_colors(groups: list[int], n_kv: int, h: int) -> list[str | None]:
    """One colour per key/value head when heads share one (n_kv < h, so n_kv <= h/2 <= 8, within
    the palette); none when every head has its own, since then there is no group to show."""
    if n_kv == h:
        return [None] * h
    assert n_kv <= len(SERIES)
    return [SERIES[g] for g in groups]


def _axes_and_titles(v: dict, h: int, n_kv: int, cols: int) -> dict:
    layout = {"annotations": []}
    colors = title_colors(v["groups"], n_kv, h)
    for i, (xd, yd) in enumerate(_grid(h, cols)):
        n = "" if i == 0 else str(i + 1)
        c = i % cols
        layout[f"xaxis{n}"] = {"domain": xd, "anchor": f"y{n}", "showticklabels": i + cols >= h}
        layout[f"yaxis{n}"] = {"domain": yd, "anchor": f"x{n}", "showticklabels": c == 0}
        g = v["groups"][i]
        font = {"size": 11}
        if colors[i]:
            font["color"] = colors[i]
        layout["annotations"].append({
            "text": f"head {i} · KV {g}", "showarrow": False, "xref": "paper", "yref": "paper",
            "x": (xd[0] + xd[1]) / 2, "y": yd[1], "yanchor": "bottom", "xanchor": "center",
            "font": font})
    return layout


def _figure(v: dict, maps: list, h: int, n_kv: int, d: int) -> dict:
    labels = tick_labels(v["words"])
    data = []
    for i, m in enumerate(maps):
        n = "" if i == 0 else str(i + 1)
        data.append({
            "type": "heatmap", "z": m, "x": labels, "y": labels, "zmin": 0, "zmax": 1,
            "colorscale": WEIGHT_SCALE, "showscale": i == 0,
            "colorbar": {"title": {"text": "weight"}, "thickness": 10, "len": 0.5},
            "xaxis": f"x{n}", "yaxis": f"y{n}", "name": f"head {i}",
            "hovertemplate": f"head {i}, KV {v['groups'][i]}<br>%{{y}} looks at %{{x}}<br>"
                             "weight %{z:.3f}<extra></extra>",
        })
    cols = min(4, h)
    layout = base_layout(height=_height(-(-h // cols)), **_axes_and_titles(v, h, n_kv, cols))
    layout["margin"] = {"l": 70, "r": 10, "t": TOP_PX, "b": BOTTOM_PX}
    for key in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
        # automargin: at 11 px a word ("cabinet") needs more than a phone's 45 px left margin
        layout[key].update({"type": "category", "tickfont": {"size": TICK_PX}, "automargin": True})
        if key.startswith("xaxis"):
            layout[key]["tickangle"] = -90
        else:
            layout[key]["autorange"] = "reversed"
    heads = lambda n, what: f"{n} {what}{'s' if n > 1 else ''}"  # noqa: E731
    layout["title"] = {"text": f"h = {heads(h, 'query head')}, n_kv = "
                               f"{heads(n_kv, 'key/value head')}, d = {d}",
                       "font": {"size": 13}}
    ncols = min(2, h)
    narrow = {"height": _height(-(-h // ncols)), "title": {"font": {"size": 11}},
              **_axes_and_titles(v, h, n_kv, ncols)}
    for key in [k for k in narrow if k.startswith(("xaxis", "yaxis"))]:
        narrow[key].update(layout[key] | narrow[key])
    return {"data": data, "layout": layout, "narrow": narrow}
