"""Widget: a trained Llama writing, one token at a time, with its KV cache.

SmolLM2-135M-Instruct (`backend/smollm2`) continues the reader's prompt for `step` tokens, each
drawn from the next-token distribution after temperature, top-k and top-p
(`backend/reference/sampling.py`) with a seeded generator; the prompt is processed once and each
later step feeds only the newest token, reading every earlier key and value from the cache
(`backend/reference/kv_cache.py`). At the chosen step the widget shows the distribution (top
10), the token drawn, where the newest token's query looks in one head, the cache's bytes for
this model's shape, and the step timed both ways: cached, and recomputing the whole sequence.
"""

from __future__ import annotations

import html
import time

import torch

from backend.errors import ParamError
from backend.reference.kv_cache import kv_cache_bytes_for
from backend.reference.sampling import next_token_probs, sample_next_token
from backend.widgets import measure as measure_lib
from backend.widgets.spec import Output, Param, WidgetSpec, seed_param
from backend.widgets.style import COLORS, base_layout

MAX_CHARS = 300
MAX_PROMPT = 48  # prompt tokens, <|endoftext|> included
MAX_STEPS = 32
SHOW = 10  # bars
REPEATS = 5  # timed runs of each kind; the fastest is reported
PROMPT = "The river flows through the"
LAYERS, HEADS = 30, 9  # SmolLM2-135M (tests/claims/test_generation_steps.py checks)

SPEC = WidgetSpec(
    name="generation_steps",
    try_next=(
        "Step through the first tokens with `step`, then set `temperature` to 0.1: every step "
        "takes the most likely token. Raise `step` to 32 and compare the cached step's time "
        "with the full recompute's."
    ),
    title="SmolLM2-135M writing, one token at a time",
    description="At each step: the next-token distribution under temperature, top-k and "
                "top-p, the token drawn, where the newest token looks, the KV cache's size and "
                "the step's time with and without the cache.",
    params=(
        Param("prompt", "prompt", "text", default=PROMPT, max_length=MAX_CHARS,
              help=f"Any text; at most {MAX_PROMPT} tokens with <|endoftext|>."),
        Param("step", "step", "int", default=4, min=1, max=MAX_STEPS, step=1,
              help="Which new token to look at: step 1 draws the first token after the prompt."),
        Param("temperature", "temperature τ", "float", default=0.7, min=0.1, max=2.0, step=0.05,
              help="Logits are divided by τ before the softmax; then top-k, then top-p."),
        Param("top_k", "top-k (0 = off)", "int", default=0, min=0, max=100, step=1,
              help="Keep only the k most likely tokens; 0 keeps them all."),
        Param("top_p", "top-p (1 = off)", "float", default=0.9, min=0.05, max=1.0, step=0.05,
              help="Keep the fewest most likely tokens whose probabilities add up to at least p."),
        seed_param(999, help="Seeds the generator that draws every token."),
        Param("layer", "attention: layer", "int", default=18, min=0, max=LAYERS - 1, step=1,
              help="Whose attention the middle panel shows: the layer, counted from 0."),
        Param("head", "attention: head", "int", default=6, min=0, max=HEADS - 1, step=1,
              help="And the query head within it."),
    ),
    outputs=(
        Output("text_so_far", "the text so far", ""),
        Output("drawn", "token drawn", ""),
        Output("drawn_prob", "its probability after the settings", ".1%"),
        Output("kept_tokens", "tokens left to draw from", ",d"),
        Output("cache_positions", "positions in the cache", "d"),
        Output("cache_bytes", "KV cache (float32)", ",d", "bytes"),
        Output("cached_ms", "one cached step", ".1f", "ms"),
        Output("full_ms", "recomputing the whole sequence", ".1f", "ms"),
    ),
    bake=(tuple({"step": s} for s in (1, 2, 8, 16, 32))
          + ({"temperature": 0.1}, {"temperature": 1.5}, {"top_k": 5}, {"top_p": 1.0},
             {"seed": 1}, {"step": 8, "temperature": 0.1})),
    cost_hint="heavy",
    warm=False,  # the page carries its results; warming would load SmolLM2 into every worker
    result_ttl=600,  # the timings are of one moment
)


def _label(text: str) -> str:
    shown = text.replace("\n", "↵").replace(" ", "·") if not text.strip() else text
    return html.escape(shown, quote=False)


def _piece(tok, i: int) -> str:
    return tok.decode([i])


def encode(prompt: str) -> list[int]:
    from backend.smollm2.load import model

    _, tok = model()
    body = tok(prompt, split_special_tokens=True)["input_ids"]
    ids = [tok.eos_token_id] + body
    if not body:
        raise ParamError("the prompt gives SmolLM2 no tokens at all", "prompt")
    if len(ids) > MAX_PROMPT:
        raise ParamError(f"'prompt' is {len(ids)} tokens for SmolLM2; the limit is {MAX_PROMPT} "
                         "tokens (<|endoftext|> included). Try a shorter prompt.", "prompt")
    return ids


def _fastest_ms(fn, repeats: int = REPEATS) -> float:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1e3)
    return min(runs)


# --8<-- [start:steps]
@torch.no_grad()
def run_steps(model, ids: list[int], steps: int, temperature: float, top_k: int | None,
              top_p: float | None, seed: int, layer: int):
    """Prefill the prompt, then `steps` cached steps. Returns the tokens, the last step's
    logits (the ones the last token was drawn from), the attention of the last position fed
    in `layer` (h, T_seen), the cache, the input of the last step, and for every step the two
    most likely tokens at τ = 1 with their probabilities."""
    gen = torch.Generator().manual_seed(seed)
    cache = model.new_cache()
    tokens, top2 = list(ids), []
    step_input = torch.tensor([ids])  # step 1 (the prefill) sees the whole prompt
    for _ in range(steps):
        fed = step_input
        out = model(step_input, cache=cache, logits_to_keep=1, output_attentions=True)
        logits = out.logits[:, -1]  # (1, V)
        new = sample_next_token(logits, False, temperature, top_k, top_p, gen)  # (1, 1)
        best = torch.topk(torch.softmax(logits[0].float(), -1), 2)
        top2.append((best.indices.tolist(), best.values.tolist()))
        tokens.append(int(new))
        step_input = new  # cached: only the newest token is new work
    seen = out.attentions[layer][0, :, -1]  # (h, T_seen): the last fed position's row
    return tokens, logits, seen, cache, fed, top2
# --8<-- [end:steps]


def compute(params: dict) -> dict:
    from backend.smollm2.load import model as smollm2

    model, tok = smollm2()
    ids = encode(params["prompt"])
    step, temp = params["step"], params["temperature"]
    k = params["top_k"] or None
    p = None if params["top_p"] >= 1 else params["top_p"]
    tokens, logits, seen, cache, fed, top2 = run_steps(model, ids, step, temp, k, p, params["seed"],
                                                 params["layer"])
    raw = next_token_probs(logits, 1.0)[0]  # (V,)
    probs = next_token_probs(logits, temp, k, p)[0]
    drawn = tokens[-1]
    T_seen = seen.shape[-1]  # positions the last step's query could see: prompt + step - 1

    # The step timed both ways, on the sequence it saw: the cached step feeds the newest token
    # and reads T_seen - 1 cached positions; the recompute runs all T_seen positions again.
    context = torch.tensor([tokens[:T_seen]])
    keys, vals = list(cache.keys), list(cache.values)
    before = [k_[:, :, : T_seen - fed.shape[1]] for k_ in keys]
    before_v = [v_[:, :, : T_seen - fed.shape[1]] for v_ in vals]

    def cached_step():
        cache.keys, cache.values = list(before), list(before_v)
        model(fed, cache=cache, logits_to_keep=1)

    def full():
        model(context, logits_to_keep=1)

    with torch.no_grad(), measure_lib.timing_lock(), measure_lib.one_cpu_thread("cpu"):
        cached_ms = _fastest_ms(cached_step) if fed.shape[1] == 1 else None
        full_ms = _fastest_ms(full)
    cache.keys, cache.values = keys, vals

    cfg = model.config
    per_position = kv_cache_bytes_for(cfg, 1, dtype=torch.float32)
    order = torch.argsort(raw, descending=True)[:SHOW].tolist()
    if drawn not in order:
        order.append(drawn)  # a token from the tail: shown beside the top ten
    rows = [{"token": _piece(tok, i), "id": i, "prob_raw": float(raw[i]),
             "prob": float(probs[i])} for i in order]
    prompt_text = tok.decode(ids[1:])
    new_text = tok.decode(tokens[len(ids):])
    head = seen[params["head"]]
    labels = [_piece(tok, i) for i in tokens[:T_seen]]
    top_pos = int(head.argmax())
    values = {
        "prompt_tokens": len(ids), "step": step, "tokens": tokens,
        "temperature": temp, "top_p": params["top_p"], "top_k": params["top_k"],
        "prompt_text": prompt_text, "new_text": new_text,
        "before_text": tok.decode(tokens[len(ids):-1]),
        "drawn": _piece(tok, drawn), "drawn_id": drawn,
        "text_so_far": prompt_text + new_text,
        "drawn_prob": float(probs[drawn]), "drawn_prob_raw": float(raw[drawn]),
        "drawn_rank": int((raw > raw[drawn]).sum()) + 1,
        "top_token": rows[0]["token"], "top_prob_raw": rows[0]["prob_raw"],
        "top_prob": rows[0]["prob"],
        "kept_tokens": int((probs > 0).sum()), "vocab_size": cfg.vocab_size,
        "probs": rows,
        "attention": [float(w) for w in head],
        "attention_labels": labels,
        "attention_top": {"position": top_pos, "token": labels[top_pos],
                          "weight": float(head[top_pos])},
        "attention_first": float(head[0]),
        "cache_positions": T_seen,  # after this step's keys and values went in
        "cache_bytes": per_position * T_seen,
        "cache_bytes_per_token": per_position,
        "cache_bytes_per_token_16bit": kv_cache_bytes_for(cfg, 1, dtype=torch.bfloat16),
        "cache_bytes_max": per_position * (MAX_PROMPT + MAX_STEPS),
        "cache_bytes_context": kv_cache_bytes_for(cfg, cfg.max_seq_len, dtype=torch.bfloat16),
        "cache_mb_context": kv_cache_bytes_for(cfg, cfg.max_seq_len, dtype=torch.bfloat16) / 1e6,
        "max_context": cfg.max_seq_len,
        "cache_held_bytes": cache.nbytes(),
        "full_ms": full_ms,
        "timed_positions": T_seen,
        "measured_on": f"cpu (1 thread), float32, torch {torch.__version__}",
        "repeats": REPEATS,
        "n_layers": cfg.n_layers, "n_kv_heads": cfg.n_kv_heads, "d_head": cfg.d_head,
    }
    # every step so far: did it draw the most likely token, and where were the top two closest
    drew = tokens[len(ids):]
    values["steps_not_top"] = [i + 1 for i, (t2, d) in enumerate(zip(top2, drew, strict=True))
                               if d != t2[0][0]]
    close = max(range(step), key=lambda i: top2[i][1][1] / top2[i][1][0])
    values |= {"close_step": close + 1,
               "close_pair": [_piece(tok, i) for i in top2[close][0]],
               "close_probs": top2[close][1],
               "close_probs_after": [float(x) for x in
                                     next_token_probs(_close_logits(top2[close][1]), temp)[0]]}
    if cached_ms is not None:  # step 1 is the prefill: nothing was cached before it
        values |= {"cached_ms": cached_ms, "speedup": full_ms / cached_ms}
    return {"values": values, "figure": _figure(params, values, ids),
            "summary": _summary(params, values), "table": _table(values)}


def _close_logits(probs: list[float]) -> torch.Tensor:
    """The two tokens' logits, up to a constant (log p), as a (1, 2) row: their shares after a
    temperature, counting only the two of them (the rest of the vocabulary only lowers both)."""
    return torch.tensor([probs]).log()


def _figure(params, v, ids) -> dict:
    rows = v["probs"]
    names = [f"{_label(r['token'])} " for r in rows][::-1]
    drawn_at = [r["id"] == v["drawn_id"] for r in rows][::-1]
    data = [
        {"type": "bar", "orientation": "h", "y": list(range(len(rows))),
         "x": [r["prob_raw"] for r in rows][::-1], "name": "τ = 1, nothing cut",
         "marker": {"color": COLORS["guide"]}, "xaxis": "x", "yaxis": "y",
         "customdata": names, "hovertemplate": "%{customdata}: %{x:.1%} at τ = 1<extra></extra>"},
        {"type": "bar", "orientation": "h", "y": list(range(len(rows))),
         "x": [r["prob"] for r in rows][::-1], "name": "after τ, top-k, top-p",
         "marker": {"color": [COLORS["accent"] if d else COLORS["scaled"] for d in drawn_at]},
         "xaxis": "x", "yaxis": "y", "customdata": names,
         "hovertemplate": "%{customdata}: %{x:.1%} after the settings<extra></extra>"},
    ]
    labels = [_label(t) for t in v["attention_labels"]]
    T = len(labels)
    data.append({"type": "bar", "x": list(range(T)), "y": v["attention"], "xaxis": "x2",
                 "yaxis": "y2", "name": f"layer {params['layer']}, head {params['head']}",
                 "marker": {"color": COLORS["scaled"]}, "showlegend": False,
                 "customdata": labels,
                 "hovertemplate": "#%{x} %{customdata}: %{y:.3f}<extra></extra>"})
    per = v["cache_bytes_per_token"]
    P = v["prompt_tokens"]
    xs = list(range(P, P + MAX_STEPS))  # positions held after step 1 .. MAX_STEPS
    data.append({"type": "scatter", "mode": "lines", "x": list(range(1, MAX_STEPS + 1)),
                 "y": [per * x / 1e6 for x in xs], "xaxis": "x3", "yaxis": "y3",
                 "line": {"color": COLORS["guide"]}, "showlegend": False,
                 "hovertemplate": "after step %{x}: %{y:.2f} MB<extra></extra>"})
    data.append({"type": "scatter", "mode": "markers", "x": [v["step"]],
                 "y": [v["cache_bytes"] / 1e6], "xaxis": "x3", "yaxis": "y3",
                 "marker": {"size": 10, "color": COLORS["accent"]}, "showlegend": False,
                 "hovertemplate": "this step: %{y:.2f} MB<extra></extra>"})
    step_every = max(1, T // 16)
    layout = base_layout(
        height=480,
        title={"text": f"Step {v['step']}: drew “{_label(v['drawn'])}”"},
        barmode="group",
        xaxis={"domain": [0, 0.3], "title": {"text": "probability"}, "tickformat": ".0%"},
        yaxis={"tickmode": "array", "tickvals": list(range(len(rows))), "ticktext": names,
               "automargin": True},
        xaxis2={"domain": [0.42, 0.74], "anchor": "y2", "tickmode": "array",
                "tickvals": list(range(0, T, step_every)), "ticktext": labels[::step_every],
                "tickangle": -60, "tickfont": {"size": 9},
                "title": {"text": f"what the newest token sees (L{params['layer']} "
                                  f"H{params['head']})"}},
        yaxis2={"anchor": "x2", "title": {"text": "weight"}, "range": [0, 1]},
        xaxis3={"domain": [0.82, 1], "anchor": "y3", "title": {"text": "step"}},
        yaxis3={"anchor": "x3", "title": {"text": "KV cache (MB)"}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.3, "x": 0},
    )
    narrow = {"height": 1040, "title": {"text": f"Step {v['step']}: “{_label(v['drawn'])}”"},
              "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.72, 1]},
              "xaxis2": {"domain": [0, 1], "title": {"text": "newest token's weights"}},
              "yaxis2": {"domain": [0.36, 0.58]},
              "xaxis3": {"domain": [0, 1]}, "yaxis3": {"domain": [0, 0.2]},
              "legend": {"y": 0.66, "yanchor": "top", "x": 0}}
    return {"data": data, "layout": layout, "narrow": narrow}


def _summary(params, v) -> str:
    words = (f"SmolLM2-135M after “{v['prompt_text']}”"
             + (f" and “{v['before_text']}”" if v["before_text"] else "")
             + f": step {v['step']} drew “{v['drawn']}” (probability {v['drawn_prob']:.1%} after "
               f"the settings, {v['drawn_prob_raw']:.1%} at τ = 1; {v['kept_tokens']:,} tokens "
               f"left to draw from). The cache holds {v['cache_positions']} positions, "
               f"{v['cache_bytes']:,} bytes.")
    if "cached_ms" in v:
        words += (f" The cached step took {v['cached_ms']:.1f} ms; recomputing all "
                  f"{v['timed_positions']} positions took {v['full_ms']:.1f} ms.")
    return words


def _table(v) -> dict:
    return {"caption": f"Step {v['step']}: the ten most likely next tokens (and the token drawn)",
            "columns": ["token", "probability at τ = 1", "after the settings"],
            "rows": [[repr(r["token"]), round(r["prob_raw"], 4), round(r["prob"], 4)]
                     for r in v["probs"]]}
