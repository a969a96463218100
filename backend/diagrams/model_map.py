"""The map of the whole decoder-only model, drawn from a configuration, each part linking to the
chapter that teaches it.

token ids → embedding → L × [RMSNorm → attention → add, RMSNorm → SwiGLU MLP → add] → RMSNorm
→ LM head → logits → sampling, with the tensor shapes of the configuration on the arrows.
"""

from __future__ import annotations

import json

from backend.bookmodel import WEIGHTS_DIR
from backend.reference.config import ModelConfig
from backend.reference.presets import get_preset

from .svg import Canvas

NAMES = {"book": "the book's trained model", "llama-3-8b": "Llama-3-8B"}
# What a screen reader says each link opens (the caption says: click a part to read about it).
CHAPTERS = {"model": "the whole-model chapter", "block": "the block chapter",
            "self-attention": "the self-attention chapter", "masks": "the masks chapter",
            "scaling": "the chapter on dividing by √d_k", "positions": "the positions chapter",
            "heads": "the heads chapter", "kv-cache": "the KV-cache chapter"}


class _Map(Canvas):
    """A canvas whose links say the chapter they open: "causal mask: the masks chapter"."""

    def open_link(self, href: str, name: str):
        page = href.removeprefix("doc:chapters/").split("#")[0].removesuffix(".md")
        super().open_link(href, f"{name}: {CHAPTERS[page]}")


def config_for(preset: str) -> ModelConfig:
    """`book` (the model the book trains, from its weights' config.json) or a named preset."""
    if preset == "book":
        return ModelConfig(**json.loads((WEIGHTS_DIR / "config.json").read_text()))
    return get_preset(preset)


def _n(x: int) -> str:
    """4096 → "4,096" (thin, readable on a phone)."""
    return f"{x:,}"


def draw(preset: str = "book") -> Canvas:
    cfg = config_for(preset)
    d, V, L, h, kv, ff = (cfg.d_model, cfg.vocab_size, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads,
                          cfg.d_ff)
    name = NAMES.get(preset, preset)
    heads = f"{h} heads" if kv == h else f"{h} heads, {kv} K/V"
    tied = " (tied)" if cfg.tie_embeddings else ""
    desc = (f"The decoder-only model as {name} builds it. T token ids go into an embedding table "
            f"of {_n(V)} rows of width {_n(d)}, giving a T × {_n(d)} stream of vectors. The stream "
            f"passes through {L} identical blocks. In each, an RMSNorm feeds causal "
            f"self-attention ({heads}, RoPE on queries and keys, scores divided by the square "
            f"root of d_k = {cfg.d_head}), whose output is added back to the stream; then an "
            f"RMSNorm feeds a SwiGLU MLP ({_n(d)} → {_n(ff)} → {_n(d)}), whose output is added "
            f"back too. A final RMSNorm and the LM head ({_n(d)} → {_n(V)}{tied}) turn each "
            f"position's vector into {_n(V)} logits, and sampling picks the next token. Each part "
            f"links to the chapter that teaches it.")
    c = _Map(360, 688, title=f"Map of the decoder-only model: {name}", desc=desc, max_scale=1.1)
    cx, lw = 80, 140          # the left column: the model's main path
    left = cx - lw / 2

    c.box(left, 8, lw, 36, "token ids", sub="T", href="doc:chapters/model.md")
    c.arrow(cx, 44, cx, 70)
    c.box(left, 70, lw, 42, "embedding", sub=f"{_n(V)} × {_n(d)}",
          href="doc:chapters/model.md#the-math")
    c.arrow(cx, 112, cx, 146, label=f"T × {_n(d)}")

    # the L blocks: a dashed frame around one block, the residual stream down its left side
    top, bottom = 146, 440
    c.open_link("doc:chapters/block.md", f"the block, repeated {L} times")
    c.rect(4, top, 352, bottom - top, tone="plain", rx=10, dashed=True)
    c.text(cx + 8, top + 13, f"× {L} blocks", anchor="start", weight="bold")
    c.close_link()
    c.line(cx, top, cx, 248)
    c.line(cx, 262, cx, 398)
    c.line(cx, 412, cx, bottom)
    right, rw = 180, 170

    def sublayer(y_branch, y_norm, y_box, box_h, y_add, before):
        c.line(cx, y_branch, right + rw / 2, y_branch)
        c.arrow(right + rw / 2, y_branch, right + rw / 2, y_norm)
        c.box(right, y_norm, rw, 26, "RMSNorm", href="doc:chapters/block.md#from-layernorm-to-rmsnorm",
              link_name=f"RMSNorm before {before}")
        c.arrow(right + rw / 2, y_norm + 26, right + rw / 2, y_box)
        c.line(right, y_box + box_h / 2, right - 20, y_box + box_h / 2)
        c.line(right - 20, y_box + box_h / 2, right - 20, y_add)
        c.arrow(right - 20, y_add, cx + 8, y_add)
        c.circle(cx, y_add, 7)
        c.text(cx, y_add, "+", weight="bold")

    # attention, with its parts as links
    sublayer(172, 180, 218, 118, 255, "attention")
    c.rect(right, 218, rw, 118, tone="query")
    c.open_link("doc:chapters/self-attention.md", "causal self-attention")
    c.text(right + rw / 2, 232, "causal self-attention", weight="bold")
    c.close_link()
    chips = [("causal mask", "masks.md"), (f"÷ √{cfg.d_head}", "scaling.md"),
             ("RoPE", "positions.md"), ("K, V cache", "kv-cache.md")]
    for i, (label, page) in enumerate(chips):
        x, y = right + 6 + (i % 2) * 80, 248 + (i // 2) * 28
        c.box(x, y, 78, 22, label, tone="plain", rx=4, href=f"doc:chapters/{page}",
              size="small")
    c.box(right + 6, 304, 158, 22, heads, tone="plain", rx=4, href="doc:chapters/heads.md",
          size="small")

    # the MLP
    sublayer(348, 354, 390, 30, 405, "the MLP")
    c.box(right, 390, rw, 30, "SwiGLU MLP", tone="good", href="doc:chapters/block.md#from-the-two-matrix-mlp-to-swiglu")
    c.text(right + rw / 2, 428, f"{_n(d)} → {_n(ff)} → {_n(d)}", size="small", mono=True)

    c.arrow(cx, bottom, cx, 458, label=f"T × {_n(d)}")
    c.box(left, 458, lw, 28, "RMSNorm", href="doc:chapters/block.md#from-layernorm-to-rmsnorm",
          link_name="final RMSNorm")
    c.arrow(cx, 486, cx, 512)
    c.box(left, 512, lw, 42, "LM head", sub=f"{_n(d)} → {_n(V)}{tied}",
          href="doc:chapters/model.md#the-math")
    c.arrow(cx, 554, cx, 592, label=f"T × {_n(V)} logits")
    c.box(left, 592, lw, 42, "sampling", sub="softmax, temperature",
          href="doc:chapters/model.md#out-of-the-model-sampling")
    c.arrow(cx, 634, cx, 658)
    c.box(left, 658, lw, 26, "next token", tone="accent")
    return c
