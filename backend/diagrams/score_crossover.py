"""Where the scores overtake the rest of a layer: per token, one layer's score work (4 T d FLOPs
with every pair scored, about 2 T d when a causal kernel skips the masked half) against every
other matrix multiply of the layer (the four projections and the gated MLP), which does not
depend on T. Drawn from a preset's configuration and a list of context lengths, with the
counts of `backend.reference.attention_cost`."""

from __future__ import annotations

from backend.reference import attention_cost as ac
from backend.reference.presets import get_preset

from .svg import Canvas

NAMES = {"llama-3-8b": "Llama-3-8B", "llama-3-70b": "Llama-3-70B", "llama-2-7b": "Llama-2-7B",
         "llama-3.2-1b": "Llama-3.2-1B"}


def other_flops(preset: str) -> int:
    """Per token, one layer: the four projections and the gated MLP."""
    cfg = get_preset(preset)
    return (ac.projection_flops(1, cfg.d_head, cfg.n_heads, 1, cfg.n_kv_heads)
            + ac.mlp_flops(1, cfg.d_model, cfg.d_ff))


def score_flops_per_token(preset: str, T: int, causal: bool = False) -> float:
    """Per token, one layer, all heads: the two T x T products, halved when causal."""
    cfg = get_preset(preset)
    return ac.score_flops(T, cfg.d_head, cfg.n_heads) / T / (2 if causal else 1)


def _m(flops: float) -> str:
    return f"{flops / 1e6:,.0f}M"


def draw(preset: str = "llama-3-8b", Ts=(4096, 16384, 32768, 65536),
         causal: bool = False) -> Canvas:
    Ts = [int(t) for t in Ts]
    if not Ts or any(t < 1 for t in Ts):
        raise ValueError("Ts: one or more positive context lengths")
    cfg = get_preset(preset)
    name = NAMES.get(preset, preset)
    other = other_flops(preset)
    scores = [score_flops_per_token(preset, t, causal) for t in Ts]
    cross = ac.layer_crossover_context(cfg.d_head, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff,
                                       causal=causal)
    left, bar_w, row, top = 76, 200, 30, 44
    scale = bar_w / max(other, *scores)
    height = top + (len(Ts) + 1) * row + 40
    how = "about half the pairs (causal)" if causal else "every pair"
    over = [t for t, s in zip(Ts, scores) if s > other]
    desc = (f"FLOPs per token in one {name} layer. The projections and the MLP cost {_m(other)} "
            f"whatever the context. The scores, with {how} computed, cost "
            + ", ".join(f"{_m(s)} at T = {t:,}" for t, s in zip(Ts, scores))
            + f". They overtake the rest of the layer at T = {cross:,}"
            + (f"; of the lengths drawn, {', '.join(f'{t:,}' for t in over)} "
               f"{'is' if len(over) == 1 else 'are'} past it." if over
               else "; none of the lengths drawn is past it."))
    c = Canvas(360, height, title=f"Score work against the rest of a {name} layer", desc=desc)
    c.text(8, 12, f"{name}, one layer, FLOPs per token", anchor="start", size="small",
           weight="bold")
    c.text(8, 28, f"scores: {how}", anchor="start", size="small")
    y = top
    c.text(left - 6, y + row / 2 - 2, "proj+MLP", anchor="end", size="small")
    c.rect(left, y + 4, other * scale, row - 10, tone="key", rx=2)
    c.text(left + other * scale + 4, y + row / 2 - 2, _m(other), anchor="start", size="small",
           mono=True)
    for i, (t, s) in enumerate(zip(Ts, scores)):
        y = top + (i + 1) * row
        c.text(left - 6, y + row / 2 - 2, f"T={t:,}", anchor="end", size="small", mono=True)
        c.rect(left, y + 4, s * scale, row - 10, tone="bad" if s > other else "query", rx=2)
        c.text(left + s * scale + 4, y + row / 2 - 2, _m(s), anchor="start", size="small",
               mono=True)
    x = left + other * scale
    bottom = top + (len(Ts) + 1) * row
    c.line(x, top, x, bottom + 4, tone="muted", dashed=True)
    c.text(min(x, 250), bottom + 18, f"scores = proj+MLP at T = {cross:,}", size="small",
           weight="bold")
    return c
