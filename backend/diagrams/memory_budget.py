"""One accelerator's memory: the weights are paid once, the KV cache once per user. Drawn from a
model's configuration, the accelerator's size and the context length, once with the model's own
key/value heads and once as plain multi-head attention (one key/value head per query head).

The card is one of `serving.CARDS`, by the memory CUDA reports for it (the A100 sold as 80 GB
holds 85.0 GB), and each row's users are `serving.users_fit` with that row's own weights (the
multi-head variant's key and value projections are wider), so the figure and the `kv_cache`
widget count the same users."""

from __future__ import annotations

from backend.reference.presets import get_preset
from backend.reference.serving import CARDS, GB, users_fit, weights_bytes

from .svg import Canvas

BF16 = 2
NAMES = {"llama-3-8b": "Llama-3-8B", "llama-3-70b": "Llama-3-70B", "llama-2-7b": "Llama-2-7B",
         "llama-2-70b": "Llama-2-70B", "llama-3.2-1b": "Llama-3.2-1B"}


def per_user_bytes(n_layers: int, n_kv: int, d_head: int, context: int) -> int:
    """Keys and values, every layer, every key/value head, `context` tokens, bfloat16."""
    return 2 * n_layers * n_kv * d_head * context * BF16


def with_article(card_name: str) -> str:
    """The card's name after 'a' or 'an' as it is read aloud ("an A100 80 GB", "an H200 141 GB",
    "a T4 16 GB"); a name that already starts with its article ("a 24 GB card") is kept."""
    first = card_name.split()[0]
    if first in ("a", "an"):
        return card_name
    vowel = first[0] in "AEFHILMNORSX" or first.startswith(("8", "11", "18"))
    return f"{'an' if vowel else 'a'} {card_name}"


def rows_of(preset: str, memory: str = "80", context: int = 8192) -> list[dict]:
    """Each drawn row: its key/value heads, weights, per-user cache and `users_fit` result."""
    cfg = get_preset(preset)
    card = CARDS[str(memory)]
    variants = [(cfg, f"{cfg.n_kv_heads} K/V heads (as built)")]
    if cfg.n_kv_heads != cfg.n_heads:
        variants.append((cfg.replace(n_kv_heads=cfg.n_heads),
                         f"{cfg.n_heads} K/V heads (one per query head)"))
    rows = []
    for c, label in variants:
        weights = weights_bytes(c)
        per_user = per_user_bytes(c.n_layers, c.n_kv_heads, c.d_head, context)
        rows.append({"n_kv": c.n_kv_heads, "label": label, "weights": weights,
                     "per_user": per_user, "fit": users_fit(card.memory_bytes, weights, per_user)})
    return rows


def draw(preset: str = "llama-3-8b", memory: str = "80", context: int = 8192) -> Canvas:
    name = NAMES.get(preset, preset)
    card = CARDS[str(memory)]
    memory_bytes = card.memory_bytes
    rows = rows_of(preset, memory, context)
    left, bar_w, bar_h, top = 10, 340, 30, 30
    height = top + len(rows) * 78 + 34
    said = "; ".join(f"with {r['n_kv']} key/value heads the weights take {r['weights'] / GB:.1f} GB, "
                     f"each user's cache is {r['per_user'] / GB:.2f} GB and {r['fit'].users} users "
                     f"fit" for r in rows)
    desc = (f"{name} on {with_article(card.name)}, which CUDA reports as "
            f"{memory_bytes / GB:.1f} GB, at {context:,} tokens of context. The weights are paid "
            f"once, whatever the number of users; what is left is shared out to users' KV caches: "
            f"{said}. Activations and the runtime take more in practice, so these are ceilings.")
    c = Canvas(360, height, title=f"Memory of {with_article(card.name)} serving {name}",
               desc=desc)
    c.text(left, 12, f"{name}, {card.name} ({memory_bytes / GB:.1f} GB), {context:,} tokens",
           anchor="start", size="small", weight="bold")
    scale = bar_w / memory_bytes
    for r, row in enumerate(rows):
        label, weights = row["label"], row["weights"]
        per_user, fit = row["per_user"], row["fit"]
        y = top + r * 78
        c.text(left, y + 6, label, anchor="start", size="small")
        y += 14
        c.rect(left, y, bar_w, bar_h, tone="plain", rx=2)
        w = min(bar_w, weights * scale)
        c.rect(left, y, w, bar_h, tone="purple", rx=2)
        c.text(left + w / 2, y + bar_h / 2, "weights", size="small")
        x = left + w
        for _ in range(fit.users):
            c.rect(x, y + 3, per_user * scale, bar_h - 6, tone="accent", rx=1)
            x += per_user * scale
        c.text(left, y + bar_h + 14, f"{weights / GB:.1f} GB once", anchor="start", size="small",
               mono=True)
        c.text(left + bar_w, y + bar_h + 14, f"{fit.users} users × {per_user / GB:.2f} GB",
               anchor="end", size="small", mono=True)
    y = height - 20
    c.rect(left, y, 14, 14, tone="accent", rx=2)
    c.text(left + 18, y + 7, "one user's KV cache", anchor="start", size="small")
    c.rect(180, y, 14, 14, tone="plain", rx=2)
    c.text(198, y + 7, "left over", anchor="start", size="small")
    return c
