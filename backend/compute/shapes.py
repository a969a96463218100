"""Rules a model's head shapes must obey, checked once for every widget that builds a model.

A width splits into whole heads, each head's width is even (RoPE rotates pairs of dimensions),
and key/value heads come in groups that divide the query heads. Messages name the controls by
the labels the page shows them with.
"""

from __future__ import annotations

from backend.compute.spec import Depends, ParamError


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


def head_counts(d: int, most: int) -> tuple[int, ...]:
    """Query-head counts (1..most) a width d allows: h divides d and d / h is even."""
    return tuple(h for h in range(1, most + 1) if d % h == 0 and (d // h) % 2 == 0)


def divisors(h: int) -> tuple[int, ...]:
    """Key/value-head counts h query heads allow."""
    return tuple(k for k in range(1, h + 1) if h % k == 0)


def heads_depend_on_width(widths, most: int, width: str = "d_model") -> Depends:
    """The rule `check_heads` enforces for the query heads, as spec data (the page's slider
    steps over the allowed counts only)."""
    return Depends(width, {d: {"allowed": head_counts(d, most),
                               "note": "h must divide it and d_model / h must be even"}
                           for d in widths})


def kv_depend_on_heads(most: int, heads: str = "n_heads") -> Depends:
    """Key/value heads must divide the query heads, as spec data."""
    return Depends(heads, {h: {"allowed": divisors(h), "note": "it must divide them"}
                           for h in range(1, most + 1)})
