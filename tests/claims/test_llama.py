"""Every qualitative sentence of docs/chapters/llama.md, checked over computed values."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from backend.reference.llama_compare import ATTENTION_TOLERANCE, LOGIT_TOLERANCE
from backend.reference.presets import PRESETS
from backend.widgets import REGISTRY

PARITY = REGISTRY["parity"]


def values(**params):
    return PARITY.compute(PARITY.SPEC.resolve(params))["values"]


def test_start_values_identical_bit_for_bit_cache_only_close():
    """'the full-forward logits agree ... identical, bit for bit'; 'cached logits only close'."""
    v = values()
    assert v["max_abs_logit_diff"] == 0.0 and v["max_abs_attention_diff"] == 0.0
    assert 0.0 < v["cached_vs_uncached_diff"] <= LOGIT_TOLERANCE  # 'well inside the tolerance'
    assert v["abs_loss_diff"] <= LOGIT_TOLERANCE  # 'only rounding separates them'


# 'Move any control: more layers, one key/value head, as many as query heads, a tied head, another
# RoPE base, a longer sequence, another seed': each end of each slider the text names.
MOVES = [
    {"n_layers": 1}, {"n_layers": 4}, {"n_kv": 1}, {"n_kv": 8}, {"tied": True},
    {"rope_theta": 100.0}, {"rope_theta": 1_000_000.0}, {"seq_len": 2}, {"seq_len": 64},
    {"seed": 999}, {"n_layers": 1, "d_model": 256, "n_heads": 16, "n_kv": 4, "d_ff": 896, "vocab": 256},
    {"d_model": 16, "n_heads": 1, "n_kv": 1, "d_ff": 8, "vocab": 16},
]


@pytest.mark.parametrize("move", MOVES, ids=[str(m) for m in MOVES])
def test_identical_and_within_tolerance_across_the_controls(move):
    v = values(**move)
    assert v["max_abs_logit_diff"] == 0.0 and v["max_abs_attention_diff"] == 0.0  # 'stay identical'
    assert v["cached_vs_uncached_diff"] <= LOGIT_TOLERANCE  # 'stay below the tolerance'
    assert v["max_abs_padded_logit_diff"] <= LOGIT_TOLERANCE
    assert v["max_abs_attention_diff"] <= ATTENTION_TOLERANCE
    assert v["ok"]


def test_rmsnorm_does_not_centre():
    """'a vector shifted well off zero comes out with a mean far from zero but with rms one'."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    torch.manual_seed(0)
    x = torch.randn(4, 16) + 3.0
    with torch.no_grad():
        y = LlamaRMSNorm(16)(x)
    assert (y.mean(-1) > 0.9).all()
    assert torch.allclose(y.pow(2).mean(-1).sqrt(), torch.ones(4), atol=1e-4)
    assert F.layer_norm(x, (16,)).mean(-1).abs().max() < 1e-5


def test_default_eps_differs_as_stated():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from backend.reference.config import ModelConfig

    assert LlamaRMSNorm(4).variance_epsilon == 1e-6 and LlamaConfig().rms_norm_eps == 1e-6
    assert ModelConfig(vocab_size=8, d_model=8, n_layers=1, n_heads=2, d_ff=8).norm_eps == 1e-5


def test_tying_declared_but_llama_3_8b_does_not_tie():
    from transformers import LlamaForCausalLM

    assert LlamaForCausalLM._tied_weights_keys == {"lm_head.weight": "model.embed_tokens.weight"}
    assert PRESETS["llama-3-8b"].tie_embeddings is False and PRESETS["llama-3.2-1b"].tie_embeddings


def test_silu_is_the_default_activation_and_the_mask_is_built_outside_attention():
    import inspect

    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as ml

    assert LlamaConfig().hidden_act == "silu"
    assert "create_causal_mask" in inspect.getsource(ml.LlamaModel.forward)
    attn = inspect.getsource(ml.LlamaAttention.forward)
    assert "create_causal_mask" not in attn and "ALL_ATTENTION_FUNCTIONS.get_interface" in attn
    assert "slice_logits_to_keep" in inspect.getsource(ml.LlamaForCausalLM.forward)


def test_bad_heads_refused_with_the_rule():
    from backend.widgets.spec import ParamError

    with pytest.raises(ParamError, match="must divide"):
        values(n_heads=8, n_kv=3)
