"""One accelerator's memory: the weights are paid once, the KV cache once per user. Drawn from a
model's configuration, the accelerator's size and the context length, once with the model's own
key/value heads and once as plain multi-head attention (one key/value head per query head)."""

from __future__ import annotations

from backend.reference.presets import get_preset
from backend.reference.serving import GB, users_fit, weights_bytes

from .svg import Canvas

BF16 = 2
NAMES = {"llama-3-8b": "Llama-3-8B", "llama-3-70b": "Llama-3-70B", "llama-2-7b": "Llama-2-7B",
         "llama-2-70b": "Llama-2-70B", "llama-3.2-1b": "Llama-3.2-1B"}


def per_user_bytes(n_layers: int, n_kv: int, d_head: int, context: int) -> int:
    """Keys and values, every layer, every key/value head, `context` tokens, bfloat16."""
    return 2 * n_layers * n_kv * d_head * context * BF16


def draw(preset: str = "llama-3-8b", memory_gb: int = 80, context: int = 8192) -> Canvas:
    cfg = get_preset(preset)
    name = NAMES.get(preset, preset)
    memory = memory_gb * GB
    weights = weights_bytes(cfg)
    rows = [(cfg.n_kv_heads, f"{cfg.n_kv_heads} K/V heads (as built)")]
    if cfg.n_kv_heads != cfg.n_heads:
        rows.append((cfg.n_heads, f"{cfg.n_heads} K/V heads (one per query head)"))
    left, bar_w, bar_h, top = 10, 340, 30, 30
    height = top + len(rows) * 78 + 34
    fits = []
    for n_kv, _ in rows:
        per_user = per_user_bytes(cfg.n_layers, n_kv, cfg.d_head, context)
        fits.append((per_user, users_fit(memory, weights, per_user)))
    said = "; ".join(f"with {n_kv} key/value heads each user's cache is {p / GB:.2f} GB and "
                     f"{fit.users} users fit" for (n_kv, _), (p, fit) in zip(rows, fits))
    desc = (f"{name} on a {memory_gb} GB accelerator at {context:,} tokens of context. The "
            f"weights take {weights / GB:.1f} GB once, whatever the number of users; what is left "
            f"is shared out to users' KV caches: {said}. Activations and the runtime take more "
            f"in practice, so these are ceilings.")
    c = Canvas(360, height, title=f"Memory of one {memory_gb} GB accelerator serving {name}",
               desc=desc)
    c.text(left, 12, f"{name}, {memory_gb} GB, {context:,}-token contexts", anchor="start",
           size="small", weight="bold")
    scale = bar_w / memory
    for r, ((n_kv, label), (per_user, fit)) in enumerate(zip(rows, fits)):
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
