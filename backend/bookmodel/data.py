"""Token streams and batches: the corpus as one long array of ids, cut into random windows."""

from __future__ import annotations

import torch
from tokenizers import Tokenizer

from .corpus import Article
from .tokenizer import EOT


def encode_articles(tok: Tokenizer, articles: list[Article]) -> torch.Tensor:
    """All articles as one stream, each one preceded by <|endoftext|> (the inference-time BOS)."""
    eot = tok.token_to_id(EOT)
    ids: list[int] = []
    for enc in tok.encode_batch([a.text for a in articles]):
        ids.append(eot)
        ids.extend(enc.ids)
    return torch.tensor(ids, dtype=torch.int16 if tok.get_vocab_size() < 2**15 else torch.int32)


def random_batch(stream: torch.Tensor, batch_size: int, seq_len: int, gen: torch.Generator) -> torch.Tensor:
    """batch_size windows of seq_len tokens at random offsets: (B, T) int64."""
    starts = torch.randint(0, len(stream) - seq_len, (batch_size,), generator=gen)
    return torch.stack([stream[s : s + seq_len] for s in starts.tolist()]).long()


def sequential_batches(stream: torch.Tensor, batch_size: int, seq_len: int, limit: int | None = None):
    """Non-overlapping windows in order, for a validation loss that never changes between runs."""
    n = (len(stream) // seq_len) if limit is None else min(limit, len(stream) // seq_len)
    windows = stream[: n * seq_len].view(n, seq_len).long()  # (n, T)
    for i in range(0, n, batch_size):
        yield windows[i : i + batch_size]
