"""Widget: how big the KV cache is, and how many users at a context length fit on one accelerator.

Every size is read off the book's own `KVCache` (backend/reference/kv_cache.py), filled through
its own ``update`` with meta tensors of the chosen shape and dtype (backend/reference/serving.py),
so nothing here restates the cache's formula. The weights are the book's `DecoderLM`, counted
on the meta device, in bfloat16 (the dtype the Llama checkpoints are published in) whatever the
cache's dtype.

Preset and fields never contradict each other (as in `model_params`): a preset pins layers,
heads, key/value heads and head width to its published config; `custom` (where the page starts,
at Llama-3-8B's values) frees them. A custom model's weights are counted with Llama-3-8B's
vocabulary and its MLP ratio (d_ff = 3.5 d_model), d_model = heads x head width.

Units: a card is chosen by the GB (10^9 bytes) it is sold as, but modelled by the total CUDA
(or HIP) reports for it (`serving.CARDS`, with the source of each figure): an H200 sold as
141 GB reports 139.80 GiB = 150.1 x 10^9 bytes. Usable memory is less still (CUDA context,
activations, fragmentation), so users_fit is an upper bound. The figure's axis is in GB
(10^9 bytes); the handout's cache sizes are in GiB (2^30 bytes), reported as `total_gib`.
"""

from __future__ import annotations

import torch

from backend.compute import presets
from backend.compute.shapes import check_heads, kv_depend_on_heads
from backend.compute.spec import Depends, Output, Param, WidgetSpec, dtype_param
from backend.compute.style import COLORS, base_layout
from backend.reference.counting import count_parameters
from backend.reference.presets import DECODER_PRESETS, PRESETS
from backend.reference.serving import (
    CARDS,
    DTYPES,
    GB,
    GIB,
    QUANTISED,
    cache_bytes,
    users_fit,
    weights_bytes,
)

CHOICES = {name: PRESETS[name] for name in DECODER_PRESETS}
CUSTOM = presets.CUSTOM
START = PRESETS["llama-3-8b"]  # the custom fields start here
FIELDS = {"n_layers": "n_layers", "n_heads": "n_heads", "n_kv": "n_kv_heads", "head_dim": "d_head"}
MEMORIES = tuple(CARDS)  # the GB (10^9 bytes) each card is sold as; modelled by what CUDA reports
MAX_CONTEXT = 1_048_576
CURVE = tuple(4 ** i for i in range(11))  # 1 .. 1,048,576 tokens: straight lines on log axes
# vLLM's default share of the card it plans its cache in (`gpu_memory_utilization=0.9`): one
# realistic anchor beside the upper bound over the whole card.
VLLM_UTILIZATION = 0.9
# Past this many users (the batch slider's top) memory is not what binds: compute and the
# server's own limit on sequences per batch are, so the count is said to be memory's only.
USERS_MEMORY_ONLY = 1024


def _locks(param: str) -> tuple[Depends, ...]:
    return presets.locks(CHOICES, FIELDS, param)


_from_preset = presets.fill_from(CHOICES, FIELDS)


def _prepare(body: dict) -> dict:
    """80 as well as "80" names a card; omitted fields come from the chosen preset."""
    memory = body.get("memory")
    if (isinstance(memory, (int, float)) and not isinstance(memory, bool)
            and float(memory).is_integer() and str(int(memory)) in CARDS):
        body = {**body, "memory": str(int(memory))}
    return _from_preset(body)


SPEC = WidgetSpec(
    name="kv_cache",
    try_next=(
        "Set `n_kv` to 32, as many as the query heads: that is the cache without grouped-query "
        "attention, four times larger than at 8, and about a quarter as many users fit."
    ),
    title="How big the KV cache is, and how many users fit",
    description="Bytes of keys and values a model keeps per token and per user, read off the "
                "book's own cache filled on the meta device, against the weights and the memory "
                "of one accelerator.",
    params=(
        Param("preset", "model", "choice", default=CUSTOM, options=(*CHOICES, CUSTOM),
              help="A real model's published config, or custom to set the fields yourself "
                   "(custom starts at Llama-3-8B's values)."),
        Param("n_layers", "layers L", "int", default=START.n_layers, min=1, max=128, step=1,
              depends=_locks("n_layers")),
        Param("context_len", "context length T", "int", default=8192, min=1, max=MAX_CONTEXT,
              step=1, scale="log2", unit="tokens",
              help="Tokens each user's conversation holds (prompt and answer so far)."),
        Param("n_heads", "query heads h", "int", default=START.n_heads, min=1, max=128, step=1,
              depends=_locks("n_heads")),
        Param("n_kv", "key/value heads n_kv", "int", default=START.n_kv_heads, min=1, max=128,
              step=1, help="Must divide the query heads: n_kv = h is multi-head attention, "
                           "1 is multi-query.",
              depends=_locks("n_kv") + (kv_depend_on_heads(128),)),
        Param("head_dim", "head width d_head", "int", default=START.d_head, min=8, max=512,
              step=8, depends=_locks("head_dim")),
        dtype_param(DTYPES, "bfloat16", label="cache dtype",
                    help="int8 and fp8 store one byte per number plus scales to turn it back "
                         "into a key or a value. Most servers keep one scale per tensor (a few "
                         "bytes per layer); this counts the generous case, one float16 scale per "
                         "key vector and per value vector."),
        Param("batch", "concurrent users", "int", default=1, min=1, max=1024, step=1,
              scale="log2", help="Users served at once, each with a cache of this length."),
        Param("memory", "accelerator, sold as (GB = 10⁹ bytes)", "choice", default="80",
              options=MEMORIES,
              option_labels=tuple(CARDS[k].name.removeprefix("a ") for k in MEMORIES),
              help="; ".join(f"{c.name.removeprefix('a ')}: CUDA reports {c.reported_gib} GiB"
                             for k, c in CARDS.items())
                   + ". The weights (bfloat16) and every user's cache must fit in what CUDA "
                     "reports; usable memory is less still, so the count is an upper bound."),
    ),
    outputs=(
        Output("bytes_per_token", "cache per token, one user", ",d", "bytes"),
        Output("per_user_bytes", "cache per user at T", ",d", "bytes"),  # one unit in the list
        Output("total_bytes", "cache, all users", ",d", "bytes"),
        Output("mha_total_bytes", "same with n_kv = h (MHA)", ",d", "bytes"),
        Output("gqa_saving_factor", "GQA saving (MHA ÷ this)", ".3g", "×"),
        Output("weights_bytes", "weights (bfloat16)", ",d", "bytes"),
        Output("users_fit", "users at T that fit", ",d"),
    ),
    bake=(
        tuple({"preset": name} for name in (*CHOICES, CUSTOM))
        + tuple({"context_len": 2 ** i} for i in range(0, 21))
        + tuple({"n_kv": k} for k in (1, 2, 4, 16, 32))
        + tuple({"dtype": d} for d in DTYPES)
        + tuple({"memory": m} for m in MEMORIES)
        + tuple({"batch": 2 ** i} for i in range(0, 11))
    ),
    cost_hint="light",
    prepare=_prepare,
)


def _read_per_token(weights: int, fit) -> float:
    """Bytes a full card's decode step reads (weights and every fitting user's cache) per token
    it yields (one per user); 0 when no user fits."""
    if not fit.users:
        return 0.0
    return (weights + fit.users * fit.per_user_bytes) / fit.users


def config_of(params: dict):
    """The ModelConfig whose weights sit beside the cache (a ParamError naming the control)."""
    labels = {p.name: p.label for p in SPEC.params}
    h, kv, dh = params["n_heads"], params["n_kv"], params["head_dim"]
    check_heads(h * dh, h, kv, labels, names=("head_dim", "n_heads", "n_kv"))
    if params["preset"] in CHOICES:
        return CHOICES[params["preset"]]
    d = h * dh
    return START.replace(n_layers=params["n_layers"], d_model=d, n_heads=h, n_kv_heads=kv,
                         d_ff=d * 7 // 2)


def sizes(params: dict, n_kv: int, seq_len: int, batch: int) -> int:
    """Bytes of the cache (values plus any scales) at these settings."""
    kv, scales = cache_bytes(params["n_layers"], n_kv, params["head_dim"], seq_len, batch,
                             params["dtype"])
    return kv + scales


def compute(params: dict) -> dict:
    cfg = config_of(params)
    L, h, kv, dh = params["n_layers"], params["n_heads"], params["n_kv"], params["head_dim"]
    T, B, dtype = params["context_len"], params["batch"], params["dtype"]
    card = CARDS[params["memory"]]
    memory = card.memory_bytes
    kv_values, scales = cache_bytes(L, kv, dh, T, B, dtype)
    total = kv_values + scales
    per_token = sizes(params, kv, 1, 1)
    per_user = sizes(params, kv, T, 1)
    mha_total = sizes(params, h, T, B)
    weights = weights_bytes(cfg)
    fit = users_fit(memory, weights, per_user)
    vllm_fit = users_fit(int(memory * VLLM_UTILIZATION), weights, per_user)
    # A decode step with the card full reads the weights and every user's cache once and yields
    # one token per user: the bytes read per token generated, here and at 8,192 tokens.
    read = _read_per_token(weights, fit)
    read_8k = _read_per_token(weights, users_fit(memory, weights, sizes(params, kv, 8192, 1)))
    values = {
        "bytes_per_token": per_token,
        "bytes_per_token_mha": sizes(params, h, 1, 1),
        "per_user_bytes": per_user,
        "per_user_gb": per_user / GB,
        "total_bytes": total,
        "total_gib": total / 2**30,
        "total_gb": total / GB,
        "kv_values_bytes": kv_values,
        "scale_bytes": scales,
        "mha_total_bytes": mha_total,
        "gqa_saving_factor": mha_total / total,
        "n_rep": h // kv,
        "kv_width": kv * dh,
        "bytes_per_value": torch.empty((), dtype=DTYPES[dtype], device="meta").element_size(),
        "weights_params": count_parameters(cfg).total,
        "weights_params_b": count_parameters(cfg).total / 10**9,
        "weights_bytes": weights,
        "weights_gb": weights / GB,
        "memory_bytes": memory,
        "memory_gb": memory / GB,
        "memory_gib": memory / GIB,
        "free_gb": fit.free_bytes / GB,
        "free_bytes": fit.free_bytes,
        "weights_fit": fit.weights_fit,
        "users_fit": fit.users,
        "users_fit_vllm": vllm_fit.users,
        "vllm_utilization": VLLM_UTILIZATION,
        "decode_read_per_token_gb": read / GB if read else 0.0,
        "read_per_token_vs_8192": read / read_8k if read and read_8k else 0.0,
        "memory_only": fit.users > USERS_MEMORY_ONLY,
        "batch_fits": B <= fit.users,
        "cache_over_weights": total / weights,
        # the longest context one user could have beside the weights
        "max_context_one_user": fit.free_bytes // per_token,
        # the context at which one user's cache outweighs the whole model
        "context_cache_over_weights": weights // per_token + 1,
        "caches_at_fit_bytes": fit.users * per_user,
        "caches_at_fit_gb": fit.users * per_user / GB,
        "caches_at_fit_over_weights": fit.users * per_user / weights,
        # one token, one user: the keys and values themselves, and a quantised cache's scales
        "values_per_token_bytes": cache_bytes(L, kv, dh, 1, 1, dtype)[0],
        "scales_per_token_bytes": cache_bytes(L, kv, dh, 1, 1, dtype)[1],
        "quantised": dtype in QUANTISED,
        "preset": params["preset"], "n_layers": L, "n_heads": h, "n_kv": kv, "head_dim": dh,
    }
    out = {"values": values, "figure": _figure(params, values), "summary": _summary(params, values),
           "table": _table(params, values)}
    notice = _notice(params, values)
    if notice:
        out["notice"] = notice
    return out


def _name(params: dict) -> str:
    return params["preset"] if params["preset"] != CUSTOM else "custom model"


def _card(params: dict) -> str:
    c = CARDS[params["memory"]]
    return f"{c.name} ({c.reported_gib} GiB = {c.memory_bytes / GB:.4g} GB as CUDA reports)"


def _the_card(params: dict) -> str:
    """The card after 'in': "the A100 80 GB (...)", but "a 24 GB card (...)" for the card that
    is named with its own article."""
    name = _card(params)
    return name if name.startswith(("a ", "an ")) else f"the {name}"


def _notice(params: dict, v: dict) -> str:
    if v["memory_only"]:
        return (f"Memory alone would hold {v['users_fit']:,} users at "
                f"{_tokens(params['context_len'])}, but long before that many, compute and the "
                f"server's limit on sequences per batch bind: this count is memory's only.")
    if not v["weights_fit"]:
        return (f"The weights alone ({v['weights_gb']:.1f} GB) do not fit in "
                f"{_the_card(params)}: no user fits, so users at T is 0.")
    if not v["batch_fits"]:
        B = params["batch"]
        return (f"{_users(B)} at {_tokens(params['context_len'])} "
                f"{'needs' if B == 1 else 'need'} {_gb(v['total_gb'], '.1f')} of cache; beside "
                f"the weights "
                f"{'none fits' if v['users_fit'] == 0 else 'only ' + format(v['users_fit'], ',') + ' fit'} "
                f"in {_the_card(params)}.")
    return ""


def _figure(params: dict, v: dict) -> dict:
    B, T, h, kv = params["batch"], params["context_len"], params["n_heads"], params["n_kv"]
    xs = list(CURVE)
    ours = [sizes(params, kv, t, B) / GB for t in xs]
    mha = [sizes(params, h, t, B) / GB for t in xs]
    mem_gb, w_gb, free_gb = v["memory_gb"], v["weights_gb"], v["free_gb"]
    users = _users(B)
    mha_name = (f"MHA cache (n_kv = {h}, the same as this one)" if kv == h
                else f"MHA cache (n_kv = {h})")
    data = [
        {"type": "scatter", "mode": "lines", "x": xs, "y": mha, "name": mha_name,
         "line": {"color": COLORS["unscaled"], "dash": "dash", "width": 2},
         "hovertemplate": "T=%{x:,}: %{y:.3g} GB<extra>MHA</extra>"},
        {"type": "scatter", "mode": "lines", "x": xs, "y": ours,
         "name": f"this cache (n_kv = {kv})", "line": {"color": COLORS["scaled"], "width": 3},
         "hovertemplate": "T=%{x:,}: %{y:.3g} GB<extra>n_kv=" + str(kv) + "</extra>"},
        {"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]], "y": [w_gb, w_gb],
         "name": f"weights ({w_gb:.4g} GB)", "line": {"color": COLORS["guide"], "width": 2},
         "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]], "y": [mem_gb, mem_gb],
         "name": f"accelerator ({mem_gb:.4g} GB as CUDA reports)",
         "line": {"color": COLORS["brown"], "dash": "dot", "width": 2}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]], "y": [free_gb, free_gb],
         "name": f"free after the weights ({free_gb:.4g} GB): the cache's limit",
         "line": {"color": COLORS["accent"], "dash": "dashdot", "width": 2}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers", "x": [T], "y": [v["total_gb"]],
         "name": "your setting", "marker": {"color": COLORS["accent"], "size": 13,
                                            "symbol": "circle-open", "line": {"width": 3}},
         "hovertemplate": "T=%{x:,}: %{y:.3g} GB<extra>your setting</extra>"},
    ]
    if free_gb <= 0:  # nothing free: a log axis cannot draw 0
        data.pop(4)
    layout = base_layout(
        440,
        title={"text": f"{_name(params)}: cache for {users}, {params['dtype']}"},
        xaxis={"type": "log", "title": {"text": "context length T (tokens)"}, "dtick": 1,
               "exponentformat": "power"},
        yaxis={"type": "log", "title": {"text": "bytes (GB = 10⁹)"}, "dtick": 1,
               "exponentformat": "power", "automargin": True},
        margin={"l": 60, "r": 10, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.22},
    )
    narrow = {"height": 560, "title": {"font": {"size": 13}},
              "legend": {"y": -0.3, "font": {"size": 11}}, "margin": {"b": 170}}
    return {"data": data, "layout": layout, "narrow": narrow}


def _users(n: int) -> str:
    return "1 user" if n == 1 else f"{n:,} users"


def _tokens(n: int) -> str:
    return "1 token" if n == 1 else f"{n:,} tokens"


def _gb(x: float, fmt: str = ".3g") -> str:
    """GB as a reader writes it: 1.07 GB, 1,049 GB, never 1.1e+03 GB."""
    return f"{x:,.0f} GB" if x >= 1000 else f"{x:{fmt}} GB"


def _fit_clause(n: int) -> str:
    if n == 0:
        return "no user at this length fits"
    return f"at most {_users(n)} at this length {'fits' if n == 1 else 'fit'}"


def _summary(params: dict, v: dict) -> str:
    B, T = params["batch"], params["context_len"]
    return (f"{_name(params)} keeps {v['bytes_per_token']:,} bytes of keys and values per token "
            f"in {params['dtype']}, so {_users(B)} at {_tokens(T)} {'holds' if B == 1 else 'hold'} "
            f"{_gb(v['total_gb'])}; "
            + ("it is already multi-head, with one key/value head per query head. "
               if params["n_kv"] == params["n_heads"] else
               f"with one key/value head per query head it would be "
               f"{v['gqa_saving_factor']:.3g} times as much. ")
            + f"Beside {_gb(v['weights_gb'], '.4g')} of weights, "
            f"{_fit_clause(v['users_fit'])} in {_the_card(params)}"
            + (f"; {v['users_fit_vllm']:,} in the {v['vllm_utilization']:.0%} of it that a "
               f"vLLM server plans in by default." if v["users_fit"] else "."))


def _table(params: dict, v: dict) -> dict:
    B, h, kv = params["batch"], params["n_heads"], params["n_kv"]
    mha = kv != h  # a multi-head model's own column is already the n_kv = h one
    rows = [[f"{t:,}", f"{sizes(params, kv, t, B) / GB:.4g}"]
            + ([f"{sizes(params, h, t, B) / GB:.4g}"] if mha else []) for t in CURVE]
    against = (f"n_kv = {kv} against n_kv = h = {h}" if mha
               else f"n_kv = h = {h} (already multi-head)")
    return {
        "caption": (f"Cache of {_users(B)} in GB (10⁹ bytes) by context length, {against}; "
                    f"weights {v['weights_gb']:.4g} GB, {_card(params)}, "
                    f"{v['free_gb']:.4g} GB free after the weights."),
        "columns": ["context length T", f"cache, n_kv = {kv} (GB)"]
                   + ([f"cache, n_kv = {h} (GB)"] if mha else []),
        "rows": rows,
    }
