"""DecoderLM against transformers' LlamaForCausalLM with copied weights (fp32, eager attention)."""

import pytest
import torch

from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM
from backend.reference.parity import build_pair

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
