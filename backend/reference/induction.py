"""Induction heads, measured and knocked out (Olsson et al., 2022, "In-context Learning and
Induction Heads"). The test sequence is a first token, n random tokens, and the same n again:
nothing predicts the first copy, and the second is predictable only by copying, so the loss
falls on the second copy exactly as far as the model can copy.

An *induction head* at a token of the second copy attends to the token that followed the same
token in the first copy (and its output, through W_O, raises that token's logit). A
*previous-token head* attends to the token just before. Each score is the mean attention weight
on that one position, over the rows where it is defined.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

FIRST_TOKEN = 0  # <|endoftext|> in SmolLM2's vocabulary
# Random tokens are drawn from ids 1,000 to 19,999: above the special and single-byte tokens, and
# among the more frequent pieces (BPE numbers its merges in the order it learned them). Drawn from
# the whole vocabulary, rarer pieces make copying harder for this model (measured: the second
# copy of 50 tokens costs 5.5 nats a token instead of 2.1).
LOW_ID, HIGH_ID = 1000, 20000


# --8<-- [start:sequence]
def repeated_random_tokens(n: int, seed: int) -> torch.Tensor:
    """(1, 1 + 2n): the first token, n random token ids, the same n again."""
    gen = torch.Generator().manual_seed(seed)
    r = torch.randint(LOW_ID, HIGH_ID, (n,), generator=gen)
    return torch.cat([torch.tensor([FIRST_TOKEN]), r, r])[None]
# --8<-- [end:sequence]


# --8<-- [start:scores]
def head_scores(attentions: Sequence[torch.Tensor], n: int) -> dict[str, torch.Tensor]:
    """Each head's induction and previous-token score, (L, h) each, from the attention
    weights of one sequence from `repeated_random_tokens` (per layer (1, h, T, T))."""
    j = torch.arange(n)
    rows = torch.arange(2, attentions[0].shape[-1])  # every token after the first word
    induction, previous = [], []
    for a in attentions:  # one layer at a time: (h, T, T)
        A = a[0].float()
        # the j-th token of the second copy sits at 1 + n + j; the same token in the first
        # copy at 1 + j, so what followed it there is at 2 + j
        induction.append(A[:, 1 + n + j, 2 + j].mean(-1))
        previous.append(A[:, rows, rows - 1].mean(-1))
    return {"induction": torch.stack(induction), "previous_token": torch.stack(previous)}
# --8<-- [end:scores]


def token_losses(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """(T - 1,): the loss (nats) on each token from the second on: position t predicts t + 1."""
    logp = torch.log_softmax(logits[0, :-1].float(), dim=-1)
    return -logp.gather(1, ids[0, 1:, None])[:, 0]


def copy_losses(nll: torch.Tensor, n: int) -> tuple[float, float]:
    """Mean loss on the first copy and on the second, from `token_losses` (nll[t - 1] is the
    loss on token t), each copy's first token left out: nothing before it predicts it."""
    first = nll[1:n].mean()  # tokens 2 .. n
    second = nll[n + 1: 2 * n].mean()  # tokens n + 2 .. 2n
    return float(first), float(second)


# --8<-- [start:ablate]
@contextmanager
def ablate_heads(model, heads: Sequence[tuple[int, int]], how: str,
                 ids: torch.Tensor) -> Iterator[None]:
    """Within the block, the given (layer, head) pairs output zero, or their mean over the
    positions of `ids` ("mean" ablation), before W_O mixes the heads: a forward pre-hook on each
    layer's o_proj edits that head's slice of its input (B, T, h * d_head)."""
    if how not in ("zero", "mean"):
        raise ValueError(f"how must be 'zero' or 'mean', got {how!r}")
    d_head = model.config.d_head
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)
    means: dict[int, torch.Tensor] = {}
    if how == "mean":  # each head's output, averaged over the positions, from a clean run
        grabs = [model.layers[i].attn.o_proj.register_forward_pre_hook(
            lambda _m, args, i=i: means.__setitem__(i, args[0].mean(dim=1, keepdim=True)))
            for i in by_layer]
        try:
            with torch.no_grad():
                model(ids)
        finally:
            for g in grabs:
                g.remove()

    def edit(i):
        def hook(_module, args):
            x = args[0].clone()  # (B, T, h * d_head)
            for head in by_layer[i]:
                cols = slice(head * d_head, (head + 1) * d_head)
                x[..., cols] = means[i][..., cols] if how == "mean" else 0.0
            return (x,)
        return hook

    handles = [model.layers[i].attn.o_proj.register_forward_pre_hook(edit(i)) for i in by_layer]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
# --8<-- [end:ablate]
