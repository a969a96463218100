from backend.reference.context import attention_pairs, growth


def test_the_llm101_context_table():
    # LLM-101 §2: 8,000 / 16,000 / 128,000 tokens are 1x / 2x / 16x the text and 1x / 4x / 256x the work.
    assert growth(8_000, 8_000) == (1.0, 1.0)
    assert growth(16_000, 8_000) == (2.0, 4.0)
    assert growth(128_000, 8_000) == (16.0, 256.0)


def test_pairs_count_every_query_key_pair():
    import torch

    T = 37
    scores = torch.randn(T, 5) @ torch.randn(5, T)  # one score per (query, key)
    assert attention_pairs(T) == scores.numel()
