import pytest
import torch

from backend.reference.sampling import next_token_probs, sample_next_token, top_k_filter, top_p_filter

LOGITS = torch.log(torch.tensor([[0.5, 0.2, 0.15, 0.1, 0.05]]))


def test_greedy_is_argmax():
    assert sample_next_token(LOGITS, greedy=True).item() == 0


def test_top_k_keeps_k():
    probs = next_token_probs(LOGITS, top_k=2)
    torch.testing.assert_close(probs, torch.tensor([[5 / 7, 2 / 7, 0, 0, 0]]))


def test_top_p_keeps_smallest_nucleus():
    assert (next_token_probs(LOGITS, top_p=0.6) > 0).sum().item() == 2  # 0.5 < 0.6 <= 0.7
    assert (next_token_probs(LOGITS, top_p=0.5) > 0).sum().item() == 1
    assert (next_token_probs(LOGITS, top_p=1.0) > 0).sum().item() == 5
    assert torch.isfinite(top_p_filter(LOGITS, 0.01)[0, 0])  # the top token always survives


def test_temperature_sharpens_and_flattens():
    cold = next_token_probs(LOGITS, temperature=0.5)
    hot = next_token_probs(LOGITS, temperature=2.0)
    assert cold[0, 0] > 0.5 > hot[0, 0]
    with pytest.raises(ValueError):
        next_token_probs(LOGITS, temperature=0.0)


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
