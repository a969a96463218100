"""Widget: a trained Llama writing, one token at a time, with its KV cache.

SmolLM2-135M-Instruct (`backend/smollm2`) continues the reader's prompt for `step` tokens, each
drawn from the next-token distribution after temperature, top-k and top-p
(`backend/reference/sampling.py`) with a seeded generator; the prompt is processed once and each
later step feeds only the newest token, reading every earlier key and value from the cache
(`backend/reference/kv_cache.py`). At the chosen step the widget shows the distribution (top
10), the token drawn, where the last fed token's query looks in one head, the cache's bytes for
this model's shape, and the step timed both ways: cached, and recomputing the whole sequence.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass
from functools import lru_cache

import torch

from backend.compute import measure as measure_lib
from backend.compute.spec import Output, Param, WidgetSpec, sampling_params, seed_param
from backend.compute.style import COLORS, base_layout
from backend.reference.kv_cache import kv_cache_bytes_for
from backend.reference.sampling import next_token_probs, sample_next_token
from backend.smollm2.tokens import MAX_PROMPT, encode
from backend.smollm2.tokens import piece as _piece
from backend.smollm2.tokens import shown as _shown

MAX_CHARS = 300
MAX_STEPS = 32
SHOW = 10  # bars
REPEATS = 3  # timed runs of each kind; the fastest is reported
PROMPT = "The river flows through the"
LAYERS, HEADS = 30, 9  # SmolLM2-135M (tests/claims/test_generation_steps.py checks)

SPEC = WidgetSpec(
    name="generation_steps",
    try_next=(
        "Step through the first tokens with `step`, then set `temperature` to 0.1 and `step` to "
        "32: nearly every step takes the most likely token, and the widget lists those that did "
        "not. Compare the cached step's time with the full recompute's as the text grows."
    ),
    title="SmolLM2-135M writing, one token at a time",
    description="At each step: the next-token distribution under temperature, top-k and "
                "top-p, the token drawn, where the last token fed in looks, the KV cache's size and "
                "the step's time with and without the cache.",
    params=(
        Param("prompt", "prompt", "text", default=PROMPT, max_length=MAX_CHARS,
              help=f"Any text; at most {MAX_PROMPT} tokens with <|endoftext|>."),
        Param("step", "step", "int", default=4, min=1, max=MAX_STEPS, step=1,
              help="Which new token to look at: step 1 draws the first token after the prompt."),
        *sampling_params(temperature=0.7, top_p=0.9, temperature_max=2.0, top_k_max=100),
        seed_param(999, help="Seeds the generator that draws every token."),
        Param("layer", "attention: layer", "int", default=18, min=0, max=LAYERS - 1, step=1,
              help="Whose attention the middle panel shows: the layer, counted from 0."),
        Param("head", "attention: head", "int", default=6, min=0, max=HEADS - 1, step=1,
              help="And the query head within it."),
    ),
    outputs=(
        Output("text_so_far", "the text so far", ""),
        Output("drawn_shown", "token drawn", ""),
        Output("drawn_prob", "its probability after the settings", ".1%"),
        Output("kept_tokens", "tokens left to draw from", ",d"),
        Output("not_top_shown", "steps so far that did not draw the most likely token", ""),
        Output("cache_positions", "positions in the cache", "d"),
        Output("cache_bytes", "KV cache (float32)", ",d", "bytes"),
        Output("cached_ms", "one cached step", ".1f", "ms"),
        Output("full_ms", "recomputing the whole sequence", ".1f", "ms"),
    ),
    bake=(tuple({"step": s} for s in (2, 1, 8, 16, 32))
          + ({"temperature": 0.1}, {"temperature": 1.5}, {"top_k": 5}, {"top_p": 1.0},
             {"seed": 1}, {"step": 8, "temperature": 0.1})),
    cost_hint="heavy",
    warm=False,  # the page carries its results; warming would load SmolLM2 into every worker
    measured=True,
    result_ttl=600,  # the timings are of one moment
)


def _label(text: str) -> str:
    return html.escape(_shown(text), quote=False)  # Plotly reads a few tags in labels


def _fastest_ms(fn, repeats: int = REPEATS) -> float:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1e3)
    return min(runs)


@dataclass
class Step:
    """What one step drew from: the top tokens (at τ = 1 and after the settings), the token
    drawn, how many tokens the settings left, and the last fed position's attention row in
    every layer and head (L, h, T_seen)."""
    rows: list[dict]
    drawn: int
    drawn_prob: float
    drawn_prob_raw: float
    drawn_rank: int
    kept: int
    top2: tuple[list[int], list[float]]
    attention: torch.Tensor


# --8<-- [start:steps]
@torch.no_grad()
def run_steps(model, ids: list[int], steps: int, temperature: float, top_k: int | None,
              top_p: float | None, seed: int) -> tuple[list[int], list[Step]]:
    """Prefill the prompt, then feed one new token a step, its keys and values appended to the
    cache and its query reading all of them. Returns the tokens and what each step drew from."""
    gen = torch.Generator().manual_seed(seed)
    cache = model.new_cache()
    tokens, record = list(ids), []
    step_input = torch.tensor([ids])  # step 1 (the prefill) sees the whole prompt
    for _ in range(steps):
        out = model(step_input, cache=cache, logits_to_keep=1, output_attentions=True)
        logits = out.logits[:, -1]  # (1, V)
        new = sample_next_token(logits, False, temperature, top_k, top_p, gen)  # (1, 1)
        tokens.append(int(new))
        record.append(_step(logits, int(new), temperature, top_k, top_p, out.attentions))
        step_input = new  # cached: only the newest token is new work
    return tokens, record
# --8<-- [end:steps]


def _step(logits, drawn, temperature, top_k, top_p, attentions) -> Step:
    raw = next_token_probs(logits, 1.0)[0]  # (V,)
    probs = next_token_probs(logits, temperature, top_k, top_p)[0]
    order = torch.argsort(raw, descending=True)[:SHOW].tolist()
    if drawn not in order:
        order.append(drawn)  # a token from the tail: shown below the top ten
    best = torch.topk(raw, 2)
    return Step(
        rows=[{"id": i, "prob_raw": float(raw[i]), "prob": float(probs[i]),
               "rank": int((raw > raw[i]).sum()) + 1} for i in order],
        drawn=drawn, drawn_prob=float(probs[drawn]), drawn_prob_raw=float(raw[drawn]),
        drawn_rank=int((raw > raw[drawn]).sum()) + 1, kept=int((probs > 0).sum()),
        top2=(best.indices.tolist(), best.values.tolist()),
        attention=torch.stack([a[0, :, -1] for a in attentions]),  # (L, h, T_seen)
    )


RUN_LENGTHS = (8, 16, MAX_STEPS)  # a run covers the step asked for and the ones near it


@lru_cache(maxsize=16)
def _run(ids: tuple[int, ...], temperature: float, top_k: int | None, top_p: float | None,
         seed: int, steps: int) -> tuple[list[int], list[Step]]:
    """A run of `steps` steps, kept per prompt and settings: moving `step` within it, or
    `layer` or `head`, reads from it (a seeded run's first steps are the same however long it
    goes on). On one thread, the shape of the work and not the free cores sets its time, and
    two requests' runs do not fight over them."""
    from backend.smollm2.load import model as smollm2

    with measure_lib.one_cpu_thread("cpu"):
        return run_steps(smollm2()[0], list(ids), steps, temperature, top_k, top_p, seed)


def compute(params: dict) -> dict:
    from backend.smollm2.load import model as smollm2

    model, tok = smollm2()
    ids = encode(params["prompt"])
    step, temp = params["step"], params["temperature"]
    k = params["top_k"] or None
    p = None if params["top_p"] >= 1 else params["top_p"]
    length = next(n for n in RUN_LENGTHS if n >= step)
    all_tokens, record = _run(tuple(ids), temp, k, p, params["seed"], length)
    s = record[step - 1]
    tokens = all_tokens[: len(ids) + step]
    T_seen = s.attention.shape[-1]  # positions the step's query could see: prompt + step - 1
    fed = len(ids) if step == 1 else 1  # the step's new positions

    # The step timed both ways, on the sequence it saw: the cached step feeds the newest token
    # and reads the T_seen - 1 positions a prefill put in the cache; the recompute runs all
    # T_seen positions again.
    context = torch.tensor([tokens[:T_seen]])
    with torch.no_grad():
        cache = model.new_cache()
        if step > 1:
            model(context[:, :-1], cache=cache, logits_to_keep=1)
        keys, vals = list(cache.keys), list(cache.values)

        def cached_step():
            cache.keys, cache.values = list(keys), list(vals)
            model(context[:, -1:], cache=cache, logits_to_keep=1)

        def full():
            model(context, logits_to_keep=1)

        with measure_lib.timing_lock(), measure_lib.one_cpu_thread("cpu"):
            cached_ms = _fastest_ms(cached_step) if step > 1 else None
            full_ms = _fastest_ms(full)
        if step > 1:
            cached_step()  # the cache as the step left it: what the run held
        else:
            model(context, cache=cache, logits_to_keep=1)  # the prefill fills it
        held = cache.nbytes()

    cfg = model.config
    per_position = kv_cache_bytes_for(cfg, 1, dtype=torch.float32)
    rows = [r | {"token": _piece(tok, r["id"])} for r in s.rows]
    prompt_text = tok.decode(ids[1:])
    new_text = tok.decode(tokens[len(ids):])
    head = s.attention[params["layer"], params["head"]]
    labels = [_piece(tok, i) for i in tokens[:T_seen]]
    top_pos = int(head.argmax())
    not_top = [i + 1 for i, r in enumerate(record[:step]) if r.drawn != r.top2[0][0]]
    values = {
        "prompt_tokens": len(ids), "step": step, "tokens": tokens,
        "temperature": temp, "top_p": params["top_p"], "top_k": params["top_k"],
        "prompt_text": prompt_text, "new_text": new_text,
        "before_text": tok.decode(tokens[len(ids):-1]),
        "drawn": _piece(tok, s.drawn), "drawn_shown": _shown(_piece(tok, s.drawn)),
        "drawn_id": s.drawn, "fed": labels[-1], "fed_positions": fed,
        "text_so_far": _shown(prompt_text + new_text),
        "drawn_prob": s.drawn_prob, "drawn_prob_raw": s.drawn_prob_raw,
        "drawn_rank": s.drawn_rank,
        "top_token": rows[0]["token"], "top_prob_raw": rows[0]["prob_raw"],
        "top_prob": rows[0]["prob"],
        "kept_tokens": s.kept, "vocab_size": cfg.vocab_size,
        "probs": rows,
        "attention": [float(w) for w in head],
        "attention_labels": labels,
        "attention_top": {"position": top_pos, "token": labels[top_pos],
                          "weight": float(head[top_pos])},
        "attention_first": float(head[0]),
        "steps_not_top": not_top,
        "not_top_shown": ", ".join(map(str, not_top)) or "none",
        "cache_positions": T_seen,  # after this step's keys and values went in
        "cache_bytes": per_position * T_seen,
        "cache_bytes_per_token": per_position,
        "cache_bytes_per_token_16bit": kv_cache_bytes_for(cfg, 1, dtype=torch.bfloat16),
        "cache_bytes_context": kv_cache_bytes_for(cfg, cfg.max_seq_len, dtype=torch.bfloat16),
        "cache_mb_context": kv_cache_bytes_for(cfg, cfg.max_seq_len, dtype=torch.bfloat16) / 1e6,
        "max_context": cfg.max_seq_len,
        "full_ms": full_ms,
        "timed_positions": T_seen,
        "measured_on": f"cpu (1 thread), float32, torch {torch.__version__}",
        "repeats": REPEATS,
        "n_layers": cfg.n_layers, "n_kv_heads": cfg.n_kv_heads, "d_head": cfg.d_head,
    }
    values["cache_held_bytes"] = held
    # where the top two tokens were closest, over the steps so far
    close = max(range(step), key=lambda i: record[i].top2[1][1] / record[i].top2[1][0])
    pair = record[close].top2
    values |= {"close_step": close + 1,
               "close_pair": [_piece(tok, i) for i in pair[0]],
               "close_probs": pair[1],
               "close_probs_after": [float(x) for x in
                                     next_token_probs(_close_logits(pair[1]), temp)[0]]}
    notice = ""
    if cached_ms is not None:
        values |= {"cached_ms": cached_ms, "speedup": full_ms / cached_ms}
    else:
        notice = ("Step 1 is the prefill: the whole prompt goes through at once and nothing is "
                  "cached before it, so only the full pass is timed.")
    return {"values": values, "figure": _figure(params, values, ids),
            "summary": _summary(params, values), "table": _table(values), "notice": notice}


def _close_logits(probs: list[float]) -> torch.Tensor:
    """The two tokens' logits, up to a constant (log p), as a (1, 2) row: their shares after a
    temperature, counting only the two of them (the rest of the vocabulary only lowers both)."""
    return torch.tensor([probs]).log()


def _figure(params, v, ids) -> dict:
    rows = v["probs"]
    # top ten by probability at τ = 1, then (when it is not among them) the token drawn
    names = [_label(r["token"]) + (f" (rank {r['rank']:,})" if r["rank"] > SHOW else "") + " "
             for r in rows][::-1]
    ys = list(range(len(rows)))
    drawn_y = [y for y, r in zip(ys, rows[::-1], strict=True) if r["id"] == v["drawn_id"]]
    after = [0.0 if r["id"] == v["drawn_id"] else r["prob"] for r in rows][::-1]
    bar = {"type": "bar", "orientation": "h", "xaxis": "x", "yaxis": "y", "width": 0.4}
    data = [
        bar | {"y": ys, "x": [r["prob_raw"] for r in rows][::-1], "offset": -0.4,
               "name": "τ = 1, nothing cut", "marker": {"color": COLORS["guide"]},
               "customdata": names, "hovertemplate": "%{customdata}: %{x:.1%} at τ = 1<extra></extra>"},
        bar | {"y": ys, "x": after, "offset": 0, "name": "after τ, top-k, top-p",
               "marker": {"color": COLORS["scaled"]}, "customdata": names,
               "hovertemplate": "%{customdata}: %{x:.1%} after the settings<extra></extra>"},
        bar | {"y": drawn_y, "x": [v["drawn_prob"]], "offset": 0, "name": "the token drawn",
               "marker": {"color": COLORS["accent"]}, "customdata": [names[drawn_y[0]]],
               "hovertemplate": "drawn: %{customdata}, %{x:.1%} after the settings"
                                "<extra></extra>"},
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
    fed = _label(v["fed"])
    step_every = max(1, T // 16)
    layout = base_layout(
        height=480,
        title={"text": f"Step {v['step']}: drew “{_label(v['drawn'])}”"},
        barmode="overlay",
        xaxis={"domain": [0, 0.3], "title": {"text": "probability"}, "tickformat": ".0%"},
        yaxis={"tickmode": "array", "tickvals": ys, "ticktext": names, "automargin": True},
        xaxis2={"domain": [0.42, 0.74], "anchor": "y2", "tickmode": "array",
                "tickvals": list(range(0, T, step_every)), "ticktext": labels[::step_every],
                "tickangle": -60, "tickfont": {"size": 9},
                "title": {"text": f"where “{fed}” looks (L{params['layer']} H{params['head']})"}},
        yaxis2={"anchor": "x2", "title": {"text": "weight"}, "range": [0, 1]},
        xaxis3={"domain": [0.82, 1], "anchor": "y3", "title": {"text": "step"}},
        yaxis3={"anchor": "x3", "title": {"text": "KV cache (MB)"}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.3, "x": 0},
    )
    narrow = {"height": 1040, "title": {"text": f"Step {v['step']}: “{_label(v['drawn'])}”"},
              "xaxis": {"domain": [0, 1]}, "yaxis": {"domain": [0.72, 1]},
              "xaxis2": {"domain": [0, 1], "title": {"text": f"where “{fed}” looks"}},
              "yaxis2": {"domain": [0.36, 0.58]},
              "xaxis3": {"domain": [0, 1]}, "yaxis3": {"domain": [0, 0.2]},
              "legend": {"y": 0.66, "yanchor": "top", "x": 0}}
    return {"data": data, "layout": layout, "narrow": narrow}


def _summary(params, v) -> str:
    words = (f"SmolLM2-135M after “{v['prompt_text']}”"
             + (f" and “{v['before_text']}”" if v["before_text"] else "")
             + f": step {v['step']} drew “{v['drawn_shown']}” (probability {v['drawn_prob']:.1%} after "
               f"the settings, {v['drawn_prob_raw']:.1%} at τ = 1; {v['kept_tokens']:,} "
               f"{'token' if v['kept_tokens'] == 1 else 'tokens'} left to draw from). "
               f"The cache holds {v['cache_positions']} positions, "
               f"{v['cache_bytes']:,} bytes.")
    if "cached_ms" in v:
        words += (f" The cached step took {v['cached_ms']:.1f} ms; recomputing all "
                  f"{v['timed_positions']} positions took {v['full_ms']:.1f} ms.")
    return words


def _table(v) -> dict:
    return {"caption": f"Step {v['step']}: the ten most likely next tokens (and the token drawn)",
            "columns": ["token", "probability at τ = 1", "after the settings"],
            "rows": [[_shown(r["token"]), round(r["prob_raw"], 4), round(r["prob"], 4)]
                     for r in v["probs"]]}
