"""What each attention head does on a text, as four scores between 0 and 1, read off its
attention weights. Each score is the mean, over the rows (query positions) where it is defined,
of the weight the row puts on one set of positions:

- previous-token: the position just before (rows 2 onward, so the first token's column, which
  many heads use as a resting place, is never the "previous" one);
- first-token: position 0 (rows 1 onward);
- local: the row's own position and the LOCAL - 1 before it (rows from LOCAL on, so the window
  never reaches position 0);
- induction: every position that followed an earlier occurrence of the row's token (Olsson et
  al., 2022, call it prefix matching), on the rows whose token occurred before. A text that
  repeats no token has no induction score.

A head can score high on several (a previous-token head is local too); the scores describe, they
do not classify.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

ROLES = ("previous_token", "first_token", "local", "induction")
LOCAL = 4  # the row's own token and the three before it


def induction_targets(ids: Sequence[int]) -> dict[int, list[int]]:
    """{row: positions that followed an earlier copy of the row's token}, for each row whose
    token occurred before at a position s >= 1 with s + 1 < row."""
    seen: dict[int, list[int]] = {}
    targets = {}
    for t, token in enumerate(ids):
        after = [s + 1 for s in seen.get(token, ()) if s + 1 < t]
        if t >= 2 and after:
            targets[t] = after
        if t >= 1:
            seen.setdefault(token, []).append(t)
    return targets


# --8<-- [start:scores]
def role_scores(maps: torch.Tensor, ids: Sequence[int]) -> dict[str, torch.Tensor | None]:
    """Each head's score for each role, (L, h) each, from every layer's and head's attention
    weights on one text, maps (L, h, T, T); None where the text has no row for a role."""
    T = maps.shape[-1]
    A = maps.float()
    out: dict[str, torch.Tensor | None] = dict.fromkeys(ROLES)
    if T >= 3:
        rows = torch.arange(2, T)
        out["previous_token"] = A[..., rows, rows - 1].mean(-1)
    if T >= 2:
        out["first_token"] = A[..., 1:, 0].mean(-1)
    if T > LOCAL:
        rows = torch.arange(LOCAL, T)
        cols = rows[:, None] - torch.arange(LOCAL)  # (rows, LOCAL): t, t-1, ..., t-LOCAL+1
        out["local"] = A[..., rows[:, None], cols].sum(-1).mean(-1)
    targets = induction_targets(ids)
    if targets:
        out["induction"] = torch.stack([A[..., t, cols].sum(-1) for t, cols in targets.items()],
                                       dim=-1).mean(-1)
    return out
# --8<-- [end:scores]
