"""backend/reference/attention_cost.py against independent oracles: PyTorch's FLOP counter,
the tensors' own sizes, PyTorch's fused kernel and float64 arithmetic, hand-counted bytes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from backend.reference import attention_cost as ac
from backend.reference.attention import scaled_dot_product_attention


def flops_of(fn, *args) -> int:
    with FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()


@pytest.mark.parametrize("B,h,T,d", [(1, 1, 16, 8), (2, 3, 40, 16), (1, 4, 33, 32)])
def test_score_flops_are_what_pytorchs_counter_counts_for_the_two_products(B, h, T, d):
    q, k, v = ac.random_qkv(B, h, T, d)
    assert ac.score_flops(T, d, h, B) == flops_of(ac.eager, q, k, v)


@pytest.mark.parametrize("B,h,T,d", [(1, 1, 16, 8), (2, 3, 40, 16)])
def test_projection_flops_are_what_pytorchs_counter_counts_for_four_linears(B, h, T, d):
    width = h * d
    layers = [torch.nn.Linear(width, width, bias=False) for _ in range(4)]
    x = torch.randn(B, T, width)
    assert ac.projection_flops(T, d, h, B) == flops_of(lambda x: [f(x) for f in layers], x)


@pytest.mark.parametrize("B,h,kv,T,d", [(1, 4, 1, 16, 8), (2, 8, 2, 40, 16)])
def test_grouped_projection_flops_are_what_the_counter_counts_for_narrow_k_and_v(B, h, kv, T, d):
    width = h * d
    layers = [torch.nn.Linear(width, width, bias=False), torch.nn.Linear(width, kv * d, bias=False),
              torch.nn.Linear(width, kv * d, bias=False), torch.nn.Linear(width, width, bias=False)]
    x = torch.randn(B, T, width)
    assert ac.projection_flops(T, d, h, B, kv) == flops_of(lambda x: [f(x) for f in layers], x)


@pytest.mark.parametrize("h,kv,d", [(1, None, 64), (32, None, 128), (32, 8, 128), (16, 4, 64)])
def test_the_crossover_is_where_scores_and_projections_cost_the_same(h, kv, d):
    T = ac.crossover_context(d, h, kv)
    assert ac.score_flops(T, d, h) == ac.projection_flops(T, d, h, 1, kv)
    assert ac.score_flops(T - 1, d, h) < ac.projection_flops(T - 1, d, h, 1, kv)
    assert ac.score_flops(T + 1, d, h) > ac.projection_flops(T + 1, d, h, 1, kv)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("B,h,T,d", [(1, 1, 256, 64), (2, 3, 128, 16)])
def test_fused_bytes_are_the_tensors_the_fused_kernel_creates(B, h, T, d, dtype):
    q, k, v = ac.random_qkv(B, h, T, d, dtype)
    out = ac.fused(q, k, v)
    lse = B * h * T * torch.finfo(torch.float32).bits // 8   # one float32 per query, by hand
    assert ac.fused_bytes(T, d, h, B, dtype) == out.nbytes + lse
    assert ac.peak_bytes(ac.fused, q, k, v) == ac.fused_bytes(T, d, h, B, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_score_bytes_are_the_size_of_the_weights_the_book_returns(dtype):
    q, k, v = ac.random_qkv(2, 3, 24, 8, dtype)
    _, weights = scaled_dot_product_attention(q, k, v)
    assert ac.score_bytes(24, 3, 2, dtype) == weights.nbytes


def test_bytes_per_pair_by_hand():
    # float32: scores + weights; bfloat16/float16: scores + float32 copy + float32 weights
    assert ac.eager_bytes_per_score(torch.float32) == 4 + 4
    assert ac.eager_bytes_per_score(torch.bfloat16) == 2 + 4 + 4
    assert ac.eager_bytes_per_score(torch.float16) == 2 + 4 + 4
    assert ac.eager_bytes_per_score(torch.float64) == 8 + 8


def test_live_bytes_counts_new_storages_ignores_views_and_frees_on_last_reference():
    base = torch.ones(1000)                     # made before: not counted
    with ac.LiveBytes() as counter:
        a = base * 2                            # 4,000 bytes
        b = a + 1                               # 4,000 more
        view = a[:10]                           # a view: nothing new
        del a                                   # still viewed: stays alive
        assert counter.live == 8000
        del view                                # last reference: freed
        assert counter.live == 4000
        c = b.double()                          # 8,000 bytes
        assert counter.peak == 12000
        del b, c
    assert counter.live == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("T", [64, 200])
def test_explicit_peak_is_the_working_set_plus_the_output(dtype, T):
    """By hand: the peak holds the T x T working set (8 or 10 bytes per pair), and at most the
    output besides; never less than the working set."""
    B, h, d = 2, 2, 16
    q, k, v = ac.random_qkv(B, h, T, d, dtype)
    peak = ac.peak_bytes(ac.eager, q, k, v)
    out_bytes = B * h * T * d * dtype.itemsize
    assert ac.eager_bytes(T, h, B, dtype) <= peak <= ac.eager_bytes(T, h, B, dtype) + out_bytes


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_peak_is_the_output_and_one_float_per_query(dtype):
    B, h, T, d = 2, 2, 256, 16
    q, k, v = ac.random_qkv(B, h, T, d, dtype)
    peak = ac.peak_bytes(ac.fused, q, k, v)
    assert peak == B * h * T * d * dtype.itemsize + B * h * T * 4   # output + logsumexp
    assert peak < ac.score_bytes(T, h, B, dtype)


@pytest.mark.parametrize("budget,h,B,dtype", [(2 ** 20, 1, 1, torch.float32),
                                              (10 ** 9, 3, 2, torch.bfloat16),
                                              (int(141e9 / 2), 1, 1, torch.float32)])
def test_largest_context_is_the_last_T_whose_working_set_fits(budget, h, B, dtype):
    T = ac.largest_context(budget, h, B, dtype)
    assert ac.eager_bytes(T, h, B, dtype) <= budget < ac.eager_bytes(T + 1, h, B, dtype)


@pytest.mark.parametrize("T,block", [(1, 4), (37, 8), (128, 128), (300, 64)])
def test_blocked_explicit_and_fused_give_the_float64_answer(T, block):
    q, k, v = ac.random_qkv(2, 3, T, 16)
    exact = F.softmax(q.double() @ k.double().transpose(-2, -1) / 4.0, dim=-1) @ v.double()
    for out in (ac.blocked(q, k, v, block), ac.eager(q, k, v), ac.fused(q, k, v)):
        assert out.shape == (2, 3, T, 16)
        torch.testing.assert_close(out.double(), exact, rtol=1e-5, atol=1e-6)


def test_blocked_memory_grows_with_T_not_T_squared():
    """Its peak is a few (T, block) tensors: linear in T at a fixed block, and below one score
    matrix once T is several blocks long."""
    block = 64

    def peak(T):
        q, k, v = ac.random_qkv(1, 1, T, 16)
        return ac.peak_bytes(lambda *a: ac.blocked(*a, block=block), q, k, v)

    assert peak(1024) < ac.score_bytes(1024)
    assert peak(2048) < 2.2 * peak(1024)        # T squared would be 4 times


def test_time_paths_alternates_and_keeps_the_repeats_after_warmup():
    calls = []
    q = torch.zeros(1)
    runs = ac.time_paths([lambda x: calls.append("a"), lambda x: calls.append("b")], (q,),
                         repeats=3, warmup=2)
    assert calls == ["a", "b"] * 5
    assert [len(r.ms) for r in runs] == [3, 3]
    assert all(t >= 0 for r in runs for t in r.ms)
    assert runs[0].fastest <= runs[0].median <= runs[0].slowest
