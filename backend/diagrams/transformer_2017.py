"""The original encoder-decoder Transformer (Vaswani et al. 2017), drawn from its configuration.

Left, the encoder: source ids → √d_model · embedding + positions → N layers of
[self-attention, MLP]. Its last layer's output, the memory, runs up a bus to the right, into the
cross-attention of *every* one of the decoder's N layers of [masked self-attention,
cross-attention, MLP]; the decoder ends in a linear layer over the vocabulary. Every sublayer is
post-norm (add, then LayerNorm). The shapes on the arrows use the configuration's d_model.
"""

from __future__ import annotations

from .svg import Canvas

MAX_LAYERS = 8


def draw(n_layers: int = 6, d_model: int = 512, n_heads: int = 8, d_ff: int = 2048,
         scale_embeddings: bool = True) -> Canvas:
    N, d = n_layers, d_model
    if not 1 <= N <= MAX_LAYERS:
        raise ValueError(f"n_layers must be from 1 to {MAX_LAYERS}")
    emb = f"√{d}·embed + PE" if scale_embeddings else "embed + PE"
    desc = (f"The 2017 Transformer with {N} layers a side, d_model = {d}, {n_heads} heads and an "
            f"MLP of inner width {d_ff}. Left, the encoder: the S source token ids are embedded"
            + (f", multiplied by the square root of {d}," if scale_embeddings else "")
            + f" and added to sinusoidal positions, giving S × {d}; {N} encoder layers follow, "
            f"each self-attention over the whole source, then an MLP, each sublayer followed by "
            f"add and LayerNorm. The last encoder layer's output, the memory (S × {d}), is carried "
            f"to every one of the {N} decoder layers. Right, the decoder: the T target ids are "
            f"embedded the same way, giving T × {d}; each decoder layer runs masked (causal) "
            f"self-attention over the target, then cross-attention whose queries come from the "
            f"target and whose keys and values come from the memory, then an MLP. A linear layer "
            f"turns the T × {d} output into logits over the vocabulary.")
    layer_h, gap = 62, 10
    top = 112
    bottom = top + N * (layer_h + gap)
    c = Canvas(360, bottom + 92, title=f"The 2017 encoder-decoder, {N} layers a side", desc=desc)
    ex, ew = 8, 150           # encoder column
    dx, dw = 206, 146         # decoder column
    bus = 186                 # the memory's path up to the decoder layers

    for x, w, ids in ((ex, ew, "source ids (S)"), (dx, dw, "target ids (T)")):
        c.box(x, 6, w, 28, ids, tone="plain")
        c.arrow(x + w / 2, 34, x + w / 2, 50)
        c.box(x, 50, w, 30, emb, tone="accent", size="small")
        seq = "S" if x == ex else "T"
        c.arrow(x + w / 2, 80, x + w / 2, top, label=f"{seq} × {d}")

    for i in range(N):
        y = top + i * (layer_h + gap)
        # encoder layer: two sublayers
        c.rect(ex, y, ew, layer_h, tone="plain", rx=6)
        c.box(ex + 6, y + 6, ew - 12, 22, "self-attn", tone="brown", size="small")
        c.box(ex + 6, y + 34, ew - 12, 22, "MLP", tone="good", size="small")
        # decoder layer: three sublayers
        c.rect(dx, y, dw, layer_h, tone="plain", rx=6)
        c.box(dx + 6, y + 3, dw - 12, 17, "masked self-attn", tone="query", size="small")
        c.box(dx + 6, y + 22, dw - 12, 17, "cross-attn", tone="value", size="small")
        c.box(dx + 6, y + 41, dw - 12, 17, "MLP", tone="good", size="small")
        # the memory enters this layer's cross-attention
        c.arrow(bus, y + 30.5, dx + 6, y + 30.5, tone="value")
        if i < N - 1:
            c.arrow(ex + ew / 2, y + layer_h, ex + ew / 2, y + layer_h + gap)
            c.arrow(dx + dw / 2, y + layer_h, dx + dw / 2, y + layer_h + gap)
    c.text(ex + 4, bottom + 3, f"{N} layers", size="small", weight="bold", anchor="start")
    c.text(dx + dw / 2, bottom + 3, f"{N} layers", size="small", weight="bold")

    # the memory: out of the last encoder layer, up the bus to every decoder layer
    mem_y = bottom + 22
    mx = ex + ew - 30
    c.line(mx, bottom - gap, mx, mem_y, tone="value")
    c.line(mx, mem_y, bus, mem_y, tone="value")
    c.line(bus, mem_y, bus, top + 30.5, tone="value")
    c.text(mx - 6, mem_y, f"memory S × {d}", size="small", anchor="end", mono=True)

    c.arrow(dx + dw / 2, bottom - gap, dx + dw / 2, bottom + 40)
    c.box(dx, bottom + 40, dw, 26, "linear → logits", tone="plain", size="small")
    c.text(dx + dw / 2, bottom + 78, "T × vocabulary", size="small", mono=True)
    c.text(ex, bottom + 78, "each sublayer: add, then LayerNorm", size="small", anchor="start",
           tone="muted")
    return c
