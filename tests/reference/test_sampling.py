"""Sampling filters against transformers' logits warpers (the oracle), on a Llama-3-sized vocabulary."""

import math

import pytest
import torch
from transformers.generation.logits_process import (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from backend.reference.sampling import (
    apply_temperature,
    next_token_probs,
    sample_next_token,
    top_k_filter,
    top_p_filter,
)

LOGITS = torch.log(torch.tensor([[0.5, 0.2, 0.15, 0.1, 0.05]]))
VOCAB = 128_256  # Llama 3


def big_logits(scale: float, rows: int = 4, seed: int = 0) -> torch.Tensor:
    """(rows, 128256) logits; scale 1 is nearly flat, 8 is peaked (a few dozen tokens hold 90%)."""
    return torch.randn(rows, VOCAB, generator=torch.Generator().manual_seed(seed)) * scale


def hf_kept(warper, logits):
    return torch.isfinite(warper(None, logits.clone()))


def test_greedy_is_argmax():
    assert sample_next_token(LOGITS, greedy=True).item() == 0


def test_top_k_keeps_k():
    probs = next_token_probs(LOGITS, top_k=2)
    torch.testing.assert_close(probs, torch.tensor([[5 / 7, 2 / 7, 0, 0, 0]]))


def test_top_p_keeps_smallest_nucleus():
    assert (next_token_probs(LOGITS, top_p=0.6) > 0).sum().item() == 2  # 0.5 < 0.6 <= 0.7
    assert (next_token_probs(LOGITS, top_p=0.8) > 0).sum().item() == 3  # 0.7 < 0.8 <= 0.85
    assert torch.isfinite(top_p_filter(LOGITS, 0.01)[0, 0])  # the top token always survives
    assert torch.isfinite(top_p_filter(LOGITS, 0.01)).sum().item() == 1


@pytest.mark.parametrize("scale", [1.0, 3.0, 8.0])
def test_top_p_one_keeps_every_token_of_a_large_vocabulary(scale):
    """p = 1 is the whole distribution. A float32 running sum from the most likely token reaches
    1.0 long before the last of 128,256 tokens; a filter built on it dropped up to 96% of them."""
    logits = big_logits(scale)
    assert torch.isfinite(top_p_filter(logits, 1.0)).all()
    torch.testing.assert_close(next_token_probs(logits, top_p=1.0), logits.softmax(-1), atol=0, rtol=0)
    assert hf_kept(TopPLogitsWarper(1.0), logits).all()  # the oracle keeps them all too


@pytest.mark.parametrize("p", [0.5, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("scale", [1.0, 3.0, 8.0])
def test_top_p_cutoff_matches_transformers(scale, p):
    """The same tokens survive as with TopPLogitsWarper, token for token, on 128,256 logits."""
    logits = big_logits(scale, seed=int(10 * scale))
    ours = torch.isfinite(top_p_filter(logits, p))
    assert torch.equal(ours, hf_kept(TopPLogitsWarper(p), logits))
    kept_mass = (logits.softmax(-1) * ours).sum(-1).double()
    assert (kept_mass >= p - 1e-6).all()  # the nucleus really holds at least p


def test_top_p_cutoff_matches_exact_float64_arithmetic():
    """Independent of transformers: the nucleus computed in float64, smallest set with mass >= p."""
    logits = big_logits(3.0, rows=3, seed=5)
    for p in (0.9, 0.95):
        probs = logits.double().softmax(-1)
        sorted_probs, order = probs.sort(-1, descending=True)
        before = sorted_probs.cumsum(-1) - sorted_probs  # mass of all strictly more likely tokens
        keep = (before < p).scatter(-1, order, before < p)
        assert torch.equal(torch.isfinite(top_p_filter(logits, p)), keep)


@pytest.mark.parametrize("k", [1, 40, 1000, VOCAB, VOCAB + 5])
def test_top_k_matches_transformers(k):
    logits = big_logits(3.0)
    assert torch.equal(torch.isfinite(top_k_filter(logits, k)), hf_kept(TopKLogitsWarper(k), logits))


@pytest.mark.parametrize("t", [0.3, 1.0, 1.7])
def test_temperature_matches_transformers(t):
    logits = big_logits(3.0, rows=2)
    theirs = TemperatureLogitsWarper(t)(None, logits.clone())
    torch.testing.assert_close(apply_temperature(logits, t), theirs, atol=0, rtol=0)


def test_whole_chain_matches_transformers():
    """temperature -> top-k -> top-p, the order transformers' generate applies them."""
    logits = big_logits(3.0, seed=7)
    warpers = [TemperatureLogitsWarper(0.7), TopKLogitsWarper(5000), TopPLogitsWarper(0.9)]
    theirs = logits.clone()
    for w in warpers:
        theirs = w(None, theirs)
    torch.testing.assert_close(next_token_probs(logits, 0.7, 5000, 0.9), theirs.softmax(-1), atol=0, rtol=0)


def test_temperature_sharpens_and_flattens():
    cold = next_token_probs(LOGITS, temperature=0.5)
    hot = next_token_probs(LOGITS, temperature=2.0)
    assert cold[0, 0] > 0.5 > hot[0, 0]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(temperature=0.0), "temperature"),
        (dict(temperature=-1.0), "temperature"),
        (dict(temperature=math.nan), "temperature"),
        (dict(temperature=math.inf), "temperature"),
        (dict(top_k=0), "top_k"),
        (dict(top_k=-3), "top_k"),
        (dict(top_k=2.5), "top_k"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=-0.1), "top_p"),
        (dict(top_p=1.01), "top_p"),
        (dict(top_p=math.nan), "top_p"),
    ],
)
def test_invalid_settings_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        next_token_probs(LOGITS, **kwargs)
    with pytest.raises(ValueError, match=name):
        sample_next_token(LOGITS, **kwargs)
    with pytest.raises(ValueError, match=name):
        sample_next_token(LOGITS, greedy=True, **kwargs)  # greedy ignores them, but still refuses nonsense
    single = {"temperature": apply_temperature, "top_k": top_k_filter, "top_p": top_p_filter}[name]
    with pytest.raises(ValueError, match=name):
        single(LOGITS, next(iter(kwargs.values())))


def test_seeded_generator_is_reproducible():
    draws = [
        [sample_next_token(LOGITS, generator=g).item() for _ in range(20)]
        for g in (torch.Generator().manual_seed(3), torch.Generator().manual_seed(3))
    ]
    assert draws[0] == draws[1]


def test_filters_in_vocabulary_order():
    logits = torch.tensor([[0.0, 3.0, 1.0, 2.0]])
    assert torch.isinf(top_k_filter(logits, 2)).tolist() == [[True, False, True, False]]
    assert torch.isinf(top_p_filter(logits, 0.7)).tolist() == [[True, False, True, False]]
