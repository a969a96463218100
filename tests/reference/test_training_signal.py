"""backend/reference/training_signal.py against hand arithmetic, PyTorch's own loss, and the
book's decoder run one prefix at a time."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from backend.reference import training_signal as ts
from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM


def test_handout_counts_at_512_tokens_and_15_percent():
    """003: 'decoder-only: 511 predictions / encoder-style: 77 predictions'. 512 x 0.15 = 76.8."""
    assert ts.decoder_predictions(512) == 511
    assert ts.encoder_predictions(512, 0.15) == 77
    assert ts.expected_ratio(512, 0.15) == pytest.approx(511 / 76.8, abs=1e-12)
    assert f"{ts.expected_ratio(512, 0.15):.1f}" == "6.7"   # what the handout prints
    assert f"{511 / 77:.1f}" == "6.6"                       # with the 77 it prints beside it


def test_exercise_06_counts():
    """46 tokens: 45 against round(6.9) = 7; 57 tokens: 56 against round(8.55) = 9."""
    assert (ts.decoder_predictions(46), ts.encoder_predictions(46, 0.15)) == (45, 7)
    assert (ts.decoder_predictions(57), ts.encoder_predictions(57, 0.15)) == (56, 9)
    assert f"{ts.expected_ratio(46, 0.15):.1f}" == f"{ts.expected_ratio(57, 0.15):.1f}" == "6.5"


@pytest.mark.parametrize("n", [2, 3, 10, 46, 57, 100, 512, 1000, 4096])
@pytest.mark.parametrize("rate", [0.01, 0.15, 0.33, 0.5])
def test_labels_give_the_counts_and_the_loss_sees_exactly_them(n, rate):
    ids = torch.randint(0, 50, (n,), generator=torch.Generator().manual_seed(n))
    dec = ts.decoder_labels(ids)
    enc = ts.encoder_labels(ids, rate, torch.Generator().manual_seed(1))
    assert ts.predictions(dec) == ts.decoder_predictions(n) == n - 1
    k = ts.predictions(enc)
    assert k == ts.encoder_predictions(n, rate)
    assert abs(k - n * rate) <= 0.5 + 1e-9 or (k == 1 and n * rate < 0.5)  # BERT keeps >= 1
    assert torch.equal(dec[:-1], ids[1:])  # position t's target is token t + 1
    kept = enc != ts.IGNORE_INDEX
    assert torch.equal(enc[kept], ids[kept])  # a hidden token's target is itself
    # Oracle: PyTorch's summed cross-entropy with ignore_index has one term per counted label.
    logits = torch.zeros(n, 50)  # uniform: every term is log 50
    for labels, count in ((dec, n - 1), (enc, k)):
        total = F.cross_entropy(logits, labels, ignore_index=ts.IGNORE_INDEX, reduction="sum")
        assert total.item() == pytest.approx(count * torch.log(torch.tensor(50.0)).item(), rel=1e-6)


def test_three_hundred_token_target_needs_301_passes_with_an_end_token():
    """CampusX's count: 300 target tokens + the end-of-sequence token = 301 predictions."""
    assert ts.sequential_passes(300) == 301
    assert ts.sequential_passes(300, end_token=False) == 300


class Logits(nn.Module):
    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, ids):
        return self.lm(ids).logits


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=40, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_seq_len=512)
    return Logits(DecoderLM(cfg).eval())


def test_one_teacher_forced_pass_equals_one_pass_per_prefix(tiny):
    ids = torch.randint(0, 40, (2, 21), generator=torch.Generator().manual_seed(3))
    counted = ts.CountingModel(tiny)
    with torch.no_grad():
        one = ts.teacher_forced(counted, ids)
        assert counted.passes == 1
        many = ts.prefix_by_prefix(counted, ids)
    assert counted.passes == 1 + 21
    torch.testing.assert_close(one, many, atol=1e-5, rtol=1e-5)


def test_free_running_makes_one_pass_per_token(tiny):
    """Without teacher forcing a 300-token target plus its end token takes 301 passes."""
    counted = ts.CountingModel(tiny)
    start = torch.zeros(1, 1, dtype=torch.long)  # the start-of-sequence token
    with torch.no_grad():
        out = ts.free_running(counted, start, steps=ts.sequential_passes(300))
    assert counted.passes == 301 and out.shape == (1, 302)
    with torch.no_grad():  # each guess is what the one-pass forward of the final text predicts
        assert torch.equal(tiny(out[:, :-1]).argmax(-1)[0], out[0, 1:])


def test_span_targets_follow_t5s_noise_mask_arithmetic():
    """T5's random_spans_noise_mask: noise = round(n * density), spans = round(noise / 3.0), both
    with numpy's round (half to even, like Python's). 512 tokens: 77 noise tokens in 26 spans."""
    import numpy as np

    for n in (2, 10, 46, 57, 512, 4096):
        noise = max(1, int(np.round(n * 0.15)))
        spans = max(1, int(np.round(noise / 3.0)))
        assert ts.span_targets(n) == (noise, spans, noise + spans)
    assert ts.span_targets(512) == (77, 26, 103)


def test_masked_count_rounds_half_to_even():
    assert ts.masked_count(5, 0.5) == 2 and ts.masked_count(7, 0.5) == 4  # 2.5 -> 2, 3.5 -> 4
    assert ts.masked_count(10, 0.01) == 1                                  # at least one


@pytest.mark.parametrize("n_src, n_tgt", [(1, 1), (5, 3), (40, 17)])
def test_attention_pairs_against_hand_counts(n_src, n_tgt):
    n = n_src + n_tgt
    assert ts.attention_pairs(n_src, n_tgt, skip_masked=False) == {
        "decoder_only": n * n, "encoder_decoder": n_src**2 + n_tgt**2 + n_tgt * n_src}
    assert ts.attention_pairs(n_src, n_tgt, skip_masked=True) == {
        "decoder_only": n * (n + 1) // 2,
        "encoder_decoder": n_src**2 + n_tgt * (n_tgt + 1) // 2 + n_tgt * n_src}
