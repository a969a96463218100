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


def test_plain_mlp_without_bias_is_two_matrices_and_matches_the_handout_ffn():
    """004 §9.4's PoswiseFFN is fc2(relu(fc1 x)); our MLP(bias=True) is the same function."""
    plain = MLP(CFG, bias=False)
    assert sum(p.numel() for p in plain.parameters()) == 2 * 32 * 88
    ours = MLP(CFG)
    x = torch.randn(2, 5, 32)
    by_hand = torch.relu(x @ ours.fc1.weight.T + ours.fc1.bias) @ ours.fc2.weight.T + ours.fc2.bias
    torch.testing.assert_close(ours(x), by_hand)


def test_mlp_works_per_position():
    """Changing one position's input changes only that position's output."""
    m = SwiGLU(CFG)
    x = torch.randn(1, 6, 32)
    y = m(x)
    x2 = x.clone()
    x2[0, 2] += 1.0
    y2 = m(x2)
    changed = (y2 - y).abs().amax(-1)[0]
    assert changed[2] > 0 and torch.all(changed[torch.arange(6) != 2] == 0)


def test_gated_width_for_equal_params():
    from backend.reference.mlp import gated_width_for_equal_params
    assert gated_width_for_equal_params(4 * 4096) * 3 == 2 * 4 * 4096  # 3 d w = 2 d (4d)
