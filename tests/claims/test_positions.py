"""Every qualitative sentence of 'Where order comes from', asserted over what the page computes."""

from __future__ import annotations

import math

import pytest
import torch

from backend.compute import positions_order as wo
from backend.compute import positions_rope as w
from backend.compute import positions_sinusoids as ws
from backend.compute.spec import sweep
from backend.reference import rope, sinusoidal

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


def test_dim_3_is_blank_in_every_word_yet_does_not_tell_the_orders_apart():
    """'dim 3 is 0 in every word ... with the sinusoids added it reads 1.00 in both sentences:
    cos(t/100) barely leaves 1 over positions 0 to 2. The order shows in dims 0 and 1.'"""
    v = order_values()
    assert v["dog"]["without"][3] == 0 and v["dog"]["without_swapped"][3] == 0
    a, b = v["dog"]["with"], v["dog"]["with_swapped"]
    assert f"{a[3]:.2f}" == f"{b[3]:.2f}" == "1.00"
    pe = sinusoidal.sinusoidal_encoding(3, 4)
    assert torch.allclose(pe[:, 3], torch.cos(torch.arange(3.0) / 100), atol=1e-6)
    gaps = [abs(x - y) for x, y in zip(a, b)]
    assert sorted(range(4), key=lambda i: -gaps[i])[:2] == [1, 0]
    assert pe[1, 0].item() == pytest.approx(math.sin(1.0), abs=1e-6)  # one radian per position
    assert "barely leaves 1 over positions 0 to 2" in CHAPTER.read_text()


def test_the_two_gap_readouts_read_alike_and_the_summary_agrees():
    """At strength 0 both readouts are the same computation: they must print the same (".3f"
    showed 0.000 beside 5.6e-17), and the summary quotes the readout's own digits (it said
    6e-17)."""
    fmts = {o.name: o.fmt for o in wo.SPEC.outputs}
    assert fmts["order_gap_without"] == fmts["order_gap_with"]
    out = run(wo, strength=0.0)
    v = out["values"]
    shown = [format(v[k], fmts[k]) for k in ("order_gap_without", "order_gap_with")]
    assert shown[0] == shown[1] and shown[0] in out["summary"]


def test_a_hundredth_of_the_signal_still_separates_but_by_a_rounding_sized_margin():
    v = order_values()
    assert 0 < v["order_gap_tiny"] < v["order_gap_with"] / 100       # "less than a hundredth"
    # "about one unit in the last digit the table prints" (two decimals: 0.01); it was "the size
    # of the rounding", which is 0.005 at most, and the gap is larger
    assert 0.5 * 0.01 < v["order_gap_tiny"] < 2 * 0.01
    assert "size of the\nrounding" not in CHAPTER.read_text()
    assert "about one unit in\nthe last digit the table above prints" in CHAPTER.read_text()
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
        v = values(d_head=d, m=m, n=n, max_position=1024)
        assert v["additive_dot_spread"] > 0.1
        assert v["additive_dot_spread"] > 100 * v["rope_dot_spread"]


# -- RoPE -----------------------------------------------------------------------------------

def test_the_four_scores_and_norms_agree_to_the_printed_six_decimals():
    rows = [values(m=m, n=n, max_position=128) for m, n in ((3, 1), (10, 8), (100, 98), (5, 3))]
    assert len({f"{r['rope_dot']:.6f}" for r in rows}) == 1
    assert len({f"{r['norm_q_rotated']:.6f}" for r in rows} | {f"{rows[0]['norm_q']:.6f}"}) == 1


def test_float32_rounding_grows_with_position_but_stays_small():
    near, far = values(m=3, n=1), values(m=100003, n=100001, max_position=131072)
    assert far["rope_error_fp32"] > 100 * near["rope_error_fp32"]
    assert far["rope_error_fp32"] < 1e-3 * abs(far["rope_dot"])


@pytest.mark.parametrize("d", WIDTHS)
@pytest.mark.parametrize("m", [0, 3, 500, 1999, 20000, 130000])
def test_moving_m_and_n_together_keeps_the_score(d, m):
    for theta in (100.0, 10000.0, 10_000_000.0):
        v = values(d_head=d, m=m, n=max(0, m - 2), rope_theta=theta, max_position=131072)
        assert v["rope_dot_spread"] < 5e-4 * v["qk_norms"]  # "the score stays put"
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


def test_the_far_scores_agree_in_three_significant_digits():
    """'agree to three significant figures, not seven' (was 'about four': rounded to four they
    differ, -2.279 against -2.278)."""
    near, far = values(m=3, n=1)["rope_dot"], values(m=100003, n=100001, max_position=131072)["rope_dot"]
    assert f"{near:.3g}" == f"{far:.3g}" and f"{near:.4g}" != f"{far:.4g}"
    assert "agree to three significant figures, not seven" in CHAPTER.read_text()


def test_the_sinusoid_tables_caption_lists_only_drawn_positions():
    for T in (8, 50, 51, 64):
        out = run(ws, max_position=T)
        listed = [r[0] for r in out["table"]["rows"]]
        assert listed == [p for p in (0, 1, 2, 50) if p < T]
        assert out["table"]["caption"].startswith(
            f"The first dimensions of positions {', '.join(map(str, listed))} at")


def test_the_fade_bands_texture_is_the_real_turning_dimmed_not_aliasing():
    """'At d = 512 and 131,072 positions the band where the columns fade keeps a busy texture ...
    those columns turn once every few rows, drawn as they are, only dimmed by the averaging, and
    the drawn columns lie too far apart in frequency for their turns to line up.'"""
    T, d = 131072, 512
    fig = run(ws, d_model=d, max_position=T)["figure"]["data"][0]
    z, cols, rows = torch.tensor(fig["z"], dtype=torch.float64), fig["x"], fig["y"]
    block = rows[1] - rows[0]
    middle = torch.tensor(rows, dtype=torch.float64) + (block - 1) / 2
    band = [j for j in range(len(cols)) if 0.05 < float(z[:, j].abs().max()) < 0.9]
    assert len(band) >= 5                                       # a band, not a column or two
    for j in band:
        c = cols[j]
        w = 10000 ** (-(c - c % 2) / d)
        per_turn = 2 * math.pi / w / block                      # rows per turn
        assert 2.5 < per_turn < 20                              # "once every few rows"
        true = torch.sin(w * middle) if c % 2 == 0 else torch.cos(w * middle)
        # drawn as it is: the row values follow the real sinusoid, only scaled down
        assert float(torch.corrcoef(torch.stack((z[:, j], true)))[0, 1]) > 0.99
    # neighbouring drawn columns differ in frequency by more than a tenth: no common rhythm
    assert cols[1] - cols[0] > 2 and 10000 ** ((cols[1] - cols[0]) / d) > 1.1
    assert "That is no false pattern" in CHAPTER.read_text()


def test_at_the_longest_sequence_the_fall_is_a_sliver_and_the_point_can_sit_off_the_line():
    """'The axis is linear, so at the longest sequences the first distances, where the curve
    falls, fill only a sliver at its left edge ..., and the orange point, an exact value, need
    not sit on the line of means beside it.'"""
    out = run(w, m=131071, n=0, max_position=131072)
    fig, v = out["figure"], out["values"]
    assert fig["layout"]["xaxis"].get("type", "linear") == "linear"
    x, y = fig["data"][0]["x"], fig["data"][0]["y"]
    exact = [d for d in x if d == int(d) and d < w.CURVE_POINTS // 2]
    assert len(exact) == w.CURVE_POINTS // 2 and max(exact) < 0.01 * max(x)   # a sliver
    assert v["half_distance"] is not None and v["half_distance"] < max(exact)  # the fall is there
    point = fig["data"][-1]
    assert abs(point["y"][0] - y[-1]) > 0.05  # off the nearest mean, the line's last point
    assert "fill only a sliver at its left edge" in CHAPTER.read_text()


def test_the_additive_spread_is_over_the_tables_four_pairs():
    # the prose quotes the spread at sequence length 128, where the shifts fit forwards
    v = values(max_position=128)
    assert [(p["m"], p["n"]) for p in v["additive_dot_shifted"]] == [(3, 1), (10, 8), (100, 98), (5, 3)]


@pytest.mark.parametrize("m, n, T", [(3, 1, 64), (0, 7, 8), (7, 7, 8), (4, 3, 8), (50, 48, 64),
                                     (63, 61, 64), (131071, 131069, 131072), (131071, 0, 131072),
                                     (0, 131071, 131072), (1000, 3, 4096), (3, 1, 128)])
def test_every_shifted_pair_lies_inside_the_sequence(m, n, T):
    """'both inside the sequence (from 0 to its length minus 1)': the pairs the widget scores
    and tabulates, and its spreads are taken over, too (at length 64 it listed (100, 98))."""
    out = run(w, m=m, n=n, max_position=T)
    v, table = out["values"], out["table"]
    pairs = [(p["m"], p["n"]) for p in v["rope_dot_shifted"]]
    assert pairs == [(p["m"], p["n"]) for p in v["additive_dot_shifted"]]
    assert pairs == [(r[0], r[1]) for r in table["rows"]]
    assert pairs[0] == (m, n) and len(set(pairs)) == len(pairs)
    assert all(0 <= a < T and 0 <= b < T and a - b == m - n for a, b in pairs)
    # the caption names the shifts it made, in order, or says the pair cannot move
    shifts = [a - m for a, _ in pairs]
    if len(shifts) > 1:
        assert w.shifts_text(shifts) in table["caption"]
        assert ("backwards" in table["caption"]) == (min(shifts) < 0)
    else:
        assert "cannot move" in table["caption"]
    # a pair with room on a side uses it: the handout's shifts whenever they fit forwards
    if max(m, n) + 97 < T:
        assert shifts == [0, 7, 97, 2]


def test_far_end_of_the_sliders_moves_the_score_only_in_the_fourth_decimal():
    """'at the far end of the sliders ... it reads X against Y at (3, 1)': float32 rounding
    only, visible in the readout's last digit, no more."""
    near, far = values(m=3, n=1), values(m=131071, n=131069, max_position=131072)
    assert 1e-5 < abs(far["rope_dot"] - near["rope_dot"]) < 1e-3
    assert far["rope_dot_spread"] < 1e-5  # the widget's own four pairs at the far end


@pytest.mark.parametrize("m, n, T", [(63, 3, 64), (131071, 0, 131072), (3, 1, 64), (0, 7, 8)])
def test_the_orange_point_is_the_real_offset(m, n, T):
    fig = figure(m=m, n=n, max_position=T)
    markers = [t for t in fig["data"] if t.get("mode") == "markers"]
    assert markers and markers[0]["x"] == [abs(m - n)]
    assert markers[0]["y"] == [round(values(m=m, n=n, max_position=T)["similarity_at_offset"], 4)]


def test_m_and_n_lie_inside_the_sequence_and_follow_its_length():
    """Issue 30's fresh reader: the 'sequence length' control did not bound m and n (m = 1,000 in
    a sequence of 64). Now both end at the length minus 1, in the spec (the API refuses more, in
    words naming the length) and on the page (the same Limit data: the sliders' tops follow)."""
    from backend.compute.spec import ParamError

    for name in ("m", "n"):
        p = SPEC.param(name)
        for T in (8, 64, 4096, 131072):
            setting = {**SPEC.defaults(), "m": 0, "n": 0, "max_position": T}
            assert p.effective(setting)["max"] == T - 1
            SPEC.resolve({**setting, name: T - 1})
            with pytest.raises(ParamError) as err:
                SPEC.resolve({**setting, name: T})
            assert f"from 0 to {T - 1}" in str(err.value).replace(",", "")
            if T < p.max + 1:                       # the rule, not the control's own top, refused
                assert "at sequence length" in str(err.value)
        # steps of one position: the lesson moves m and n together, one position at a time
        assert p.step == 1 and p.scale == "linear"
    assert "sequence length" in SPEC.param("m").help and "one position at a time" in SPEC.param("m").help


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
    caption = run(w, max_position=128)["table"]["caption"]
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


# -- Issue 30: what a fresh student reader of the built page found ----------------------------

CHAPTER = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs/chapters/positions.md"


def _main_line(text: str) -> str:
    """The chapter without its collapsibles (`???` blocks and their indented bodies): what a
    reader who never opens one reads."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("??? "):
            inside = True
            continue
        if inside and (line.startswith("    ") or not line.strip()):
            continue
        inside = False
        out.append(line)
    return "\n".join(out)


def test_the_main_line_explains_what_the_summary_cites_without_a_collapsible():
    """The Summary cited the 53,248-token crossover and the main text RoPE's float32 angle
    rounding, both explained only inside "Going further" collapsibles."""
    main = _main_line(CHAPTER.read_text())
    body = main[:main.index("## Summary")]
    summary = main[main.index("## Summary"):main.index("## Exercises")]
    assert "llama_layer_crossover_causal_T" in summary
    crossover = body.index("llama_layer_crossover_causal_T")     # said in the main line first
    assert "most of a\nprompt's arithmetic is the rest of the model" in body[crossover:crossover + 400]
    # the float32 rounding the widget's lesson and the check-yourself question rely on
    assert "rope_error_fp32" in body and "seven significant digits" in body
    assert "collapsible above" not in body


def test_the_rope_widget_sits_where_its_m_minus_n_lesson_asks_for_it():
    """The RoPE widget came a section after the lesson it illustrates: now it follows the sentence
    that asks the reader to move m and n together, before the θ section, which points back."""
    text = CHAPTER.read_text()
    lesson = text.index("Move\n\\(m\\) and \\(n\\) up together")
    widget = text.index("name: positions_rope")
    theta = text.index("## The base θ and long contexts")
    assert lesson < widget < theta
    assert text.index("## RoPE: rotate the query and the key") < lesson
    assert '{{ fig("positions") }}, just above' in text[theta:]


def test_the_theta_help_says_500000_is_a_stop_not_to_type_it():
    help_ = SPEC.param("rope_theta").help
    assert "type it" not in help_ and "500,000 among them" in help_
    # and it is one: a baked, round value the page's stops keep (tests/compute/test_runtime_mirror
    # runs the page's stop list itself)
    assert any(p.get("rope_theta") == 500000.0 for p in SPEC.bake)


def test_theta_readouts_keep_four_significant_figures():
    """'base θ = 78' was printed for the slider's bottom, 78.125."""
    out = run(w, rope_theta=78.125)
    assert "θ = 78.12 " in out["summary"] and "θ = 78 " not in out["summary"]
    assert out["figure"]["data"][0]["name"] == "RoPE, θ = 78.12"
    assert "θ = 500,000 " in run(w, rope_theta=500000.0)["summary"]
    assert w.theta_text(312.5) == "312.5" and w.theta_text(10_240_000.0) == "10,240,000"


def test_the_pairs_diagram_says_one_radian_not_one_radians():
    from backend.diagrams import rope_pairs

    desc = rope_pairs.draw(8, 1).desc
    assert "1 radian per position and has turned 1 radian " in desc
    assert not __import__("re").search(r"(?<![\d.])1 radians", desc)
    assert "0.1 radians per position" in desc


def test_the_dog_vectors_dimensions_are_named_and_the_page_says_what_they_are():
    """'animal', 'action', 'human', 'fourth' read as jargon to a student: each bar group is now
    'dim i (meaning)', and the chapter says what each hand-picked number means."""
    from backend.reference import order

    assert wo.COORDS == ("dim 0 (animal)", "dim 1 (action)", "dim 2 (person)", "dim 3 (blank)")
    assert run(wo)["table"]["columns"][2:] == list(wo.COORDS)
    assert [x.replace("<br>", " ") for x in run(wo)["figure"]["data"][0]["x"]] == list(wo.COORDS)
    # the meanings are the vectors': each word is largest in its own dimension, dim 3 is 0
    for word, dim in (("dog", 0), ("bites", 1), ("man", 2)):
        vec = order.WORD_VECTORS[word]
        assert max(range(4), key=lambda i: vec[i]) == dim and vec[3] == 0
    main = _main_line(CHAPTER.read_text())
    assert ('dim 0 is large for an animal ("dog"), dim 1 for an action ("bites"), dim 2\n'
            'for a person ("man"), and dim 3 is 0 in every word') in main


@pytest.mark.parametrize("d", [8, 64, 512])
def test_a_long_table_is_averaged_not_aliased(d):
    """Figure 6.3 at 131,072 positions drew one position per 1,024: the fast columns showed a
    false pattern. Each row is now its block smoothed: a column that turns many times per block
    is near 0, a slow one keeps its values."""
    out = run(ws, d_model=d, max_position=131072)
    heat = out["figure"]["data"][0]
    z = torch.tensor(heat["z"])                     # (rows, columns shown)
    block = heat["y"][1] - heat["y"][0]
    waves = rope.wavelengths(d, ws.BASE)
    for j, col in enumerate(heat["x"]):
        wave = float(waves[col // 2])
        if wave < block / 2:                        # two or more turns per row: faded
            assert float(z[:, j].abs().max()) < 0.05, (col, wave)
        elif wave > 16 * block:                     # slow: its values at the rows' middles
            middle = torch.tensor(heat["y"], dtype=torch.float64) + (block - 1) / 2
            angle = middle * 2 * math.pi / wave
            exact = angle.sin() if col % 2 == 0 else angle.cos()
            assert float((z[:, j] - exact).abs().max()) < 0.1, (col, wave)
    assert "rows averaged" in out["figure"]["layout"]["annotations"][0]["text"]
    assert f"means of {block:,}" in out["figure"]["layout"]["yaxis"]["title"]["text"]
    assert f"mean of {block:,} positions" in out["summary"]


def test_block_means_are_the_tables_own_means():
    rows = ws.strided(1000, 128)                    # blocks of 8
    size = torch.diff(torch.tensor(rows + [1000]))
    full = ws.sinusoidal.sinusoidal_encoding(64, 16).double()
    # the mean over a window two blocks wide, taken three times over = the mean of the sum of
    # three offsets, each drawn from a window centred on the block: checked by brute force
    got = ws.block_means(1000, rows, 16)
    for r, (a, s) in enumerate(zip(rows, size.tolist())):
        k = ws.WINDOW_BLOCKS * s
        offsets = torch.arange(k, dtype=torch.float64) - (k - 1) / 2
        three = (offsets[:, None, None] + offsets[None, :, None] + offsets[None, None, :]).flatten()
        pos = a + (s - 1) / 2 + three
        angle = pos[:, None] / (10000.0 ** (torch.arange(8, dtype=torch.float64) * 2 / 16))[None, :]
        want = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(-2).mean(dim=0)
        assert torch.allclose(got[r], want, atol=1e-9)
    assert torch.allclose(ws.block_means(64, list(range(64)), 16), full[:64], atol=1e-6)  # blocks of 1


def test_a_long_rope_curve_is_smoothed_not_aliased():
    """At 131,072 positions and head width 8 the curve took one distance in 328: the fast pairs
    drew a false zigzag. Past its first 200 distances (drawn one by one) each point is a block
    smoothed, so the fast pairs vanish and only the slowest pair's turn is left."""
    fig = figure(max_position=131072, m=5000, n=0)
    line = fig["data"][0]
    x, y = torch.tensor(line["x"], dtype=torch.float64), torch.tensor(line["y"], dtype=torch.float64)
    first = w.CURVE_POINTS // 2
    assert x[:first].tolist() == list(range(first))
    exact = rope.relative_similarity(torch.arange(first), 8, 10000.0)
    assert torch.allclose(y[:first], exact, atol=1e-4)                 # the fall, exactly
    waves = rope.wavelengths(8, 10000.0)
    slow = 2 * math.pi / float(waves[-1])
    # pairs 0-2 (under two blocks per turn) average out; the slowest (9.6 blocks per turn) is
    # kept at its smoothing factor, (sin(w k / 2) / (k sin(w / 2)))^3 for a window of k = 2 x 655
    k = ws.WINDOW_BLOCKS * 655
    keep = (math.sin(slow * k / 2) / (k * math.sin(slow / 2))) ** ws.SMOOTHING
    assert 0.75 < keep < 0.85 and float(waves[-2]) < 2 * 655
    tail = (y[first:] - keep * torch.cos(x[first:] * slow) / 4).abs()
    assert float(tail.max()) < 0.01
    # "the axis says from where, and how many"
    assert f"past {first - 1}, means over 655" in fig["layout"]["xaxis"]["title"]["text"]
    assert len(line["x"]) <= w.CURVE_POINTS
