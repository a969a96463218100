"""The parity check's pipeline: one set of seeded weights and tokens through the book's DecoderLM
and through transformers' LlamaForCausalLM, then the logits compared position by position. The
book's side is drawn piece by piece, and the piece the parity widget's ``fault`` breaks is marked:
the pieces are the ones ``backend.compute.parity_faults.break_model`` swaps for a broken subclass
(every RMSNorm, the attention layer's RoPE or ``repeat_kv``, the model's causal mask), so the
picture follows the code.
"""

from __future__ import annotations

from backend.compute.parity_faults import FAULTS

from .svg import Canvas

# (label, the fault that breaks it or None, inside the repeated block?)
PIECES = (
    ("embed_tokens", None, False),
    ("RMSNorm", "norm_upcast", True),
    ("q, k, v projections", None, True),
    ("RoPE on q and k", "rope_layout", True),
    ("repeat_kv", "repeat_kv", True),
    ("causal mask, softmax", "causal_mask", True),
    ("o_proj, + residual", None, True),
    ("RMSNorm", "norm_upcast", True),
    ("SwiGLU MLP, + residual", None, True),
    ("final RMSNorm", "norm_upcast", False),
    ("lm_head", None, False),
)
BROKEN_AS = {  # what the broken piece does instead, in a few words
    "rope_layout": "adjacent pairs",
    "norm_upcast": "no upcast",
    "repeat_kv": "heads tiled",
    "causal_mask": "mask off",
}


def draw(fault: str = "none", n_layers: int = 2) -> Canvas:
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {FAULTS}")
    if not 1 <= n_layers <= 64:
        raise ValueError("n_layers 1..64")
    row, box_h, left, w = 27, 22, 16, 170
    top = 40
    height = top + len(PIECES) * row + 88
    broken = [p for p, f, _ in PIECES if f == fault]
    where = (f"The broken piece, {BROKEN_AS[fault]}, is marked "
             f"{'in ' + str(len(broken)) + ' places' if len(broken) > 1 else 'once'}; it sits in "
             + ("every one of the " + str(n_layers) + " layers" if n_layers > 1 else "the one layer")
             + (" and in the final norm" if fault == "norm_upcast" else "") + "."
             if fault != "none" else "Nothing is broken: the two sides compute the same function.")
    desc = ("The same seeded weights and the same tokens go through the book's DecoderLM and "
            "through transformers' LlamaForCausalLM. The book's side is drawn piece by piece: "
            "embed_tokens; then, repeated " + str(n_layers) + " times, RMSNorm, the q, k, v "
            "projections, RoPE on q and k, repeat_kv, the causal mask and softmax, o_proj and the "
            "residual add, RMSNorm, the SwiGLU MLP and its residual add; then the final RMSNorm "
            "and lm_head. The two sets of logits are compared at every position. " + where)
    c = Canvas(360, height, title="The parity check, with one piece broken", desc=desc)
    c.text(left + w / 2, 16, "the book's DecoderLM", weight="bold")
    c.text(left + w + 104 + 35, 16, "transformers", weight="bold")
    block = [i for i, (_, _, inside) in enumerate(PIECES) if inside]
    y0, y1 = top + block[0] * row - 5, top + block[-1] * row + box_h + 5
    c.rect(left - 8, y0, w + 16, y1 - y0, tone="muted", rx=8, dashed=True)
    c.text(left + w + 14, (y0 + y1) / 2, f"× {n_layers}", anchor="start", weight="bold")
    for i, (label, f, _) in enumerate(PIECES):
        y = top + i * row
        bad = f is not None and f == fault
        c.box(left, y, w, box_h, label, tone="bad" if bad else "plain", size="small")
        if bad:
            c.text(left + w + 14, y + box_h / 2 + (14 if (y0 + y1) / 2 - 8 < y + box_h / 2 < (y0 + y1) / 2 + 8 else 0),
                   BROKEN_AS[fault], anchor="start", size="small", tone="bad")
        if i:
            c.arrow(left + w / 2, y - row + box_h, left + w / 2, y)
    # transformers' side: one box the height of the whole model
    rx, rw = left + w + 104, 70
    c.box(rx, top, rw, len(PIECES) * row - (row - box_h), None, tone="accent")
    c.text(rx + rw / 2, top + len(PIECES) * row / 2 - 8, "Llama", weight="bold")
    c.text(rx + rw / 2, top + len(PIECES) * row / 2 + 10, "ForCausalLM", size="small")
    yb = top + len(PIECES) * row + 16
    c.arrow(left + w / 2, yb - 16 - (row - box_h), left + w / 2, yb)
    c.arrow(rx + rw / 2, yb - 16 - (row - box_h), rx + rw / 2, yb)
    c.box(left, yb, rx + rw - left, 30, "|Δ logit| at every position", tone="accent" if fault == "none" else "bad")
    c.text(180, yb + 52, "same weights, same tokens" if fault == "none" else f"one piece broken: {BROKEN_AS[fault]}",
           size="small")
    return c
