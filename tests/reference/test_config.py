import dataclasses

import pytest

from backend.reference.config import ModelConfig

BASE = dict(vocab_size=10, d_model=16, n_layers=1, n_heads=4, d_ff=32)


def test_defaults_and_properties():
    c = ModelConfig(**BASE)
    assert c.n_kv_heads == 4 and c.d_head == 4 and c.n_rep == 1
    assert ModelConfig(**BASE, n_kv_heads=1).n_rep == 4  # multi-query attention


def test_frozen():
    c = ModelConfig(**BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.d_model = 8
    assert c.replace(n_kv_heads=2).n_kv_heads == 2


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(d_model=18), "divisible by n_heads"),
        (dict(n_kv_heads=3), "multiple of n_kv_heads"),
        (dict(n_kv_heads=8), "multiple of n_kv_heads"),
        (dict(n_heads=0), "at least 1"),
        (dict(vocab_size=-1), "at least 1"),
        (dict(d_ff=2.5), "integer"),
        (dict(n_layers=True), "integer"),
        (dict(d_model=12, n_heads=4), "even"),
        (dict(rope_theta=0.0), "rope_theta"),
        (dict(norm_eps=-1.0), "norm_eps"),
        (dict(dropout=1.0), "dropout"),
    ],
)
def test_invalid_configs_raise_clear_errors(change, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**{**BASE, **change})


def test_config_from_hf_matches_transformers_llama_config():
    """config_from_hf reads what transformers' own LlamaConfig writes (an independent source of
    the field names), and the count of the result equals transformers' model on the meta device."""
    transformers = pytest.importorskip("transformers")
    import torch

    from backend.reference.config import config_from_hf
    from backend.reference.counting import count_parameters

    hf = transformers.LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=96,
                                  num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                  tie_word_embeddings=True, rope_theta=500000.0)
    cfg = config_from_hf(hf.to_dict())
    assert (cfg.vocab_size, cfg.d_model, cfg.d_ff, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads) == (300, 64, 96, 3, 4, 2)
    assert cfg.tie_embeddings and cfg.rope_theta == 500000.0
    with torch.device("meta"):
        theirs = transformers.LlamaForCausalLM(hf)
    assert count_parameters(cfg).total == sum(p.numel() for p in theirs.parameters())
