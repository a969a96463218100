"""A byte-level BPE tokenizer trained on the corpus (the GPT-2 recipe, at a tiny vocabulary).

Byte-level means any string, emoji and right-to-left scripts included, encodes without an
unknown token; BPE merges frequent byte pairs until the vocabulary is full, so common words
(" it", " the", " animal") end up as one token and rare ones split into pieces.
Sennrich et al. (2016); Radford et al. (2019) for the byte-level variant.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

EOT = "<|endoftext|>"  # separates articles in training; starts every sentence at inference


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)  # "it" mid-sentence and at the start: one token
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # all 256 bytes: nothing is unknown
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def load_tokenizer(path: Path) -> Tokenizer:
    return Tokenizer.from_file(str(path))


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-to-printable-character table, inverted: printable character -> byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1)
    )
    chars, n = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}


_BYTES = _byte_decoder()


def token_text(tok: Tokenizer, token_id: int) -> str:
    """A token as a reader should see it: its bytes as text, the leading space dropped.

    A byte-level token can hold part of a character (an emoji is four bytes); such a token
    is shown as its bytes in hex, e.g. <F0 9F>, instead of a replacement character.
    """
    piece = tok.id_to_token(token_id)
    if piece == EOT:
        return EOT
    raw = bytes(_BYTES[c] for c in piece)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "<" + " ".join(f"{b:02X}" for b in raw) + ">"
    return text.strip() or text
