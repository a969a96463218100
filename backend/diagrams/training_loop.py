"""The training loop: batch, forward, loss over shifted labels, backward, clip, AdamW step, repeat.

Drawn from a run's sizes (the batch B, the window T, the vocabulary V, the clipping norm, the
number of steps), so the shapes on the arrows are the ones the chapter's run uses. The weights'
initialisation enters once, at the top; the learning-rate schedule feeds every AdamW step.
"""

from __future__ import annotations

from .svg import Canvas

W, H = 470, 440
COL_X, BOX_W, BOX_H = 30, 300, 40
SIDE_X, SIDE_W = COL_X + BOX_W + 30, 108


def draw(batch: int = 16, seq_len: int = 128, vocab: int = 4096, clip: float = 1.0,
         steps: int = 1600) -> Canvas:
    for name, v in (("batch", batch), ("seq_len", seq_len), ("vocab", vocab), ("steps", steps)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not clip > 0:
        raise ValueError(f"clip must be positive, got {clip!r}")
    stages = (
        ("batch", f"{batch} random windows, {seq_len} tokens", "key", f"ids ({batch}, {seq_len})"),
        ("forward", "DecoderLM: all positions at once", "query",
         f"logits ({batch}, {seq_len}, {vocab})"),
        ("loss", "position t scored on token t+1", "accent", "one number (nats)"),
        ("backward", "a gradient for every weight", "purple", "gradients"),
        ("clip", f"rescale if the norm is over {clip:g}", "bad", f"gradients, norm ≤ {clip:g}"),
        ("AdamW step", "two moments, decay, lr(step)", "good", None),
    )
    desc = (f"A loop of six stages drawn top to bottom, repeated {steps:,} times. A batch of "
            f"{batch} random windows of {seq_len} token ids goes through the model in one forward "
            f"pass, which gives logits of shape ({batch}, {seq_len}, {vocab}); the loss scores each "
            f"position's logits against the next token; the backward pass gives a gradient for every "
            f"weight; the gradients are scaled down if their global norm is over {clip:g}; AdamW "
            f"updates the weights at the learning rate the schedule gives for this step (a linear "
            f"warm-up, then a cosine decay). An arrow from the update back to the batch closes the "
            f"loop. The weights are drawn once before the first step, from N(0, 0.02).")
    c = Canvas(W, H, title="The training loop", desc=desc)
    c.box(COL_X, 6, BOX_W, 30, "initial weights: N(0, 0.02)", tone="muted", dashed=True,
          size="small")
    c.arrow(COL_X + BOX_W / 2, 36, COL_X + BOX_W / 2, 52)
    y = 52
    centres = []
    for i, (name, what, tone, out) in enumerate(stages):
        c.box(COL_X, y, BOX_W, BOX_H, name, tone=tone, sub=what)
        centres.append(y + BOX_H / 2)
        if i < len(stages) - 1:
            c.arrow(COL_X + BOX_W / 2, y + BOX_H, COL_X + BOX_W / 2, y + BOX_H + 26, label=out)
        y += BOX_H + 26
    # the schedule feeds the AdamW step
    sy = centres[-1] - 20
    c.box(SIDE_X, sy, SIDE_W, 40, "schedule", tone="muted", sub="warm-up, cosine", size="small")
    c.arrow(SIDE_X, sy + 20, COL_X + BOX_W, sy + 20, label="lr", label_side="above")
    # back to the next batch
    last_y = centres[-1] + BOX_H / 2
    back_x = COL_X - 22
    c.line(COL_X, centres[-1], back_x, centres[-1], tone="accent", width=2)
    c.line(back_x, centres[-1], back_x, centres[0], tone="accent", width=2)
    c.arrow(back_x, centres[0], COL_X, centres[0], tone="accent", width=2)
    c.text(COL_X + BOX_W / 2, last_y + 18, f"step + 1, until step {steps:,}", size="small",
           tone="accent")
    return c
