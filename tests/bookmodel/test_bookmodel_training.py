"""The training script is seeded end to end: the same seed gives the same model and numbers."""

from __future__ import annotations

import json

import pytest

from backend.bookmodel.card import loss_curve_svg, model_card
from backend.bookmodel.corpus import Article
from backend.bookmodel.train import TrainConfig, lr_at, train

TEXT = ("The animal did not cross the street because it was too tired. "
        "The river is wide and it flows to the sea. A city is a large town. ")
ARTICLES = ([Article(f"t{i}", TEXT * 3) for i in range(30)], [Article(f"v{i}", TEXT) for i in range(4)])
TINY = TrainConfig(vocab_size=300, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=64,
                   seq_len=32, batch_size=4, steps=6, warmup_steps=2, eval_every=3, eval_windows=4)


def run(tmp_path, name, **changes):
    tc = TINY.__class__(**{**TINY.__dict__, **changes})
    out = tmp_path / name
    metrics = train(tc, out, out / "loss.svg", log=lambda _: None, articles=ARTICLES)
    return metrics, out


def test_same_seed_same_model(tmp_path):
    a, out_a = run(tmp_path, "a")
    b, out_b = run(tmp_path, "b")
    for m in (a, b):
        m["training"].pop("wall_seconds"), m["training"].pop("cpu_seconds")
    assert a == b
    assert (out_a / "model.safetensors").read_bytes() == (out_b / "model.safetensors").read_bytes()
    assert (out_a / "tokenizer.json").read_text() == (out_b / "tokenizer.json").read_text()
    c, _ = run(tmp_path, "c", seed=1)
    assert c["final"]["val_loss"] != a["final"]["val_loss"]


def test_outputs_are_written_and_loss_goes_down(tmp_path):
    m, out = run(tmp_path, "a")
    for name in ("model.safetensors", "tokenizer.json", "config.json", "metrics.json", "MODEL_CARD.md", "loss.svg"):
        assert (out / name).stat().st_size > 0
    assert json.loads((out / "metrics.json").read_text()) == m
    assert [p["step"] for p in m["curve"]] == [3, 6]
    assert m["curve"][-1]["train_loss"] < m["curve"][0]["train_loss"]
    assert (out / "MODEL_CARD.md").read_text() == model_card(m)
    assert (out / "loss.svg").read_text() == loss_curve_svg(m)
    assert len(m["samples"]) == 4 and all(s["text"] for s in m["samples"])


@pytest.mark.parametrize("step,expected", [(0, 3e-3 / 100), (99, 3e-3), (1600, 3e-4)])
def test_learning_rate_schedule(step, expected):
    assert lr_at(step, TrainConfig()) == pytest.approx(expected)
