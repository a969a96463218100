"""The module tree of Hugging Face's LlamaForCausalLM, drawn from a configuration: the names
`print(model)` shows, and the shape of every weight as (in → out) for the linear layers.

The names are transformers' (`self_attn`, `post_attention_layernorm`, …); the shapes follow the
configuration, so grouped-query attention shows as k_proj and v_proj narrower than q_proj, and a
tied head says so. `tests/diagrams/test_llama_tree.py` checks every label against the modules
transformers itself builds from the same configuration.
"""

from __future__ import annotations

from backend.reference.config import ModelConfig
from backend.reference.presets import get_preset

from .svg import Canvas

NAMES = {"llama-2-7b": "Llama-2-7B", "llama-3-8b": "Llama-3-8B", "llama-3.2-1b": "Llama-3.2-1B",
         "llama-2-70b": "Llama-2-70B"}
ROW, INDENT, X0 = 21, 15, 8


def _n(x: int) -> str:
    return f"{x:,}"


def rows(cfg: ModelConfig) -> list[tuple[int, str, str, str]]:
    """(depth, attribute name, what it is, tone) for each line of the tree, top to bottom."""
    d, dk = cfg.d_model, cfg.d_head
    head = ("tied: embed_tokens" if cfg.tie_embeddings else f"{_n(d)} → {_n(cfg.vocab_size)}")
    return [
        (0, "LlamaForCausalLM", "", "accent"),
        (1, "model", "LlamaModel", "plain"),
        (2, "embed_tokens", f"{_n(cfg.vocab_size)} × {_n(d)}", "plain"),
        (2, "layers", f"{cfg.n_layers} × LlamaDecoderLayer", "plain"),
        (3, "self_attn", "LlamaAttention", "query"),
        (4, "q_proj", f"{_n(d)} → {_n(cfg.n_heads * dk)}", "query"),
        (4, "k_proj", f"{_n(d)} → {_n(cfg.n_kv_heads * dk)}", "key"),
        (4, "v_proj", f"{_n(d)} → {_n(cfg.n_kv_heads * dk)}", "value"),
        (4, "o_proj", f"{_n(cfg.n_heads * dk)} → {_n(d)}", "query"),
        (3, "mlp", "LlamaMLP", "good"),
        (4, "gate_proj", f"{_n(d)} → {_n(cfg.d_ff)}", "good"),
        (4, "up_proj", f"{_n(d)} → {_n(cfg.d_ff)}", "good"),
        (4, "down_proj", f"{_n(cfg.d_ff)} → {_n(d)}", "good"),
        (3, "input_layernorm", f"RMSNorm {_n(d)}", "plain"),
        (3, "post_attention_layernorm", f"RMSNorm {_n(d)}", "plain"),
        (2, "norm", f"RMSNorm {_n(d)}", "plain"),
        (2, "rotary_emb", "cos, sin; no weights", "muted"),
        (1, "lm_head", head, "purple"),
    ]


def draw(preset: str = "llama-3-8b") -> Canvas:
    cfg = get_preset(preset)
    name = NAMES.get(preset, preset)
    tree = rows(cfg)
    desc = (f"The module tree of transformers' LlamaForCausalLM built from {name}'s configuration, "
            "as print(model) lists it, with each weight's shape (linear layers as in → out): "
            + "; ".join(f"{'  ' * dep}{attr}" + (f" ({what})" if what else "")
                        for dep, attr, what, _ in tree[1:]) + ".")
    c = Canvas(360, 12 + ROW * len(tree), title=f"LlamaForCausalLM's modules: {name}", desc=desc)
    last_child_y: dict[int, float] = {}
    for i, (dep, attr, what, tone) in enumerate(tree):
        y = 10 + i * ROW + ROW / 2
        x = X0 + dep * INDENT
        if dep:
            # the elbow from the parent's vertical line
            px = X0 + (dep - 1) * INDENT + 4
            c.line(px, y, x - 2, y, tone="muted", width=1)
            last_child_y[dep] = y
        # the parent's vertical line runs down to its last child: draw it when the next row is
        # shallower than this one's children
        c.rect(x, y - 5, 8, 10, tone=tone, rx=2)
        c.text(x + 12, y, attr, size="small", anchor="start", mono=True,
               weight="bold" if dep <= 1 else None)
        if what:
            c.text(352, y, what, size="small", anchor="end", mono=True)
    # vertical lines: from each parent row down to its last child
    for i, (dep, *_rest) in enumerate(tree):
        last = None
        for j in range(i + 1, len(tree)):
            if tree[j][0] <= dep:
                break
            if tree[j][0] == dep + 1:
                last = j
        if last is not None:
            x = X0 + dep * INDENT + 4
            c.line(x, 10 + i * ROW + ROW / 2 + 5, x, 10 + last * ROW + ROW / 2, tone="muted", width=1)
    return c
