import torch
import torch.nn.functional as F
from torch import nn

from backend.reference.norms import LayerNorm, RMSNorm


def test_rmsnorm_matches_torch():
    ours = RMSNorm(48, eps=1e-5)
    with torch.no_grad():
        ours.weight.normal_()
    theirs = nn.RMSNorm(48, eps=1e-5)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(3, 5, 48) * 4 + 1
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=0)


def test_layernorm_matches_functional():
    ours = LayerNorm(48, eps=1e-5)
    with torch.no_grad():
        ours.weight.normal_()
        ours.bias.normal_()
    x = torch.randn(3, 5, 48) * 4 + 1
    ref = F.layer_norm(x, (48,), ours.weight, ours.bias, eps=1e-5)
    torch.testing.assert_close(ours(x), ref, atol=1e-6, rtol=1e-6)


def test_rmsnorm_does_not_centre():
    """By hand: x = (1, 7) has RMS sqrt((1 + 49) / 2) = 5, so RMSNorm gives (0.2, 1.4), mean 0.8, not 0;
    a constant row c (c, c, c) becomes (1, 1, 1), where LayerNorm would give zeros."""
    x = torch.tensor([[1.0, 7.0]], dtype=torch.float64)
    torch.testing.assert_close(RMSNorm(2, eps=0.0).double()(x), torch.tensor([[0.2, 1.4]], dtype=torch.float64))
    c = torch.full((1, 3), 4.0, dtype=torch.float64)
    torch.testing.assert_close(RMSNorm(3, eps=0.0).double()(c), torch.ones(1, 3, dtype=torch.float64))


def test_rmsnorm_upcasts_the_reduction_in_bf16():
    x = torch.randn(2, 4096) * 30
    y16 = RMSNorm(4096).to(torch.bfloat16)(x.to(torch.bfloat16))  # a bf16 model: bf16 weights too
    assert y16.dtype == torch.bfloat16
    naive = x.to(torch.bfloat16)
    naive = naive * torch.rsqrt(naive.pow(2).mean(-1, keepdim=True) + 1e-5)  # reduction in bf16
    exact = RMSNorm(4096)(x)
    assert (y16.float() - exact).abs().max() <= (naive.float() - exact).abs().max()


def test_rmsnorm_matches_transformers_llama_rmsnorm_in_bf16():
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    ours = RMSNorm(64).to(torch.bfloat16)
    theirs = LlamaRMSNorm(64, eps=1e-5).to(torch.bfloat16)
    x = (torch.randn(3, 64) * 5 + 2).to(torch.bfloat16)
    assert torch.equal(ours(x), theirs(x))  # exact: the same operations in the same order


def test_no_upcast_and_float64_helpers():
    from backend.reference.norms import rmsnorm_float64, rmsnorm_no_upcast
    x = torch.tensor([[1.0, 7.0]])
    torch.testing.assert_close(rmsnorm_float64(x, eps=0.0), torch.tensor([[0.2, 1.4]], dtype=torch.float64))
    torch.testing.assert_close(rmsnorm_no_upcast(x, torch.ones(2), eps=0.0), torch.tensor([[0.2, 1.4]]))
    # float16 squares overflow above 65504: 300^2 = 90000 becomes inf and the output collapses to 0
    big = torch.full((1, 8), 300.0, dtype=torch.float16)
    assert torch.all(rmsnorm_no_upcast(big, torch.ones(8, dtype=torch.float16)) == 0)
    assert torch.all(RMSNorm(8).half()(big) == 1)


def test_running_sum_in_bf16_stalls():
    """By hand: a bf16 running sum of ones stops at 256, where the spacing becomes 2 and 256 + 1
    rounds back to 256 (ties to even); in float32 it reaches 4096."""
    from backend.reference.norms import running_mean_square
    ones = torch.ones(4096)
    assert running_mean_square(ones, torch.bfloat16) == 256 / 4096
    assert running_mean_square(ones, torch.float32) == 1.0
