"""Parameter counts of real configs, from the real module built on the meta device."""

import pytest
import torch

from backend.reference.config import ModelConfig
from backend.reference.counting import build_on_meta, count_parameters
from backend.reference.model import DecoderLM
from backend.reference.presets import PRESETS, get_preset

EXPECTED = {
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "llama-3-8b": 8_030_261_248,
}


@pytest.mark.parametrize("name", EXPECTED)
def test_meta_counts_of_real_models(name):
    counts = count_parameters(PRESETS[name])
    assert counts.total == EXPECTED[name]
    assert counts.total == counts.embedding + counts.attention + counts.mlp + counts.norms + counts.lm_head


def test_meta_model_allocates_nothing():
    model = build_on_meta(PRESETS["llama-2-70b"])
    assert all(p.is_meta for p in model.parameters())


def test_small_count_equals_materialized_model():
    cfg = ModelConfig(vocab_size=50, d_model=16, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=40)
    assert count_parameters(cfg).total == sum(p.numel() for p in DecoderLM(cfg).parameters())
    tied = count_parameters(cfg.replace(tie_embeddings=True))
    assert tied.lm_head == 0 and tied.total == count_parameters(cfg).total - 50 * 16


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset"):
        get_preset("gpt-5")


def test_meta_forward_gives_shapes_without_memory():
    model = build_on_meta(PRESETS["llama-3-8b"])
    ids = torch.zeros(1, 6, dtype=torch.long, device="meta")
    assert model(ids).logits.shape == (1, 6, 128256)
    assert model(ids, logits_to_keep=1).logits.shape == (1, 1, 128256)


@pytest.mark.parametrize("preset", ["llama-3-8b", "llama-3.2-1b", "llama-2-70b"])
def test_count_by_matrix_matches_transformers_on_meta(preset):
    """An independent count: transformers' own LlamaForCausalLM built on the meta device from a
    LlamaConfig, its parameters summed by module name, part by part (a tied head counted once)."""
    from transformers import LlamaForCausalLM

    from backend.reference.counting import count_by_matrix
    from backend.reference.llama_compare import hf_config
    from backend.reference.presets import get_preset

    cfg = get_preset(preset)
    with torch.device("meta"):
        hf = LlamaForCausalLM(hf_config(cfg))
    theirs = dict.fromkeys(("embedding", "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                            "up_proj", "down_proj", "norms", "lm_head"), 0)
    for name, p in hf.named_parameters():  # a tied lm_head.weight is the embedding: listed once
        leaf = name.split(".")[-2]
        part = ("embedding" if leaf == "embed_tokens" else "lm_head" if leaf == "lm_head"
                else "norms" if "norm" in leaf else leaf)
        theirs[part] += p.numel()
    assert count_by_matrix(cfg) == theirs
    assert sum(theirs.values()) == sum(p.numel() for p in hf.parameters())
