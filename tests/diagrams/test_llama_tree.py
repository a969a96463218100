"""LlamaForCausalLM's module tree, drawn from a configuration: every name and shape is the one
transformers builds from the same configuration."""

from __future__ import annotations

import pytest
import torch

from backend.diagrams import llama_tree
from backend.reference.llama_compare import hf_config
from backend.reference.presets import get_preset


def _hf_model(preset):
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        return LlamaForCausalLM(hf_config(get_preset(preset)))


def test_grouped_query_attention_and_tying_change_the_picture():
    l3 = llama_tree.draw("llama-3-8b").texts()
    l2 = llama_tree.draw("llama-2-7b").texts()
    small = llama_tree.draw("llama-3.2-1b").texts()
    assert "4,096 → 1,024" in l3 and "4,096 → 1,024" not in l2      # 8 K/V heads against 32
    assert "32 × LlamaDecoderLayer" in l3 and "16 × LlamaDecoderLayer" in small
    assert "tied: embed_tokens" in small and "tied: embed_tokens" not in l3


@pytest.mark.parametrize("preset", ["llama-3-8b", "llama-2-7b", "llama-3.2-1b"])
def test_every_label_is_transformers_own_module(preset):
    model = _hf_model(preset)
    modules = dict(model.named_modules())
    cfg = get_preset(preset)
    for _depth, attr, what, _ in llama_tree.rows(cfg)[1:]:
        path = {"model": "model", "lm_head": "lm_head", "embed_tokens": "model.embed_tokens",
                "layers": "model.layers", "norm": "model.norm", "rotary_emb": "model.rotary_emb"}.get(attr)
        if path is None:
            sub = "self_attn." if attr.endswith("_proj") and attr[0] in "qkvo" else \
                "mlp." if attr.endswith("_proj") else ""
            path = f"model.layers.0.{sub}{attr}"
        module = modules[path]
        if isinstance(module, torch.nn.Linear):
            assert what == f"{module.in_features:,} → {module.out_features:,}" or (
                attr == "lm_head" and what == "tied: embed_tokens")
        elif isinstance(module, torch.nn.Embedding):
            assert what == f"{module.num_embeddings:,} × {module.embedding_dim:,}"
        elif type(module).__name__ == "LlamaRMSNorm":
            assert what == f"RMSNorm {module.weight.shape[0]:,}"
        elif attr == "layers":
            assert what == f"{len(module)} × LlamaDecoderLayer"
        elif attr == "rotary_emb":
            assert not list(module.parameters())   # cos and sin tables, no weights
    if cfg.tie_embeddings:
        assert model.lm_head.weight is model.model.embed_tokens.weight
