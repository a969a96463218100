import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaMLP

from backend.reference.config import ModelConfig
from backend.reference.mlp import MLP, SwiGLU, swiglu_hidden_size

CFG = ModelConfig(vocab_size=10, d_model=32, n_layers=1, n_heads=4, d_ff=88)


def test_swiglu_matches_llama_mlp():
    ours = SwiGLU(CFG)
    theirs = LlamaMLP(LlamaConfig(hidden_size=32, intermediate_size=88))
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(2, 5, 32)
    torch.testing.assert_close(ours(x), theirs(x), atol=0, rtol=0)


def test_parameter_counts():
    assert sum(p.numel() for p in SwiGLU(CFG).parameters()) == 3 * 32 * 88
    assert sum(p.numel() for p in MLP(CFG).parameters()) == 2 * 32 * 88 + 88 + 32


def test_llama_d_ff_rule():
    assert swiglu_hidden_size(4096) == 11008  # Llama-2-7B
    assert swiglu_hidden_size(5120) == 13824  # Llama-2-13B
    assert swiglu_hidden_size(8192, multiple_of=4096, ffn_dim_multiplier=1.3) == 28672  # Llama-2-70B
    assert swiglu_hidden_size(4096, multiple_of=1024, ffn_dim_multiplier=1.3) == 14336  # Llama-3-8B
