"""Rules a model's head shapes must obey, checked once for every widget that builds a model.

A width splits into whole heads, each head's width is even (RoPE rotates pairs of dimensions),
and key/value heads come in groups that divide the query heads. Messages name the controls by
the labels the page shows them with.
"""

from __future__ import annotations

from backend.widgets.spec import ParamError


def check_heads(d: int, h: int, kv: int, labels: dict,
                names=("d_model", "n_heads", "n_kv")) -> None:
    """Raise ParamError (a 400) if `d` model width, `h` query heads, `kv` key/value heads don't fit."""
    nd, nh, nkv = names
    if d % h:
        raise ParamError(f"'{labels[nh]}' must divide '{labels[nd]}' ({d}); got {h}", nh)
    if (d // h) % 2:
        raise ParamError(f"'{labels[nd]}' / '{labels[nh]}' = {d // h} must be even: "
                         "RoPE rotates pairs of dimensions", nh)
    if kv > h or h % kv:
        raise ParamError(f"'{labels[nkv]}' must divide '{labels[nh]}' ({h}); got {kv}", nkv)
