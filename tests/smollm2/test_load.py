"""SmolLM2-135M-Instruct in the book's own DecoderLM (backend/smollm2/load.py), held to something
independent: transformers' own GGUF loader reads the same file into its LlamaForCausalLM. The
dequantised weights must be the same numbers, and the two models the same function (float32:
logits within 1e-4, attention weights within 1e-6, cached decoding too), on a trained model,
where a wrong RoPE layout, K/V order or norm would show at once."""

from __future__ import annotations

import os

import pytest
import torch

from backend.reference.llama_compare import hf_state_dict
from backend.smollm2 import load

PROMPT = "The river flows through the"


@pytest.fixture(scope="module")
def ours():
    return load.model()


@pytest.fixture(scope="module")
def theirs():
    from transformers import AutoModelForCausalLM

    path = load.gguf_path()
    return AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32,
        attn_implementation="eager").eval()


def test_the_config_is_smollm2_135m(ours):
    model, tok = ours
    c = model.config
    assert (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.d_head, c.d_ff, c.vocab_size) == \
        (30, 576, 9, 3, 64, 1536, 49152)
    assert c.rope_theta == 100_000 and c.max_seq_len == 8192 and c.tie_embeddings
    assert model.lm_head.weight is model.embed_tokens.weight
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert len(tok) == 49152


def test_the_dequantised_weights_are_transformers_own(ours, theirs):
    mine, hf = hf_state_dict(ours[0].state_dict()), theirs.state_dict()
    assert set(mine) == set(hf)
    for name, tensor in hf.items():
        assert torch.equal(mine[name], tensor), name


def test_logits_and_attention_equal_llama_for_causal_lm(ours, theirs):
    model, tok = ours
    ids = tok(PROMPT + " valley, past the old mill, and into the sea.", return_tensors="pt").input_ids
    with torch.no_grad():
        a = model(ids, output_attentions=True)
        b = theirs(ids, output_attentions=True)
    assert (a.logits - b.logits).abs().max() <= 1e-4
    assert len(a.attentions) == 30
    assert max((x - y).abs().max() for x, y in zip(a.attentions, b.attentions, strict=True)) <= 1e-6


def test_cached_decoding_gives_the_full_forwards_logits_and_greedy_text(ours, theirs):
    model, tok = ours
    ids = tok(PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        want = theirs.generate(ids, max_new_tokens=12, do_sample=False, top_k=None, top_p=None,
                               temperature=None, pad_token_id=2)
        cache = model.new_cache()
        out = model(ids, cache=cache)
        got = ids
        for _ in range(12):
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            got = torch.cat([got, nxt], 1)
            out = model(nxt, cache=cache)
        full = theirs(got).logits[:, -1]
    assert torch.equal(got, want)
    assert (out.logits[:, -1] - full).abs().max() <= 1e-4
    text = tok.decode(got[0, ids.shape[1]:])
    assert text.split()  # words, decoded by the checkpoint's own tokenizer


def test_head_scores_from_transformers_attention_are_the_widgets(ours, theirs):
    """The head_roles widget's scores, recomputed by plain loops from LlamaForCausalLM's own
    attention weights on the widget's text."""
    from backend.compute import head_roles

    v = head_roles.compute(head_roles.SPEC.resolve({}))["values"]
    _, tok = ours
    ids = [tok.eos_token_id] + tok(head_roles.TEXT)["input_ids"]
    with torch.no_grad():
        att = theirs(torch.tensor([ids]), output_attentions=True).attentions
    T = len(ids)
    for layer in (0, 16, 18, 29):
        for head in range(9):
            A = att[layer][0, head]
            prev = sum(A[t, t - 1] for t in range(2, T)) / (T - 2)
            first = sum(A[t, 0] for t in range(1, T)) / (T - 1)
            local = sum(A[t, t - 3: t + 1].sum() for t in range(4, T)) / (T - 4)
            rows = [(t, {s + 1 for s in range(1, t) if ids[s] == ids[t] and s + 1 < t})
                    for t in range(T)]
            rows = [(t, c) for t, c in rows if c]
            ind = sum(A[t, sorted(c)].sum() for t, c in rows) / len(rows)
            for role, want in (("previous_token", prev), ("first_token", first),
                               ("local", local), ("induction", ind)):
                assert v["scores"][role][layer][head] == pytest.approx(float(want), abs=1e-4)


def test_the_preset_is_the_checkpoints_config_and_counts_its_tensors(ours):
    """The calculators' typed preset (from the published config.json) against the GGUF file's
    own fields, and the model chapter's count against the loaded tensors."""
    import dataclasses

    from backend.reference.counting import count_parameters
    from backend.reference.presets import PRESETS

    model, _ = ours
    typed, real = PRESETS["smollm2-135m"], model.config
    assert dataclasses.replace(typed, norm_eps=real.norm_eps) == real
    assert typed.norm_eps == pytest.approx(real.norm_eps, rel=1e-6)  # stored as float32 there
    held = sum(t.numel() for t in load.state().values())  # the tied head is the embedding
    assert count_parameters(typed).total == held == sum(p.numel() for p in model.parameters())


def test_every_install_of_the_same_checkpoint_shares_one_conversion(tmp_path, monkeypatch):
    """Named by the file's time, each venv and clean clone converted anew: 100 files of 514 MB
    gathered in one machine's /tmp. Two copies of the checkpoint (another install: another
    time) share one conversion; a different checkpoint gets its own."""
    calls = []

    def fake_read(src):
        calls.append(src)
        return load.ModelConfig(vocab_size=8, d_model=4, n_layers=1, n_heads=1, n_kv_heads=1,
                                d_ff=8, max_seq_len=8), {"w": torch.zeros(1)}

    monkeypatch.setattr(load, "read", fake_read)
    monkeypatch.setattr(load.tempfile, "tempdir", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    a, b, c = (tmp_path / n for n in ("a.gguf", "b.gguf", "c.gguf"))
    a.write_bytes(b"GGUF checkpoint one")
    b.write_bytes(a.read_bytes())
    c.write_bytes(b"GGUF checkpoint two")
    os.utime(b, ns=(1, 1))  # another install's time
    assert load.converted(a) == load.converted(b)
    assert load.converted(c) != load.converted(a)
    assert len(calls) == 2
    assert sorted(p.suffix for p in (tmp_path / "cache").iterdir()) == [".pt", ".pt"]
