"""The training script is seeded end to end: the same seed gives the same model and numbers."""

from __future__ import annotations

import json
from xml.etree import ElementTree

import pytest

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
    assert len(m["samples"]) == 4 and all(s["text"] for s in m["samples"])
    # the card and the figure state this run's numbers
    card = (out / "MODEL_CARD.md").read_text()
    assert f"| parameters | {m['model']['n_params']:,} " in card
    assert f"| seed / threads | {TINY.seed} / {TINY.threads} |" in card
    assert f"| final validation loss | {m['final']['val_loss']:.4f} nats/token" in card
    assert all(f"- **{s['prompt']}**" in card for s in m["samples"])
    svg = ElementTree.fromstring((out / "loss.svg").read_text())
    train_line, val_line = svg.iter("{http://www.w3.org/2000/svg}polyline")
    for line in (train_line, val_line):  # one point per evaluation, left to right
        xs = [float(p.split(",")[0]) for p in line.get("points").split()]
        assert len(xs) == len(m["curve"]) and xs == sorted(xs)
    ys = [float(p.split(",")[1]) for p in train_line.get("points").split()]
    assert ys[-1] > ys[0]  # the loss went down: lower on the page
    assert f"final validation loss {m['final']['val_loss']:.3f}" in "".join(svg.itertext())


@pytest.mark.parametrize("step,expected", [(0, 3e-3 / 100), (99, 3e-3), (1600, 3e-4)])
def test_learning_rate_schedule(step, expected):
    assert lr_at(step, TrainConfig()) == pytest.approx(expected)
