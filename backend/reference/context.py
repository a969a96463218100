"""Why a longer context costs more than it says: every token attends to every token.

The score matrix has T x T entries, so doubling the context doubles the text and quadruples
the attention work (LLM-101 §2's 8,000 / 16,000 / 128,000 table).
"""

from __future__ import annotations


# --8<-- [start:context]
def attention_pairs(context_len: int) -> int:
    """Query-key pairs one attention head scores for a context of `context_len` tokens."""
    return context_len * context_len


def growth(context_len: int, base_len: int) -> tuple[float, float]:
    """(x the text, x the attention work) of `context_len` tokens against `base_len` tokens."""
    return context_len / base_len, attention_pairs(context_len) / attention_pairs(base_len)
# --8<-- [end:context]
