"""DecoderLM against transformers' LlamaForCausalLM with copied weights (fp32, eager attention)."""

import pytest
import torch

from backend.reference.config import ModelConfig
from backend.reference.llama_compare import build_pair, hf_config
from backend.reference.model import DecoderLM, positions_from_mask

LOGIT_TOL = 1e-5

CONFIGS = {
    "mha": ModelConfig(vocab_size=97, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_seq_len=32),
    "gqa": ModelConfig(vocab_size=97, d_model=64, n_layers=2, n_heads=8, n_kv_heads=2, d_ff=96, max_seq_len=32),
    "mqa": ModelConfig(vocab_size=97, d_model=32, n_layers=2, n_heads=4, n_kv_heads=1, d_ff=64, max_seq_len=32),
    "tied": ModelConfig(vocab_size=97, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_seq_len=32, tie_embeddings=True),
    "theta": ModelConfig(vocab_size=97, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=48, max_seq_len=32,
                         rope_theta=500000.0, norm_eps=1e-6),
}


@pytest.mark.parametrize("name", CONFIGS)
@torch.no_grad()
def test_logits_loss_and_attentions_match_llama(name):
    config = CONFIGS[name]
    ours, theirs = build_pair(config, seed=1)
    ids = torch.randint(0, config.vocab_size, (2, 12))
    a = ours(ids, labels=ids, output_attentions=True)
    b = theirs(input_ids=ids, labels=ids, output_attentions=True)
    assert (a.logits - b.logits).abs().max() <= LOGIT_TOL
    assert abs(a.loss.item() - b.loss.item()) <= 1e-5
    assert len(a.attentions) == config.n_layers
    for x, y in zip(a.attentions, b.attentions):
        assert x.shape == (2, config.n_heads, 12, 12)
        assert (x - y).abs().max() <= 1e-6


@torch.no_grad()
def test_loss_ignores_minus_100_like_hf():
    ours, theirs = build_pair(CONFIGS["gqa"], seed=2)
    ids = torch.randint(0, 97, (2, 10))
    labels = ids.clone()
    labels[0, 6:] = -100  # padding
    a, b = ours(ids, labels=labels), theirs(input_ids=ids, labels=labels)
    assert abs(a.loss.item() - b.loss.item()) <= 1e-5


def test_tied_weights_are_one_tensor():
    model = DecoderLM(CONFIGS["tied"])
    assert model.lm_head.weight is model.embed_tokens.weight
    untied = DecoderLM(CONFIGS["mha"])
    assert sum(p.numel() for p in untied.parameters()) - sum(p.numel() for p in model.parameters()) == 97 * 32


@torch.no_grad()
def test_logits_to_keep_slices_the_last_positions():
    model = DecoderLM(CONFIGS["mha"]).eval()
    ids = torch.randint(0, 97, (2, 9))
    full = model(ids).logits
    last = model(ids, logits_to_keep=1).logits
    assert full.shape == (2, 9, 97) and last.shape == (2, 1, 97)
    torch.testing.assert_close(last, full[:, -1:], atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="logits_to_keep"):
        model(ids, labels=ids, logits_to_keep=1)


def test_too_long_input_is_rejected():
    model = DecoderLM(CONFIGS["mha"])
    with pytest.raises(ValueError, match="max_seq_len"):
        model(torch.zeros(1, 33, dtype=torch.long))


def test_loss_backpropagates():
    model = DecoderLM(CONFIGS["gqa"])
    ids = torch.randint(0, 97, (2, 8))
    model(ids, labels=ids).loss.backward()
    assert all(p.grad is not None for p in model.parameters())


# ---------------------------------------------------------------- left padding and the attention mask


def left_padded(lengths, T, vocab=97, seed=0):
    ids = torch.randint(1, vocab, (len(lengths), T), generator=torch.Generator().manual_seed(seed))
    mask = torch.zeros(len(lengths), T, dtype=torch.long)
    for i, n in enumerate(lengths):
        mask[i, T - n :] = 1
    return ids.masked_fill(mask == 0, 0), mask


@pytest.mark.parametrize("name", CONFIGS)
@torch.no_grad()
def test_left_padded_batch_matches_llama_with_the_same_mask(name):
    """Oracle: LlamaForCausalLM given the same attention_mask and the position ids its generate()
    computes for left padding (cumsum of the mask - 1, pads 0). Real positions are compared; a
    pad's own output is never read."""
    config = CONFIGS[name]
    ours, theirs = build_pair(config, seed=3)
    ids, mask = left_padded([12, 8, 3], 12)
    a = ours(ids, attention_mask=mask, output_attentions=True)
    b = theirs(input_ids=ids, attention_mask=mask, position_ids=positions_from_mask(mask, 12), output_attentions=True)
    real = mask.bool()
    assert (a.logits - b.logits).abs()[real].max() <= LOGIT_TOL
    for x, y in zip(a.attentions, b.attentions):
        assert (x - y).abs()[real[:, None, :, None].expand_as(x)].max() <= 1e-6
        assert torch.all(x[1, :, 4:, :4] == 0) and torch.all(x[2, :, 9:, :9] == 0)  # real queries: none on pads


@pytest.mark.parametrize("name", CONFIGS)
@torch.no_grad()
def test_left_padded_rows_give_the_unpadded_logits(name):
    ours, _ = build_pair(CONFIGS[name], seed=4)
    ids, mask = left_padded([12, 7, 1], 12, seed=1)
    padded = ours(ids, attention_mask=mask).logits
    for i, n in enumerate([12, 7, 1]):
        alone = ours(ids[i : i + 1, 12 - n :]).logits[0]
        assert (padded[i, 12 - n :] - alone).abs().max() <= LOGIT_TOL


def test_positions_from_mask_is_what_hf_generate_computes():
    from transformers import LlamaForCausalLM

    _, mask = left_padded([5, 3, 1], 5)
    assert positions_from_mask(mask, 5).tolist() == [[0, 1, 2, 3, 4], [0, 0, 0, 1, 2], [0, 0, 0, 0, 0]]
    theirs = LlamaForCausalLM(hf_config(CONFIGS["mha"]))
    expected = theirs._prepare_position_ids_for_generation(torch.zeros(3, 5, dtype=torch.long),
                                                           {"attention_mask": mask})
    assert torch.equal(positions_from_mask(mask, 5), expected)
    assert positions_from_mask(torch.ones(1, 9, dtype=torch.long), 2).tolist() == [[7, 8]]  # decode steps


@torch.no_grad()
def test_hf_forward_without_position_ids_counts_pads_as_positions():
    """The documented difference: LlamaForCausalLM.forward given only attention_mask numbers the
    positions 0..T-1 with the pads included (its generate() does not). Passing those positions
    to our model reproduces HF's forward; because RoPE sees only offsets, the real tokens' logits
    move only by rounding (measured about 1e-7)."""
    ours, theirs = build_pair(CONFIGS["gqa"], seed=5)
    ids, mask = left_padded([12, 6], 12)
    hf_plain = theirs(input_ids=ids, attention_mask=mask).logits
    arange = torch.arange(12).expand(2, 12)
    ours_arange = ours(ids, attention_mask=mask, position_ids=arange).logits
    real = mask.bool()
    assert (ours_arange - hf_plain).abs()[real].max() <= LOGIT_TOL
    ours_default = ours(ids, attention_mask=mask).logits
    assert (ours_default - hf_plain).abs()[real].max() <= LOGIT_TOL  # relative positions: same up to rounding


@torch.no_grad()
def test_padded_prefill_then_cached_decode_equals_one_pass():
    model = DecoderLM(CONFIGS["gqa"]).eval()
    ids, mask = left_padded([10, 4], 10, seed=2)
    full = model(ids, attention_mask=mask).logits
    cache = model.new_cache()
    steps = [model(ids[:, :6], cache=cache, attention_mask=mask[:, :6]).logits]
    for t in range(6, 10):
        steps.append(model(ids[:, t : t + 1], cache=cache, attention_mask=mask[:, : t + 1]).logits)
    real = mask.bool()
    assert (torch.cat(steps, dim=1) - full).abs()[real].max() <= LOGIT_TOL


def test_attention_mask_shape_is_checked():
    model = DecoderLM(CONFIGS["mha"])
    with pytest.raises(ValueError, match="attention_mask"):
        model(torch.zeros(2, 5, dtype=torch.long), attention_mask=torch.ones(2, 4, dtype=torch.long))
