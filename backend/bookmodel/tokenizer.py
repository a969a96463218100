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


def token_bytes(tok: Tokenizer, token_id: int) -> bytes:
    """The bytes a (non-special) byte-level token stands for."""
    return bytes(_BYTES[c] for c in tok.id_to_token(token_id))


def token_text(tok: Tokenizer, token_id: int) -> str:
    """One token on its own as text, the leading space dropped.

    A byte-level token can hold part of a character (an emoji is four bytes); such a token
    on its own is shown as its bytes in hex, e.g. <F0 9F>. To label a whole sentence's tokens
    use `readable_pieces`, which shows the character each piece belongs to instead.
    """
    piece = tok.id_to_token(token_id)
    if piece == EOT:
        return EOT
    raw = token_bytes(tok, token_id)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "<" + " ".join(f"{b:02X}" for b in raw) + ">"
    return text.strip() or text


def _utf8_length(lead: int) -> int:
    if lead < 0x80:
        return 1
    if lead >> 5 == 0b110:
        return 2
    if lead >> 4 == 0b1110:
        return 3
    if lead >> 3 == 0b11110:
        return 4
    return 1  # a stray continuation byte: shown on its own


def readable_pieces(pieces: list[bytes]) -> list[str]:
    """Display labels for consecutive byte-level pieces of one text (labels only).

    The model still sees its tokens; a reader sees whole characters. A piece that holds only
    part of a character is labelled with that character, with "…" on the side where the
    character continues in the neighbouring piece: an emoji split in two reads "🙂…", "…🙂".
    Bytes that are not valid UTF-8 at all are shown in hex.
    """
    data = b"".join(pieces)
    chars: list[str] = []  # one entry per character of the text
    owner: list[int] = []  # for each byte, the character it belongs to
    i = 0
    while i < len(data):
        n = _utf8_length(data[i])
        chunk = data[i : i + n]
        try:
            chars.append(chunk.decode("utf-8"))
        except UnicodeDecodeError:
            n, chunk = 1, data[i : i + 1]
            chars.append(f"<{data[i]:02X}>")
        owner.extend([len(chars) - 1] * len(chunk))
        i += len(chunk)
    labels, start = [], 0
    for piece in pieces:
        end = start + len(piece)
        if not piece:
            labels.append("")
            continue
        first, last = owner[start], owner[end - 1]
        text = "".join(chars[first : last + 1])
        text = text.strip() or "␣"  # a piece that is only a space still needs a visible label
        if start > 0 and owner[start - 1] == first:
            text = "…" + text
        if end < len(data) and owner[end] == last:
            text = text + "…"
        labels.append(text)
        start = end
    return labels
