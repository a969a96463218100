"""Every qualitative sentence of docs/chapters/block.md, checked on computed values."""

import pytest

from backend.widgets import mlp, rmsnorm


def run(module, **params):
    return module.compute(module.SPEC.resolve(params))["values"]


def test_gated_has_three_halves_the_plain_count_everywhere():
    """'at any width, three matrices cost half as much again as two'"""
    for d in (64, 512, 4096, 16384):
        for f in (64, 2048, 14336, 65536):
            v = run(mlp, d_model=d, d_ff=f)
            assert 2 * v["params_gated"] == 3 * v["params_plain"]


def test_two_thirds_rule_survives_for_llama2_not_llama3():
    """'2/3 x 4d lands on Llama-2-7B after rounding; Llama-3-8B's 14,336 is 3.5 d, which needs
    the 1.3 multiplier and rounding to 1,024'"""
    v = run(mlp)
    assert v["two_thirds_4d_4096"] < v["l2_7b_d_ff"] < v["two_thirds_4d_4096"] + 256
    assert abs(v["l3_8b_d_ff"] - v["two_thirds_4d_4096"]) > 3000  # not 'approximately'
    assert v["l3_8b_ratio"] == 3.5
    assert v["meta_rule_l3_8b_no_multiplier"] != 14336


def test_mlp_shares():
    """'about two thirds of Llama-2-7B and of the 2017 block; more in Llama-3-8B, whose shared
    keys and values shrink attention'"""
    v = run(mlp)
    assert 0.62 < v["l2_7b_mlp_share_model"] < 0.70
    assert 0.64 < v["base_mlp_share_block"] < 0.69
    assert v["l3_8b_mlp_share_block"] > v["l2_7b_mlp_share_block"] + 0.1
    assert v["l3_8b_mlp_share_model"] > 0.7 - 0.005


def test_share_grows_with_d_ff_and_gated_above_plain():
    """'widen d_ff and the MLP's share climbs; the gated MLP's share is above the plain one's'"""
    shares = [run(mlp, d_ff=f)["mlp_share"] for f in (1024, 4096, 11008, 14336, 32768, 65536)]
    assert shares == sorted(shares)
    for f in (64, 4096, 65536):
        v = run(mlp, d_ff=f)
        assert v["mlp_share_gated"] > v["mlp_share_plain"]


def test_residual_gradients():
    """'without the residual nothing reaches layer 0; with a norm and no residual it explodes;
    pre-norm stays within a factor of two of the top'"""
    v = run(mlp)
    assert v["grad_layer0_plain"] == 0.0
    assert v["grad_layer0_plain_norm"] > 1000
    assert 0.5 < v["grad_layer0_pre_norm"] < 2
    assert 0.5 < v["grad_layer0_post_norm"] < 2


def test_rmsnorm_does_not_centre_across_offsets():
    """'RMSNorm leaves a mean of offset/sqrt(offset^2 + scale^2); LayerNorm's is 0; both RMS 1'"""
    for off in (-20.0, 0.0, 1.0, 3.0, 10.0, 100.0):
        v = run(rmsnorm, offset=off, dtype="float32")
        assert v["mean_after"] == pytest.approx(v["mean_theory"], abs=0.02)
        assert abs(v["layernorm_mean_after"]) < 1e-6
        assert v["rms_after"] == pytest.approx(1, abs=1e-3)


def test_upcast_reaches_the_rounding_floor_and_no_upcast_does_not():
    """'with the upcast the error is what rounding the exact answer costs; without it, larger'"""
    for dtype in ("bfloat16", "float16"):
        for off in (0.0, 3.0, 100.0):
            v = run(rmsnorm, offset=off, dtype=dtype)
            assert v["error_upcast"] <= v["error_floor"] + 1e-6  # float32 intermediates: ~1e-7
            assert v["error_no_upcast"] > 1.1 * v["error_floor"]


def test_float16_overflow_and_bf16_running_sum():
    """'at offset 300 in float16 the squares overflow and the no-upcast output is wrong by
    about 1 (all zeros); a bf16 running sum stalls far below the true mean square'"""
    v = run(rmsnorm, offset=300.0, dtype="float16")
    assert v["squares_overflow"] and v["error_no_upcast"] > 0.99
    assert v["error_upcast"] < 1e-3
    v = run(rmsnorm, offset=300.0, dtype="bfloat16")
    assert not v["squares_overflow"]
    v = run(rmsnorm)
    assert v["mean_square_running"] < 0.5 * v["mean_square_exact"]
    v = run(rmsnorm, dtype="float32")
    assert v["mean_square_running"] == pytest.approx(v["mean_square_exact"], rel=1e-4)


def test_llama3_spends_about_30_percent_more_than_parameter_neutral():
    v = run(mlp)
    assert 1.25 < v["l3_8b_d_ff"] / v["two_thirds_4d_4096"] < 1.35
