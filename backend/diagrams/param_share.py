"""Where a model's parameters sit: one bar per model, cut into the embedding, the attention and
MLP matrices of all its blocks, and the LM head, each part as wide as its share of the total.

The parts are counted by `backend.reference.counting.count_parameters` on the book's own
DecoderLM built from the model's configuration (on the meta device), never typed in. The norms'
weights (under 0.01% of any of these models) are too few to draw; the text description names
them, and "blocks" under a bar counts everything in the L blocks, norms included.
"""

from __future__ import annotations

from backend.reference.counting import ParamCount, count_parameters
from backend.reference.presets import get_preset

from .svg import Canvas

NAMES = {"llama-2-7b": "Llama-2-7B", "llama-2-13b": "Llama-2-13B", "llama-2-70b": "Llama-2-70B",
         "llama-3-8b": "Llama-3-8B", "llama-3-70b": "Llama-3-70B", "llama-3.2-1b": "Llama-3.2-1B"}
# (part, legend label, tone)
PARTS = (("embedding", "embedding", "accent"), ("attention", "attention", "query"),
         ("mlp", "MLP", "good"), ("lm_head", "LM head", "purple"))
X0, W = 8, 344            # the bars' left edge and full width
ROW = 62                  # one model's height


def shares(count: ParamCount) -> dict[str, float]:
    """Each part's fraction of the total (the norms are the small remainder)."""
    return {part: getattr(count, part) / count.total for part, _, _ in PARTS}


def in_blocks(count: ParamCount, n_layers: int) -> float:
    """The L blocks' share of the total, their norms included."""
    return count.per_layer * n_layers / count.total


def _billions(n: int) -> str:
    return f"{n / 1e9:.2f}B"


def draw(presets: tuple[str, ...] | list[str] = ("llama-2-7b", "llama-3-8b", "llama-3.2-1b")) -> Canvas:
    presets = tuple(presets)
    if not 1 <= len(presets) <= 5:
        raise ValueError("draw one to five models")
    counts = {p: count_parameters(get_preset(p)) for p in presets}
    lines = []
    for p in presets:
        n, s = counts[p], shares(counts[p])
        cfg = get_preset(p)
        head = "tied to the embedding, so no second matrix" if cfg.tie_embeddings else \
            f"{s['lm_head']:.1%}"
        lines.append(f"{NAMES.get(p, p)}, {n.total:,} parameters: embedding {s['embedding']:.1%}, "
                     f"attention {s['attention']:.1%}, MLP {s['mlp']:.1%}, LM head {head}; the "
                     f"{cfg.n_layers} blocks together hold {in_blocks(n, cfg.n_layers):.1%} (the norms' "
                     f"weights, {n.norms:,} of them, are too few to draw).")
    desc = ("One horizontal bar per model, each the model's whole parameter count, cut into parts "
            "as wide as their shares, counted on the book's model built from each configuration. "
            + " ".join(lines))
    c = Canvas(360, 30 + ROW * len(presets) + 8, title="Where the parameters sit", desc=desc)
    # the legend
    x = X0
    for _, label, tone in PARTS:
        c.rect(x, 8, 12, 12, tone=tone, rx=2)
        c.text(x + 16, 14, label, size="small", anchor="start")
        x += 22 + 6.2 * len(label) + 12
    for i, p in enumerate(presets):
        n, s = counts[p], shares(counts[p])
        y = 30 + i * ROW
        c.text(X0, y + 9, NAMES.get(p, p), anchor="start", weight="bold")
        c.text(X0 + W, y + 9, f"{_billions(n.total)}" + (" · tied" if get_preset(p).tie_embeddings else ""),
               anchor="end", size="small", mono=True)
        x = X0
        by = y + 20
        for part, _, tone in PARTS:
            w = W * s[part]
            if w > 0:
                c.rect(x, by, w, 20, tone=tone, rx=0)
            x += w
        # under the bar: the blocks' share and the two ends'
        blocks = in_blocks(n, get_preset(p).n_layers)
        c.text(X0, by + 32, f"embedding {s['embedding']:.1%}", size="small", anchor="start")
        c.text(X0 + W / 2, by + 32, f"blocks {blocks:.1%}", size="small")
        end = "head: tied" if get_preset(p).tie_embeddings else f"head {s['lm_head']:.1%}"
        c.text(X0 + W, by + 32, end, size="small", anchor="end")
    return c
