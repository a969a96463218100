"""generate(): zero steps, end-of-sequence per row, left-padded prompts; oracle: transformers' generate."""

import pytest
import torch

from backend.reference.config import ModelConfig
from backend.reference.generate import generate
from backend.reference.parity import build_pair

CFG = ModelConfig(vocab_size=97, d_model=64, n_layers=2, n_heads=8, n_kv_heads=2, d_ff=96, max_seq_len=64)
PAD = 0


@pytest.fixture(scope="module")
def pair():
    return build_pair(CFG, seed=1)


def left_padded(lengths, T, seed=0):
    ids = torch.randint(1, CFG.vocab_size, (len(lengths), T), generator=torch.Generator().manual_seed(seed))
    mask = torch.zeros(len(lengths), T, dtype=torch.long)
    for i, n in enumerate(lengths):
        mask[i, T - n :] = 1
    return ids.masked_fill(mask == 0, PAD), mask


def hf_generate(theirs, ids, mask=None, n=8, **kw):
    with torch.no_grad():
        return theirs.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, do_sample=False,
                               pad_token_id=kw.pop("pad_token_id", PAD), **kw)


@pytest.mark.parametrize("use_cache", [True, False])
def test_zero_new_tokens_returns_the_prompt(pair, use_cache):
    prompt = torch.randint(0, 97, (2, 5))
    result = generate(pair[0], prompt, 0, use_cache=use_cache)
    assert torch.equal(result.tokens, prompt)
    assert result.step_logits.shape == (2, 0, 97) and result.tokens_processed == 0


@pytest.mark.parametrize("bad", [-1, 2.0, True])
def test_bad_max_new_tokens(pair, bad):
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(pair[0], torch.zeros(1, 2, dtype=torch.long), bad)


def test_bad_sampling_settings_fail_before_any_work(pair):
    with pytest.raises(ValueError, match="top_p"):
        generate(pair[0], torch.zeros(1, 2, dtype=torch.long), 0, top_p=1.5)


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_matches_transformers_generate(pair, use_cache):
    ours, theirs = pair
    ids = torch.randint(0, 97, (2, 6))
    assert torch.equal(generate(ours, ids, 10, use_cache=use_cache, greedy=True).tokens, hf_generate(theirs, ids, n=10))


@pytest.mark.parametrize("use_cache", [True, False])
def test_eos_stops_each_row_and_pads_it_like_transformers(pair, use_cache):
    """Per row: row 1 stops at its eos and is filled with pad_token_id; row 0 goes on to the limit."""
    ours, theirs = pair
    ids = torch.randint(0, 97, (2, 6), generator=torch.Generator().manual_seed(4))
    free = generate(ours, ids, 8, greedy=True).tokens[:, 6:]
    eos = free[1, 2].item()  # the token row 1 emits at step 3
    assert eos not in free[0].tolist(), "pick a seed where row 0 never emits it"
    result = generate(ours, ids, 8, use_cache=use_cache, greedy=True, eos_token_id=eos, pad_token_id=5)
    first = free[1].tolist().index(eos)
    assert result.tokens[1, 6 + first].item() == eos
    assert result.tokens[1, 6 + first + 1 :].tolist() == [5] * (8 - first - 1)
    assert torch.equal(result.tokens[0], torch.cat([ids[0], free[0]]))
    assert result.finished.tolist() == [False, True]
    assert torch.equal(result.tokens, hf_generate(theirs, ids, eos_token_id=eos, pad_token_id=5))


def test_eos_in_every_row_ends_generation_early(pair):
    ours, theirs = pair
    ids = torch.randint(0, 97, (1, 4), generator=torch.Generator().manual_seed(2))
    free = generate(ours, ids, 8, greedy=True).tokens[0, 4:].tolist()
    eos = free[3]
    stop = free.index(eos) + 1  # tokens generated, the eos included
    for use_cache in (True, False):
        result = generate(ours, ids, 8, use_cache=use_cache, greedy=True, eos_token_id=eos)
        assert result.tokens.shape == (1, 4 + stop) and result.step_logits.shape == (1, stop, 97)
        assert result.tokens[0, -1].item() == eos and result.finished.all()
    assert torch.equal(result.tokens, hf_generate(theirs, ids, eos_token_id=eos))


@pytest.mark.parametrize("use_cache", [True, False])
def test_left_padded_batch_generates_what_each_row_does_alone(pair, use_cache):
    ours, theirs = pair
    T, lengths = 9, [9, 5, 2]
    ids, mask = left_padded(lengths, T)
    batch = generate(ours, ids, 8, use_cache=use_cache, greedy=True, attention_mask=mask)
    assert batch.attention_mask.shape == (3, T + 8) and batch.attention_mask[:, T:].all()
    for i, n in enumerate(lengths):
        alone = generate(ours, ids[i : i + 1, T - n :], 8, use_cache=use_cache, greedy=True)
        assert torch.equal(batch.tokens[i, T:], alone.tokens[0, n:])
        assert (batch.step_logits[i] - alone.step_logits[0]).abs().max() <= 1e-5
    assert torch.equal(batch.tokens, hf_generate(theirs, ids, mask))


def test_left_padded_sampling_same_with_and_without_cache(pair):
    ours, _ = pair
    ids, mask = left_padded([7, 3], 7, seed=3)
    runs = [generate(ours, ids, 10, use_cache=c, temperature=0.9, top_p=0.95, attention_mask=mask,
                     generator=torch.Generator().manual_seed(11)) for c in (True, False)]
    assert torch.equal(runs[0].tokens, runs[1].tokens)
    assert (runs[0].step_logits - runs[1].step_logits).abs().max() <= 1e-5
