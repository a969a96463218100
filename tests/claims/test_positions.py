"""Every qualitative sentence of 'Where order comes from', asserted over what the page computes."""

from __future__ import annotations

import math

import pytest
import torch

from backend.compute import positions_order as wo
from backend.compute import positions_rope as w
from backend.compute import positions_sinusoids as ws
from backend.compute.spec import sweep
from backend.reference import rope

SPEC = w.SPEC  # the RoPE widget, which most of the chapter's numbers come from
THETAS = (100.0, 1000.0, 10000.0, 500000.0, 1_000_000.0, 10_000_000.0)
WIDTHS = [d for d in sweep(SPEC.param("d_head"), 7)]
TABLE_WIDTHS = [d for d in sweep(ws.SPEC.param("d_model"), 7)]


def run(module, **params):
    return module.compute(module.SPEC.resolve({**module.SPEC.defaults(), **params}))


def values(**params):
    """The RoPE widget's values, with the build's facts (the context table) beside them."""
    return {**run(w, **params)["values"], **w.facts(SPEC.resolve({**SPEC.defaults(), **params}))}


def figure(**params):
    return run(w, **params)["figure"]


def order_values(**params):
    return run(wo, **params)["values"]


def table_values(**params):
    return run(ws, **params)["values"]


# -- Intuition and the dog-bites-man table ------------------------------------------------

def test_without_position_dog_is_the_same_vector_in_every_digit():
    v = order_values()
    assert v["order_gap_without"] < 1e-12  # float64 summation order only
    assert [f"{x:.2f}" for x in v["dog"]["without"]] == [f"{x:.2f}" for x in v["dog"]["without_swapped"]]


def test_with_position_the_two_dogs_are_different_inputs():
    assert order_values()["order_gap_with"] > 0.5


def test_a_hundredth_of_the_signal_still_separates_but_by_a_rounding_sized_margin():
    v = order_values()
    assert 0 < v["order_gap_tiny"] < v["order_gap_with"] / 100       # "less than a hundredth"
    assert 0.005 < v["order_gap_tiny"] < 0.05                        # "the size of the rounding"
    # the note: still differ in the second decimal, by about a hundredth of the full gap
    a, b = v["dog"]["tiny"], v["dog"]["tiny_swapped"]
    assert any(round(x, 2) != round(y, 2) for x, y in zip(a, b))
    assert 0.005 < v["order_gap_tiny"] / v["order_gap_with"] < 0.02


# -- Sinusoids ------------------------------------------------------------------------------

def test_first_pair_one_radian_per_step_nearly_eight_turns_by_50_second_ten_times_slower():
    d = 8
    omega = [10000 ** (-2 * i / d) for i in range(d // 2)]
    assert omega[0] == 1.0
    assert 7.5 < 50 * omega[0] / (2 * math.pi) < 8
    assert math.isclose(omega[0] / omega[1], 10.0)


@pytest.mark.parametrize("d", WIDTHS)
def test_added_sinusoids_make_the_score_depend_on_absolute_position(d):
    for m, n in ((3, 1), (40, 2), (1000, 999)):
        v = values(d_head=d, m=m, n=n)
        assert v["additive_dot_spread"] > 0.1
        assert v["additive_dot_spread"] > 100 * v["rope_dot_spread"]


# -- RoPE -----------------------------------------------------------------------------------

def test_the_four_scores_and_norms_agree_to_the_printed_six_decimals():
    rows = [values(m=m, n=n) for m, n in ((3, 1), (10, 8), (100, 98), (5, 3))]
    assert len({f"{r['rope_dot']:.6f}" for r in rows}) == 1
    assert len({f"{r['norm_q_rotated']:.6f}" for r in rows} | {f"{rows[0]['norm_q']:.6f}"}) == 1


def test_float32_rounding_grows_with_position_but_stays_small():
    near, far = values(m=3, n=1), values(m=100003, n=100001)
    assert far["rope_error_fp32"] > 100 * near["rope_error_fp32"]
    assert far["rope_error_fp32"] < 1e-3 * abs(far["rope_dot"])


@pytest.mark.parametrize("d", WIDTHS)
@pytest.mark.parametrize("m", [0, 3, 500, 1999, 20000, 130000])
def test_moving_m_and_n_together_keeps_the_score(d, m):
    for theta in (100.0, 10000.0, 10_000_000.0):
        v = values(d_head=d, m=m, n=max(0, m - 2), rope_theta=theta)
        assert v["rope_dot_spread"] < 5e-4 * v["qk_norms"]  # "up to a few parts in ten thousand"
        assert math.isclose(v["norm_q_rotated"], v["norm_q"], rel_tol=1e-6)


def test_a_larger_base_slows_every_pair_but_the_first_and_keeps_more_pairs_agreeing():
    w_low, w_high = rope.wavelengths(128, 10000.0), rope.wavelengths(128, 500000.0)
    assert bool((w_high[1:] > w_low[1:]).all()) and w_high[0] == w_low[0]
    low = values(d_head=128, max_position=8193)
    high = values(d_head=128, max_position=8193, rope_theta=500000.0)
    assert high["similarity_at_max"] > low["similarity_at_max"]
    assert high["slow_pairs_at_max"] > 4 * low["slow_pairs_at_max"] > 0
    # the agreeing pairs really agree: angle under a quarter turn at that distance
    angles = 2 * math.pi * 8192 / w_low[w_low > 4 * 8192]
    assert bool((angles < math.pi / 2).all())
    # "too few to lift the total far from zero" at 10,000; clearly positive at 500,000
    assert abs(low["similarity_at_max"]) < 0.05 and high["similarity_at_max"] > 0.2


def test_the_additive_spread_is_over_the_tables_four_pairs():
    v = values()
    assert [(p["m"], p["n"]) for p in v["additive_dot_shifted"]] == [(3, 1), (10, 8), (100, 98), (5, 3)]


@pytest.mark.parametrize("m, n, T", [(1000, 3, 64), (131072, 0, 131072), (3, 1, 64)])
def test_the_orange_point_is_the_real_offset_or_absent(m, n, T):
    fig = figure(m=m, n=n, max_position=T)
    markers = [t for t in fig["data"] if t.get("mode") == "markers"]
    if abs(m - n) < T:
        assert markers and markers[0]["x"] == [abs(m - n)]
    else:
        assert not markers
        assert "off this axis" in fig["layout"]["annotations"][0]["text"]


def test_strength_zero_gives_dog_the_same_vector_again():
    v = order_values(strength=0.0)
    assert v["order_gap_with"] < 1e-12


def test_sixteen_times_the_text_is_256_times_the_work():
    ctx = values()["context"]
    assert ctx["128000"] == {"text": 16.0, "work": 256.0}


def test_a_whole_prefill_costs_far_less_than_256_times_and_the_square_takes_over_late():
    """"A whole prompt costs less than that ... The last column counts both, leaving out the
    output layer, for the 32 layers of a model shaped like Llama 3 8B (whose own window is 8,192
    tokens ...) ... sixteen times the text is 47 times the arithmetic, not 256. The square's share
    of that arithmetic is 13% at 8,000 tokens and 71% at 128,000; it overtakes the rest of the
    layer only at 53,248 tokens ... Below that, most of a prompt's arithmetic is the rest of the
    model." (It once said the square "is still what a long prompt costs", of the 256x that
    counts attention alone; then called the column "a Llama-3-8B prefill" past that model's
    window, rounded 2.26x to "2x" and the exact 53,248 = 13 x 4,096 to "about".)"""
    from backend.compute import attention_cost_facts
    from backend.reference import attention_cost
    from backend.reference.presets import PRESETS

    facts = w.facts(SPEC.resolve(SPEC.defaults()))
    work, ctx = facts["prefill"], values()["context"]
    assert work["8000"]["work"] == 1
    for c in ("16000", "128000"):  # more than the text grows, less than the attention work
        assert ctx[c]["text"] < work[c]["work"] < ctx[c]["work"]
    assert work["128000"]["work"] < ctx["128000"]["work"] / 4  # 47, "not 256"
    assert work["8000"]["score_share"] < 0.5 < work["128000"]["score_share"]
    crossover = attention_cost_facts.llama_crossover()["llama_layer_crossover_causal_T"]
    assert 16_000 < crossover < 128_000  # "only at about 53,248 tokens", past the middle row
    for T in (crossover // 2, crossover - 1000, crossover + 1000, 2 * crossover):
        scores, other = w.prefill_flops(T)  # the same crossover, counted over the whole prefill
        assert (scores < other) == (T < crossover)
    assert facts["prefill_layers"] == 32
    cfg = PRESETS[w.PREFILL_MODEL]
    assert facts["prefill_window"] == cfg.max_seq_len < 16_000  # the table's longer rows pass it
    assert crossover == 13 * cfg.d_model  # exact, no "about"
    d_head = cfg.d_model // cfg.n_heads  # no output layer: the layers' matmuls only
    assert w.prefill_flops(8000)[1] == cfg.n_layers * (
        attention_cost.projection_flops(8000, d_head, cfg.n_heads, 1, cfg.n_kv_heads)
        + attention_cost.mlp_flops(8000, cfg.d_model, cfg.d_ff))
    assert f"{work['16000']['work']:.1f}" != f"{work['16000']['work']:.0f}"  # 2.3x, not "2x"


# -- Push on it -----------------------------------------------------------------------------

@pytest.mark.parametrize("d", TABLE_WIDTHS)
def test_left_columns_flicker_right_columns_barely_change(d):
    z = torch.tensor(run(ws, d_model=d)["figure"]["data"][0]["z"])  # (positions, dims)
    steps = (z[1:] - z[:-1]).abs().mean(dim=0)
    assert steps[0] > 10 * steps[-1]


def test_wider_d_makes_the_slow_columns_slower():
    waves = [table_values(d_model=d)["slowest_wavelength"] for d in TABLE_WIDTHS]
    assert waves == sorted(waves) and len(set(waves)) == len(waves)
    # "while the first pair still turns once every 6.283 positions (2 pi)"
    assert {round(table_values(d_model=d)["fastest_wavelength"], 9) for d in TABLE_WIDTHS} == {
        round(2 * math.pi, 9)}


@pytest.mark.parametrize("d", WIDTHS)
def test_raising_theta_delays_the_fall_below_one_half(d):
    halves = [values(d_head=d, max_position=4096, rope_theta=t)["half_distance"] for t in THETAS]
    reached = [h if h is not None else math.inf for h in halves]
    assert reached == sorted(reached)


def test_theta_100_falls_below_one_half_within_a_few_positions():
    assert values(d_head=128, rope_theta=100.0)["half_distance"] <= 10


def test_at_the_default_width_the_fall_comes_latest_at_the_top_of_the_theta_slider():
    """'within 3 positions at θ = 10,000 and never later than 22 at any θ the slider allows (that
    is its top)' (it said 'within 3 whatever θ is': 16 at 500,000, a fresh reader found)."""
    top = values(rope_theta=10240000.0)["half_distance"]
    assert values()["half_distance"] < top
    assert all(values(rope_theta=t)["half_distance"] <= top for t in THETAS)


def test_check_yourself_offsets_agree_to_about_four_digits_not_seven():
    q, k = w._query_key(8)
    near = float(rope.rotate(q, 3) @ rope.rotate(k, 1))
    far = float(rope.rotate(q, 100003) @ rope.rotate(k, 100001))
    rel = abs(near - far) / abs(near)
    assert 1e-6 < rel < 1e-3


def test_exercise_3_answer_4_pairs():
    assert int((rope.wavelengths(128, 10000.0) > 4 * 8192).sum()) == 4
    assert values(d_head=128, max_position=8193)["slow_pairs_at_max"] == 4


# -- The widget's headline --------------------------------------------------------------------

@pytest.mark.parametrize("params", [{}, {"d_head": 128, "max_position": 4096},
                                    {"d_head": 128, "rope_theta": 100.0}])
def test_the_headline_reports_the_first_fall_below_one_half_not_the_last_position(params):
    out = run(w, **params)
    v = out["values"]
    assert f"first less than half as similar to its query {v['half_distance']:,} positions" in out["summary"]
    assert f"{v['similarity_at_max']:.2f} similar" not in out["summary"]


def test_at_the_default_width_the_last_position_is_an_aliasing_coincidence():
    # width 8: the curve dips below 1/2 within a few positions and swings back near 1 at 63,
    # because 63 is close to 20 pi (cos 63 = 0.985): the value at the far end says nothing of reach
    v = values()
    assert v["half_distance"] <= 5 and v["similarity_at_max"] > 0.9
    assert math.cos(63) > 0.98


# -- The sqrt(d) factor, learned positions, the comparison table -----------------------------

def test_the_books_experiment_adds_the_positions_to_the_raw_vectors_and_pe_stays_in_minus_one_one():
    from backend.reference import order, sinusoidal
    x = order.embed(wo.SENTENCE)
    pe = sinusoidal.sinusoidal_encoding(3, 4).double()
    assert torch.allclose(order.add_positions(x, 1.0) - x, pe)           # no sqrt(d) factor
    assert torch.allclose(order.add_positions(x, 0.5) - x, 0.5 * pe)     # strength scales the ratio
    big = sinusoidal.sinusoidal_encoding(2048, 512)
    assert float(big.abs().max()) <= 1.0


def test_minilms_learned_table_has_one_row_per_position_and_no_row_past_it():
    from backend.compute import attention_map as am
    info = am.compute(am.SPEC.resolve({**am.SPEC.defaults(), "model": "minilm"}))["values"]["model_info"]
    model, _ = am._hf(str(am.minilm_dir()))
    assert info["position_table"] == list(model.embeddings.position_embeddings.weight.shape)
    rows = info["position_table"][0]
    assert rows == model.config.max_position_embeddings
    assert info["position_table"][1] == model.config.hidden_size
    with pytest.raises(RuntimeError):  # one position past the table: no row to look up
        model(input_ids=torch.ones(1, rows + 1, dtype=torch.long))
    # the book's decoder (RoPE) has no such table
    assert am.compute(am.SPEC.resolve(am.SPEC.defaults()))["values"]["model_info"].get("position_table") is None


def test_sinusoids_have_a_vector_for_every_position_past_any_training_length():
    from backend.reference import sinusoidal
    pe = sinusoidal.sinusoidal_at(torch.tensor([100_000, 100_001]), 64)
    assert torch.isfinite(pe).all() and not torch.equal(pe[0], pe[1])


def test_exercise_2_rotating_q_only_loses_the_keys_position():
    q, k = w._query_key(8)
    for m in (3, 40):
        scores = [float(rope.rotate(q, m) @ k) for n in (0, 1, 57)]   # k never rotated: n unused
        assert scores == [float(rope.rotate(q, m) @ rope.rotate(k, 0))] * 3
    assert float(rope.rotate(q, 3) @ k) != float(rope.rotate(q, 40) @ k)


# -- The notes on the sources ------------------------------------------------------------------

def test_the_practice_scripts_dog_vectors_reproduce_its_digits_and_its_try():
    from backend.reference import order
    vecs = {"dog": (2.0, 0.3, 0.5, 0.0), "bites": (0.4, 2.2, 0.3, 0.0), "man": (1.8, 0.4, 1.9, 0.0)}

    def script_pe(T):  # the script's [sin p, cos p, sin p/10, cos p/10]
        return torch.tensor([[math.sin(p), math.cos(p), math.sin(p / 10), math.cos(p / 10)]
                             for p in range(T)], dtype=torch.float64)

    def dog(words, s):
        x = torch.tensor([vecs[x] for x in words], dtype=torch.float64)
        if s is not None:
            x = x + s * script_pe(3)
        return order.self_attend(x)[words.index("dog")]

    a, b = dog(wo.SENTENCE, None), dog(wo.SWAPPED, None)
    assert [f"{v:.2f}" for v in a] == ["1.74", "0.55", "1.16", "0.00"] == [f"{v:.2f}" for v in b]
    a, b = dog(wo.SENTENCE, 0.01), dog(wo.SWAPPED, 0.01)
    assert f"{float((a - b).abs().max()):.3f}" == "0.003"
    assert [f"{v:.2f}" for v in a] == [f"{v:.2f}" for v in b]          # "identical at two decimals"
    # p/10 is the d = 8 formula's second pair; the d = 4 formula's is p/100
    assert math.isclose(10000 ** (-2 / 8), 1 / 10) and math.isclose(10000 ** (-2 / 4), 1 / 100)
    v = order_values()
    assert any(f"{x:.2f}" != f"{y:.2f}" for x, y in zip(v["dog"]["tiny"], v["dog"]["tiny_swapped"]))


def test_handout_000s_rope_box_reproduces_from_the_seed_0_stream():
    torch.manual_seed(0)
    torch.randn(10000, 64), torch.randn(10000, 64), torch.randn(8, 64), torch.randn(64)
    q, k = torch.randn(8), torch.randn(8)
    for m, n in ((3, 1), (10, 8), (100, 98), (5, 3)):
        assert f"{float(rope.rotate(q, m) @ rope.rotate(k, n)):.6f}" == "0.142312"
    assert f"{float(q.norm()):.6f}" == "1.821554"


def test_why_the_2017_input_is_scaled_by_root_d():
    """'an output layer's weights start small: at d = 512, drawn as PyTorch's nn.Linear draws
    them, the entries have an RMS of 0.025, so a word would enter 0.036 times as loud as its
    position, drowned by it; times sqrt(d) = 22.6 it is 0.81 times as loud, about even. A table
    started as nn.Embedding starts its own (an RMS of 1.00) needs no factor: it is already 1.42
    times as loud, and sqrt(d) would make it 32 times.'"""
    import torch

    from backend.compute.enc_dec_masks import input_scale

    s = input_scale()
    d = s["d_model"]
    assert d == 512 and abs(s["pe_rms"] - 2 ** -0.5) < 1e-6
    # the small start is nn.Linear's own: PyTorch draws its weight uniform in +-1/sqrt(fan_in)
    linear = torch.nn.Linear(d, 4096)
    assert abs(float(linear.weight.pow(2).mean().sqrt()) / s["small_rms"] - 1) < 0.05
    assert abs(s["small_rms"] * (3 * d) ** 0.5 - 1) < 0.05
    assert s["small_ratio_unscaled"] < 0.1                  # drowned
    assert 0.5 < s["small_ratio_scaled"] < 2                # about even
    assert s["ratio_unscaled"] > 1 and s["ratio_scaled"] > 20
    assert (f"{s['small_rms']:.3f}", f"{s['small_ratio_unscaled']:.3f}", f"{s['small_ratio_scaled']:.2f}",
            f"{s['ratio_unscaled']:.2f}", f"{s['ratio_scaled']:.0f}") == ("0.025", "0.036", "0.81", "1.42", "32")


# -- One widget per lesson (Part I review K4) ---------------------------------------------------

WIDGETS = (wo, ws, w)


def test_each_lesson_has_its_own_widget_and_its_own_width():
    """The chapter's one widget had seven controls and eleven outputs for three lessons, and one
    'width d' slider meant d_model for the table and the head width for RoPE. Now: dog bites man
    has only its strength, the table its model width, RoPE its own head width."""
    names = {m.SPEC.name: [p.name for p in m.SPEC.params] for m in WIDGETS}
    assert names == {"positions_order": ["strength"],
                     "positions_sinusoids": ["d_model", "max_position"],
                     "positions_rope": ["d_head", "max_position", "m", "n", "rope_theta"]}
    assert ws.SPEC.param("d_model").label == "model width d"
    assert w.SPEC.param("d_head").label == "head width"
    assert all(len(m.SPEC.outputs) <= 7 for m in WIDGETS)


def test_output_labels_are_plain_words():
    """'spread of q·k over (m+s, n+s), s = 0, 7, 97, 2: RoPE' was a label no student could
    decode; the shifts now live in the table's caption, in words."""
    for m in WIDGETS:
        for o in m.SPEC.outputs:
            assert "s =" not in o.label and "+s" not in o.label.replace(" ", ""), o.label
    caption = run(w)["table"]["caption"]
    assert "moved along the sequence by 0, 7, 97 and 2 positions" in caption
    assert tuple(w.SHIFTS) == (0, 7, 97, 2)


def _significant(number: str) -> int:
    digits = number.replace(",", "").lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(digits)


@pytest.mark.parametrize("module", WIDGETS, ids=lambda m: m.SPEC.name)
def test_summaries_give_three_or_four_significant_figures_never_raw(module):
    """'q·k is -2.278603 at (m, n) = (3, 1)': the summary printed six decimals. Every number
    with a fractional part in a summary now has at most four significant figures (whole counts
    of positions, pairs and θ are exact and stay whole)."""
    import re

    for point in module.SPEC.bake_points():
        summary = module.compute(module.SPEC.resolve(point))["summary"]
        for number in re.findall(r"-?\d[\d,]*\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+", summary):
            assert _significant(number) <= 4, (point, number, summary)


def test_old_links_to_the_one_widget_open_the_rope_widget():
    """A link shared before the split (`?positions.rope_theta=500000#widget-positions`) names
    the instance key `positions`: the RoPE widget's block on the page takes that key, and its
    controls keep the old names that link could carry (all but the old width, now two)."""
    from pathlib import Path

    import yaml

    from widgets.build import macros

    text = (Path(__file__).resolve().parents[2] / "docs/chapters/positions.md").read_text()
    blocks = [yaml.safe_load(f.body) for f in macros.fences(text) if f.lang == "widget"]
    assert [b["name"] for b in blocks] == ["positions_order", "positions_sinusoids", "positions_rope"]
    rope_block = blocks[2]
    assert rope_block.get("id") == "positions"
    assert {"max_position", "m", "n", "rope_theta"} <= {p.name for p in w.SPEC.params}
