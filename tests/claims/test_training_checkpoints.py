"""Every sentence and number of "What training changes" (docs/chapters/training.md, section 5)
and of its Appendix B note (docs/chapters/_compute/training.md), asserted over the values the
training_checkpoints widget computes at the settings the text names. The page's numbers are
`value()` macros of the same widget; these tests hold the words around them to the numbers."""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path

import torch

from backend.bookmodel import checkpoints
from backend.bookmodel.load import shared_model
from backend.compute import training_checkpoints as tc

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "docs/chapters/training.md"
COMPUTE = ROOT / "docs/chapters/_compute/training.md"
STEPS = tc.STEPS
HEAD = (tc.SPEC.param("layer").default, tc.SPEC.param("head").default)


@cache
def _run(key: str) -> dict:
    return tc.compute(tc.SPEC.resolve(json.loads(key)))["values"]


def at(step: int, **params) -> dict:
    return _run(json.dumps({"step": str(step), **params}, sort_keys=True))


def section() -> str:
    text = CHAPTER.read_text(encoding="utf-8")
    start = text.index("## What training changes")
    return text[start:text.index("\n## ", start + 1)]


def new_ids(step: int) -> list[int]:
    v = at(step)
    ids, _ = tc.encode(tc.PROMPT)
    return tc.greedy(checkpoints.shared_checkpoint(step)[0], ids, v["continuation_tokens"])


def test_the_section_is_written_and_names_the_widgets_defaults():
    """The prompt quoted is the widget's; the head named is the widget's default; every step
    the run kept has a row of the table."""
    s = section()
    assert "section 5: written by" not in s  # the placeholder is gone
    assert f"“{tc.PROMPT}”" in " ".join(s.split())
    assert f"layer {HEAD[0]}, head {HEAD[1]}" in s.lower()
    assert "name: training_checkpoints" in s
    rows = re.findall(r'^\| \{\{ value\("training_checkpoints", "step", fmt=",d", step="(\d+)"', s,
                      re.M)
    assert [int(r) for r in rows] == list(STEPS)


def test_the_checkpoints_span_the_run_from_its_initialisation():
    """'A re-run ... kept them at the steps in the table, from the random initialisation (step
    0) to step R; the last row is the shipped model itself, after step N'; 'ships these n
    checkpoints in half precision (x MB in all)'."""
    from backend.bookmodel.load import metrics

    v = at(STEPS[-1])
    assert STEPS[0] == 0 and v["last_step"] == STEPS[-1] == metrics()["training"]["steps"]
    assert v["n_steps"] == len(STEPS) and v["rerun_last"] == STEPS[-2]
    entries = checkpoints.manifest()["checkpoints"]
    assert entries[-1]["note"].startswith("the shipped model")
    assert not any(e.get("note", "").startswith("the shipped model") for e in entries[:-1])
    assert v["checkpoint_dtype"] == "float16"
    assert abs(v["checkpoint_mb"] - sum(e["bytes"] for e in entries) / 1e6) < 0.05


def test_the_validation_loss_falls_at_every_kept_step_fastest_at_first():
    """'The validation loss falls at every kept step, fastest at the start'; step 0's loss is
    about ln 4,096, what a uniform guess loses (within 0.1 nats)."""
    curve = at(STEPS[-1])["curve"]
    losses = [c["val_loss"] for c in curve]
    assert all(b < a for a, b in zip(losses, losses[1:]))
    per_step = [(a["val_loss"] - b["val_loss"]) / (b["step"] - a["step"])
                for a, b in zip(curve, curve[1:])]
    assert all(b < a for a, b in zip(per_step, per_step[1:])), per_step
    v = at(0)
    assert abs(losses[0] - v["uniform_loss"]) < 0.1  # 'about ln V'
    assert v["uniform_loss"] == round(math.log(v["vocab_size"]), 4)
    assert v["vocab_size"] == shared_model()[0].config.vocab_size


def test_step_0_repeats_the_prompts_last_token_and_is_less_likely_than_a_uniform_guess():
    """'the token just read is among step 0's top x% of guesses at every position, and its top
    guess at n of the T'; 'The prompt ends with one of them, "of", so the continuation starts
    "of of of"'; 'the finished model finds it less likely than the know-nothing model would'."""
    v = at(0)
    ids, _ = tc.encode(tc.PROMPT)
    new = new_ids(0)
    assert new[:3] == [ids[-1]] * 3 and v["continuation"].startswith(" of of of")
    assert v["top_share"] < 0.02 and 2 <= v["copies"] < v["n_tokens"]  # 'at n of the T'
    model = checkpoints.shared_checkpoint(0)[0]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]  # (T, V)
    assert logits[-1].argmax() == ids[-1]  # 'of' is one of the copied positions
    assert v["judged_loss"] > v["uniform_loss"]
    # the tie the sentence names: the output matrix is the embedding matrix
    assert model.lm_head.weight is model.embed_tokens.weight


def test_the_early_checkpoints_say_the_over_and_over():
    """'After 25 to 100 steps it mostly says " the"'; 'after 25 and 50 steps its top guess at
    every position of the prompt is "," or " the"': at each of those steps more than half of the
    new tokens are ' the'."""
    tok = shared_model()[1]
    the, comma = tok.token_to_id("Ġthe"), tok.token_to_id(",")
    ids, _ = tc.encode(tc.PROMPT)
    early = [s for s in STEPS if 25 <= s <= 100]
    assert early
    for s in early:
        new = new_ids(s)
        assert new.count(the) > len(new) / 2, (s, tok.decode(new))
        with torch.no_grad():
            top = checkpoints.shared_checkpoint(s)[0](torch.tensor([ids])).logits[0].argmax(-1)
        if s <= 50:
            assert set(top.tolist()) <= {the, comma}, (s, top.tolist())
    assert {25, 50} <= set(early)


def test_later_continuations_are_words_then_numbers():
    """'From step 200 on no token fills half of the continuation; from step 400 a number
    follows "population of"' (and not before)."""
    later = [s for s in STEPS if s >= 200]
    assert later and 400 in STEPS
    for s in later:
        new = new_ids(s)
        assert max(new.count(t) for t in new) < len(new) / 2, s
        assert at(s)["continuation"].strip()[0].isdigit() == (s >= 400), s
    for s in [s for s in STEPS if s < 200]:
        new = new_ids(s)
        assert max(new.count(t) for t in new) >= len(new) / 2, s


def test_the_finished_models_loss_on_the_continuations_falls_to_its_own():
    """The table's last column: the shipped model's loss per token on each continuation; the
    last checkpoint's continuation is the shipped model's own greedy output, token for token
    ('rounding the weights to half precision changed none of its choices')."""
    last = at(STEPS[-1])
    assert last["same_as_shipped"] == last["continuation_tokens"]
    assert last["continuation"] == last["shipped_continuation"]
    judged = [at(s)["judged_loss"] for s in STEPS]
    assert judged[-1] == min(judged)
    assert judged[-1] < 2  # about e^-2 per token or better: the shipped model's own choices


def test_the_head_starts_even_and_ends_a_previous_token_head():
    """'At step 0 layer L, head H spreads each row almost evenly over the tokens it can see: its
    previous-token score is an even split's'; 'by the last step it puts more than half of a row
    on the previous token'."""
    first, last = at(0), at(STEPS[-1])
    assert first["spread"] > 0.99
    assert abs(first["previous_token"] - first["even_previous"]) < 0.01
    assert abs(first["first_token"] - first["even_first"]) < 0.01
    assert last["previous_token"] > 0.5
    assert last["spread"] < 0.7
    scores = [at(s)["previous_token"] for s in STEPS]
    assert all(b > a for a, b in zip(scores, scores[1:])), scores  # 'rises at every kept step'


def test_the_appendix_note_states_the_widgets_bounds_and_record():
    """Appendix B: the prompt's limits (the attention map's), at most MAX_NEW new tokens, at most
    that many positions per model; the losses are the run's record on the loss curve's windows;
    the checkpoints are float16 on disk and float32 in the model; the last is the shipped model,
    rounded."""
    from backend.bookmodel.load import metrics
    from backend.compute import attention_map

    note = COMPUTE.read_text(encoding="utf-8")
    part = note[note.index("### What training changes"):]
    for name in ("max_chars", "max_tokens", "max_new", "max_positions", "loss_windows", "seq_len",
                 "rerun_last", "rerun_shared", "rerun_gap"):
        assert f'value("training_checkpoints", "{name}"' in part, name
    v, m = at(STEPS[-1]), metrics()
    assert (v["max_chars"], v["max_tokens"]) == (attention_map.MAX_CHARS, attention_map.MAX_TOKENS)
    assert v["max_positions"] == v["max_tokens"] + v["max_new"] <= m["model"]["config"]["max_seq_len"]
    assert (v["loss_windows"], v["seq_len"]) == (m["training"]["eval_windows"], m["training"]["seq_len"])
    # 'The re-run follows the shipped run closely but not bit for bit: at the k steps where
    # both recorded a validation loss, the two differ by at most g nats per token.'
    curve = {p["step"]: p["val_loss"] for p in m["curve"]}
    rerun = [c for c in checkpoints.manifest()["checkpoints"]
             if c["step"] in curve and c["step"] <= v["rerun_last"]]
    gaps = [abs(c["val_loss"] - curve[c["step"]]) for c in rerun]
    assert len(gaps) == v["rerun_shared"] >= 2
    assert 0 < max(gaps) < 1e-3 and abs(max(gaps) - v["rerun_gap"]) <= 0.05 * max(gaps)
    assert checkpoints.manifest()["dtype"] == "float16"
    for s in STEPS:
        assert all(p.dtype == torch.float32 for p in checkpoints.shared_checkpoint(s)[0].parameters())
    shipped = shared_model()[0].state_dict()
    last = checkpoints.shared_checkpoint(STEPS[-1])[0].state_dict()
    assert all(torch.equal(last[k], shipped[k].half().float()) for k in shipped)
    assert math.isclose(at(0)["uniform_loss"], math.log(4096), abs_tol=1e-4)
