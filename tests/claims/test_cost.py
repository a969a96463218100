"""Every qualitative sentence of docs/chapters/cost.md about the work attention does, asserted
over computed values: counted values exactly, and the kernels and rounding of the three ways to
compute it. Its memory and time sentences are in test_cost_memory_time.py (measured claims:
orderings and shapes only). Each test names the sentence it checks.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from backend.compute import attention_cost as w
from backend.reference import attention_cost as ac
from backend.reference.presets import PRESETS

TOP = w.CEILING
N_HEADS = (1, 2, 8, 32)
EPS = {name: torch.finfo(dt).eps for name, dt in w.DTYPES.items()}


def rounding_bound(T: int, dtype: str, max_abs_v: float) -> float:
    """What rounding alone can separate two ways of averaging T values of size at most
    max|v| with weights summing to 1: gamma_T = T u per sum (Higham, Accuracy and Stability of
    Numerical Algorithms, 3.1), for each of the two results. A different result (a wrong scale,
    a missing row) misses by orders of magnitude more at these sizes."""
    return 2 * T * EPS[dtype] * max_abs_v


# a timing lock of each test's own (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("private_timing_lock")


def values(**params):
    """What `{{ value("attention_cost", ...) }}` reads: compute's values and the build's facts."""
    resolved = w.SPEC.resolve(params)
    return {**w.compute(resolved)["values"], **w.facts(resolved)}


# "8,000 → 16,000 → 128,000 tokens is 4× and then 256× the attention work of 8,000."
def test_the_handouts_table_of_work():
    t = values(context_len=16)["table"]
    assert (t["16000"]["work"], t["128000"]["work"]) == (4, 256)


# "At 128,000 tokens one head's scores in bfloat16 are 32.8 GB; a layer of 32 heads needs
# 1,049 GB, about 7 times the 150 GB an H200 reports (sold as 141 GB ...). Stored whole, it cannot fit on any one
# accelerator." And later: "the whole table is several times too big for any one accelerator".
def test_a_layer_of_scores_at_128k_is_about_seven_h200s():
    from backend.compute import kv_cache
    from backend.reference.serving import CARDS

    v = values(context_len=16)
    t = v["table"]["128000"]
    assert f"{t['score_gb']:.1f}" == "32.8" and f"{t['score_gb_32']:,.0f}" == "1,049"
    assert f"{v['h200s_for_128k_layer']:.0f}" == "7" and 6.9 < v["h200s_for_128k_layer"] < 7
    h200 = kv_cache.compute(kv_cache.SPEC.resolve({"memory": "141"}))["values"]["memory_gb"]
    assert f"{h200:.0f}" == "150" and h200 == v["h200_gb"]
    assert CARDS["141"].sold_gb == 141
    assert t["score_bytes_32"] > 3 * max(c.memory_bytes for c in CARDS.values())


# "a decode step scores a single 1 x T row per head"
def test_a_decode_step_scores_one_row():
    from backend.reference.attention import scaled_dot_product_attention

    q = torch.randn(1, 4, 1, 16)                       # one new token's query, 4 heads
    k = v = torch.randn(1, 4, 300, 16)                 # the cache: 300 keys and values
    _, weights = scaled_dot_product_attention(q, k, v)
    assert weights.shape == (1, 4, 1, 300)


# Check yourself: "generates its 1,000th answer token over a 100,000-token prompt ... One row per
# head: 1 x 100,999 scores (the prompt plus the 999 answer tokens before it)"
def test_the_1000th_answer_tokens_step_scores_one_row_of_100999():
    from backend.reference.attention import scaled_dot_product_attention

    prompt, k = 1000, 1000                    # scaled down 100x in the prompt; same arithmetic
    keys = prompt + (k - 1)                   # the step producing answer token k
    q = torch.randn(1, 2, 1, 8)
    kv = torch.randn(1, 2, keys, 8)
    _, weights = scaled_dot_product_attention(q, kv, kv)
    assert weights.shape[-2:] == (1, keys)
    assert 100_000 + (1000 - 1) == 100_999


# "the quadratic term only overtakes the projections at T = 2d" and "at T = d the projections
# still do twice the score work", at every head size and head count of the sliders.
@pytest.mark.parametrize("d_head", range(16, 257, 16))
@pytest.mark.parametrize("h", N_HEADS)
def test_scores_overtake_the_projections_at_twice_the_width(d_head, h):
    d = h * d_head
    assert ac.score_flops(2 * d, d_head, h) == ac.projection_flops(2 * d, d_head, h)
    assert ac.score_flops(2 * d - 1, d_head, h) < ac.projection_flops(2 * d - 1, d_head, h)
    assert ac.score_flops(2 * d + 1, d_head, h) > ac.projection_flops(2 * d + 1, d_head, h)
    assert ac.projection_flops(d, d_head, h) == 2 * ac.score_flops(d, d_head, h)


# "For a model of width 4,096 in which every one of its 32 heads of 128 has its own keys and
# values, the crossover is at 8,192. Llama-3-8B ... lets each group of four query heads share one
# key head and one value head, ... Its projections then cost 2T(2d^2 + 2 d d/4) = 5Td^2, and the
# scores catch up sooner, at T = 1.25 d, which for Llama-3-8B is 5,120."
def test_the_crossover_of_a_llama_3_8b_width():
    cfg = PRESETS["llama-3-8b"]
    d, h, d_head = cfg.d_model, cfg.n_heads, cfg.d_model // cfg.n_heads
    assert (d, h, d_head, h // cfg.n_kv_heads) == (4096, 32, 128, 4)
    v = values(n_heads=32, head_dim=128, context_len=16)
    assert v["crossover_T"] == v["llama_crossover_full_kv"] == 8192 == 2 * d
    T = v["llama_crossover_T"]
    assert T == 5120 == 5 * d // 4
    assert ac.projection_flops(1, d_head, h, 1, cfg.n_kv_heads) == 5 * d * d
    # the counted layer: four matrices of Llama-3-8B's shapes, by PyTorch's FLOP counter
    kv = cfg.n_kv_heads * d_head
    shapes = [(d, d), (d, kv), (d, kv), (d, d)]
    x = torch.empty(1, T, d, device="meta")
    with FlopCounterMode(display=False) as counter:
        for i, o in shapes:
            torch.nn.Linear(i, o, bias=False, device="meta")(x)
    assert counter.get_total_flops() == ac.score_flops(T, d_head, h)


# "Llama-3-8B's gated MLP multiplies each token by three d x 14,336 matrices, four times the
# projections' work ... Counting every pair, they do so at T = 26,624. A causal kernel that skips
# the masked half ... doubles that to T = 53,248." "Below a few tens of thousands of tokens, most
# of a Llama-3-8B layer's arithmetic is not attention's scores."
def test_the_whole_layers_crossover_with_the_mlp_and_the_causal_half():
    cfg = PRESETS["llama-3-8b"]
    d, d_head = cfg.d_model, cfg.d_model // cfg.n_heads
    v = values(context_len=16)
    assert v["llama_d_ff"] == cfg.d_ff == 14336
    mlp = ac.mlp_flops(1, d, cfg.d_ff)
    proj = ac.projection_flops(1, d_head, cfg.n_heads, 1, cfg.n_kv_heads)
    assert 3.9 < mlp / proj < 4.3                                      # "four times"
    x = torch.empty(1, 1, d, device="meta")
    with FlopCounterMode(display=False) as counter:                    # SwiGLU's three matrices
        for i, o in ((d, cfg.d_ff), (d, cfg.d_ff), (cfg.d_ff, d)):
            torch.nn.Linear(i, o, bias=False, device="meta")(x if i == d else
                                                             torch.empty(1, 1, i, device="meta"))
    assert counter.get_total_flops() == mlp
    T, Tc = v["llama_layer_crossover_T"], v["llama_layer_crossover_causal_T"]
    assert (T, Tc) == (26624, 53248)
    def per_token(t, causal=False):
        return ac.score_flops(t, d_head, cfg.n_heads) / t / (2 if causal else 1)
    assert per_token(T - 1) < proj + mlp < per_token(T + 1)
    assert per_token(Tc - 1, True) < proj + mlp < per_token(Tc + 1, True)
    assert 20_000 < T < Tc
    # the first figure's caption: "Scoring every pair, the scores overtake them between 16,384
    # and 32,768 tokens"
    assert 16_384 < T < 32_768


# "send half the tokens, and the score work and the score memory fall to a quarter. The rest of
# the layer's work falls to a half"
def test_trimming_a_prompt_quarters_the_scores_and_halves_the_rest():
    T = 8192
    assert ac.score_flops(T // 2, 128, 32) * 4 == ac.score_flops(T, 128, 32)
    assert ac.score_bytes(T // 2, 32) * 4 == ac.score_bytes(T, 32)
    assert ac.projection_flops(T // 2, 128, 32, 1, 8) * 2 == ac.projection_flops(T, 128, 32, 1, 8)
    assert ac.mlp_flops(T // 2, 4096, 14336) * 2 == ac.mlp_flops(T, 4096, 14336)


# "the widget below reports the kernel the call actually ran" (on this build's CPU, PyTorch's
# flash kernel for 4-D inputs; the math path for 3-D ones)
def test_the_widget_reports_the_kernel_the_fused_call_ran():
    for dtype in w.DTYPES:
        v = values(context_len=64, dtype=dtype)
        assert v["fused_kernel"] == "_scaled_dot_product_flash_attention_for_cpu"
    q = torch.randn(1, 64, 16)
    assert ac.fused_kernel(q, q, q) == "math"
    out = w.compute(w.SPEC.resolve({"context_len": 64}))
    assert "_scaled_dot_product_flash_attention_for_cpu" in out["summary"]
    assert "medians of 5 runs" in out["summary"] and w._medians(1) == "one run"


# "Using it costs as much again: every one of the T^2 weights scales a value vector of length
# d_head, so averaging the values is another T^2 d_head multiply-adds."
def test_both_products_cost_t_squared_d_head():
    T, d_head = 96, 16
    q, k, v = ac.random_qkv(1, 1, T, d_head)
    weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
    with FlopCounterMode(display=False) as first:
        q @ k.transpose(-2, -1)
    with FlopCounterMode(display=False) as second:
        weights @ v
    assert first.get_total_flops() == second.get_total_flops() == 2 * T * T * d_head


# "On a CPU, one of the conditions is a 4-D input ... Pass it (1, T, d) and the same call
# quietly takes PyTorch's plain "math" path, which builds the T x T table." "The book always
# passes 4-D tensors." (Which kernel ran, from PyTorch's profiler.)
def test_the_fused_call_needs_4d_input_on_a_cpu():
    from torch.profiler import profile

    def kernels(*shape):
        q = torch.randn(*shape)
        with profile() as prof:
            ac.fused(q, q, q)
        return {e.name for e in prof.events()}

    flash, math_path = ("aten::_scaled_dot_product_flash_attention_for_cpu",
                        "aten::_scaled_dot_product_attention_math")
    four_d = kernels(1, 1, 256, 64)
    assert flash in four_d and math_path not in four_d
    three_d = kernels(1, 256, 64)
    assert math_path in three_d and flash not in three_d
    assert len(ac.random_qkv(2, 3, 16, 8)[0].shape) == 4
    q, k, v = ac.random_qkv(1, 1, 256, 64)
    assert ac.peak_bytes(ac.fused, q, k, v) < ac.score_bytes(256)          # 4-D: no table
    assert ac.peak_bytes(ac.fused, q[0], k[0], v[0]) > ac.score_bytes(256)  # 3-D: the table


# "at 128,000 tokens the arithmetic of one such layer ... is a fraction of a second on an
# accelerator that does 10^15 a second"
def test_the_128k_layers_arithmetic_is_under_a_second_at_a_petaflop():
    t = values(context_len=16)["table"]["128000"]
    assert t["tflop_32"] * 1e12 == t["flops_32"] < 1e15


# "FlashAttention does the same FLOPs" (check yourself): the blocked loop's products, counted.
def test_the_blocked_loop_does_the_same_products():
    q, k, v = ac.random_qkv(1, 2, 96, 16)
    with FlopCounterMode(display=False) as counter:
        ac.blocked(q, k, v, block=32)
    assert counter.get_total_flops() == ac.score_flops(96, 16, 2)


# "this loop, the explicit path and the fused kernel agree on every output to within float32
# rounding"; "The outputs of the two paths differ by at most ..., float32 rounding."
@pytest.mark.parametrize("T,d_head", [(16, 16), (300, 64), (TOP, 64), (700, 256)])
def test_the_three_ways_agree_to_rounding(T, d_head):
    q, k, v = ac.random_qkv(1, 2, T, d_head)
    reference = ac.eager(q, k, v)
    bound = rounding_bound(T, "float32", v.abs().max().item())
    for out in (ac.fused(q, k, v), ac.blocked(q, k, v)):
        assert (out - reference).abs().max().item() < bound
        assert (out - reference).abs().max().item() < 1e-3 * v.std().item()


@pytest.mark.parametrize("dtype", list(w.DTYPES))
@pytest.mark.parametrize("T", [16, 256, TOP])
def test_the_widgets_difference_is_rounding_in_its_dtype(dtype, T):
    v = values(context_len=T, dtype=dtype)
    assert v["max_abs_diff"] < rounding_bound(T, dtype, v["max_abs_v"])


def test_the_ladder_times_only_points_of_at_least_the_minimum():
    """'at your T and at T/2, T/4 and T/8 (those of at least 16 tokens)': at T = 45 the widget
    times 45 and 22 only."""
    assert values()["min_timed_len"] == w.MIN_T == 16
    at45 = values(context_len=45, batch=16, n_heads=32, head_dim=16)
    assert at45["T"] == 45
    assert sorted({45 // f for f in w.LADDER if 45 // f >= w.MIN_T} | {45}) == [22, 45]
