"""Every qualitative sentence of docs/chapters/kv-cache.md, checked over computed values: at the
settings the text names, and across the steps slider where it invites the reader to move it.
Measured numbers are checked for ordering only."""

from __future__ import annotations

import pytest
import torch

from backend.reference.generate import token_steps
from backend.reference.kv_cache import kv_cache_bytes_for
from backend.widgets import kv_decode as w
from backend.widgets import measure


@pytest.fixture(scope="module", autouse=True)
def private_lock(tmp_path_factory):
    before = measure.LOCK_PATH
    measure.LOCK_PATH = str(tmp_path_factory.mktemp("lock") / "timing.lock")
    yield
    measure.LOCK_PATH = before


def values(**params):
    return w.compute(w.SPEC.resolve(params))["values"]


def test_the_handouts_counts_at_1000_400_and_800_tokens():
    v = values(steps=25)  # the handout values ride along with any setting
    assert (v["handout_rows_1000_no_cache"], v["handout_rows_1000_cache"]) == (500_500, 1_000)
    assert (v["handout_rows_400_no_cache"], v["handout_rows_400_cache"]) == (400 * 401 // 2, 400)
    assert (v["handout_rows_800_no_cache"], v["handout_rows_800_cache"]) == (320_400, 800)


@pytest.mark.parametrize("n", [50, 100, 200, 400])
def test_doubling_the_length_doubles_the_ratio_and_quadruples_the_rows_saved(n):
    ratio = lambda m: token_steps(m, False) / token_steps(m, True)  # noqa: E731
    saved = lambda m: token_steps(m, False) - token_steps(m, True)  # noqa: E731
    assert ratio(2 * n) / ratio(n) == pytest.approx(2, rel=0.02)
    assert ratio(n) == pytest.approx(n / 2, rel=0.02)  # "about n/2"
    assert saved(2 * n) / saved(n) == pytest.approx(4, rel=0.05)


def test_the_runs_count_the_formula_at_400_steps_and_the_cached_run_is_faster():
    v = values(steps=400)
    assert (v["key_rows_no_cache"], v["key_rows_cache"]) == (80_200, 400)
    assert v["tokens_identical"] and v["max_logit_diff"] <= 1e-5  # "float rounding"
    assert v["ms_cache"] < v["ms_no_cache"]
    # "a speed-up ... far below the ... fewer key rows"
    assert v["speedup"] < v["work_ratio"] / 10


@pytest.mark.parametrize("params", [
    {"steps": 1}, {"steps": 25}, {"steps": 200, "prompt_len": 32}, {"steps": 400, "prompt_len": 8},
    {"model": "book", "steps": 1}, {"model": "book", "steps": 96}, {"model": "book", "steps": 50, "prompt_len": 32},
])
def test_cached_and_uncached_write_the_same_tokens_across_the_range(params):
    v = values(**params)
    assert v["tokens_identical"] is True
    assert v["max_logit_diff"] <= 1e-4
    p = params.get("prompt_len", 1)
    assert v["key_rows_no_cache"] == token_steps(params["steps"], False, p)
    assert v["key_rows_cache"] == token_steps(params["steps"], True, p)


def test_moving_steps_down_draws_the_times_together_and_up_widens_the_gap():
    gap = {n: values(steps=n)["ms_no_cache"] - values(steps=n)["ms_cache"] for n in (25, 100, 400)}
    assert gap[25] < gap[400] and gap[100] < gap[400]


def test_the_larger_model_gains_more_from_the_cache_at_the_same_length():
    book, small = values(model="book", steps=96), values(steps=96)
    assert book["work_ratio"] == small["work_ratio"]  # same prompt, same steps: same rows saved
    assert book["speedup"] > small["speedup"]
    assert (book["n_layers"], w.model_for("book").config.d_model) == (4, 128)
    assert (small["n_layers"], w.RANDOM_CONFIG.d_model) == (2, 32)


def test_the_cache_grows_one_fixed_slice_per_token():
    for params in ({"steps": 25}, {"steps": 200, "prompt_len": 8}, {"model": "book", "steps": 96}):
        v = values(**params)
        cfg = w.model_for(params.get("model", "random")).config
        assert v["cache_positions"] == params.get("prompt_len", 1) + params["steps"] - 1
        assert v["cache_bytes_per_token"] == 2 * cfg.n_layers * cfg.n_kv_heads * cfg.d_head * 4
        assert v["cache_bytes"] == v["cache_positions"] * v["cache_bytes_per_token"]


def test_the_books_model_numbers_the_chapter_names():
    v = values(model="book", steps=96)
    assert (v["n_layers"], v["n_kv_heads"], v["d_head"]) == (4, 2, 32)
    assert v["cache_bytes_per_token"] == 2_048
    book = w.model_for("book").config
    assert book.max_seq_len == 128 == 32 + w.BOOK_MAX_STEPS  # "up to 96 tokens ... 128 positions"
    assert w.RANDOM_CONFIG.n_layers == 2 and w.MAX_STEPS == 400
    assert values(steps=25)["repeats"] == 3


def test_earlier_keys_and_values_stay_in_a_decoder_and_move_in_an_encoder():
    v = values(model="book", steps=96, prompt_len=32)
    assert v["prefix_kv_change_causal"] <= 1e-5
    bi = v["prefix_kv_change_bidirectional"]
    assert bi[0] == 0.0  # layer 1: projections of each token's own embedding
    # "from the second layer on": every later layer moves, by far more than rounding
    assert all(change > 1e-3 for change in bi[1:])


def test_exercise_2_and_the_check_yourself_counts():
    v = values(steps=1, prompt_len=32)
    assert v["key_rows_no_cache"] == v["key_rows_cache"] == 32
    v = values(steps=10, prompt_len=5)
    assert (v["key_rows_cache"], v["key_rows_no_cache"]) == (14, 95)


def test_exercise_3_one_kv_head_halves_the_books_cache():
    book = w.model_for("book").config
    assert 2 * kv_cache_bytes_for(book.replace(n_kv_heads=1), 128, dtype=torch.float32) == \
        kv_cache_bytes_for(book, 128, dtype=torch.float32)
