"""From a model's tokens to the sentence's words, in any script (the attention map reads rows
by word).

Unicode does the segmentation, through the `regex` package: grapheme clusters (`\\X`, UAX #29:
a letter with its combining marks, an emoji with its skin tone or a ZWJ family, a flag) and
script properties, instead of matching character names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import regex
import torch

if TYPE_CHECKING:
    from backend.compute.attention_models import Encoded

# Scripts written without spaces between words: each character (a grapheme: Thai vowel and tone
# marks and Japanese voicing marks stay on their letter) is its own "word" here; the widget
# cannot tell where a Chinese, Japanese or Thai word ends without a dictionary.
_NO_SPACE = (r"\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Bopomofo}\p{scx=Thai}"
             r"\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}\p{scx=Tai_Tham}\p{scx=New_Tai_Lue}")
_LETTER = rf"[[\p{{L}}\p{{N}}_]--[{_NO_SPACE}]]"  # of a spaced word: Latin, Hebrew, Hangul, digits
_MARKS = r"[\p{M}\p{Emoji_Modifier}\u200c\u200d]*"  # combining signs and joiners stay on it
_WORD = regex.compile(
    rf"(?=[{_NO_SPACE}])\X"                                         # one character, one word
    rf"|(?:{_LETTER}{_MARKS})+(?:['’](?:{_LETTER}{_MARKS})+)*"        # a spaced word, "didn't"
    r"|(?!\s)\X",                                                   # anything else: a grapheme
    regex.V1)


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where the sentence's words are, as character offsets.

    A word is a run of letters and digits (with apostrophes inside, "didn't", and combining
    marks, as in Hindi or Thai); a character of a script written without spaces (Han, kana,
    Thai, ...) is a word on its own; any other non-space grapheme (punctuation, an emoji with
    its modifiers, a flag) is its own word.
    """
    return [m.span() for m in _WORD.finditer(text) if not m.group().isspace()]


def words_in(text: str) -> list[str]:
    return [text[a:b] for a, b in word_spans(text)]


def word_of_tokens(text: str, e: Encoded) -> tuple[list[str], list[int | None]]:
    """The sentence's words, and for each token the word it belongs to (None for specials).

    A token belongs to the word sharing most of its non-space characters; that also copes
    with byte-level pieces of one character, which all carry the character's offsets. Words
    that one token spans (two Chinese characters merged into one token) are joined into one:
    no weight can be told apart below a token.
    """
    spans = word_spans(text)
    for a, b in (s for s, special in zip(e.spans, e.special) if not special):
        inside = [k for k, (wa, wb) in enumerate(spans) if min(b, wb) - max(a, wa) > 0]
        if len(inside) > 1:
            spans[inside[0] : inside[-1] + 1] = [(spans[inside[0]][0], spans[inside[-1]][1])]
    words = [text[a:b] for a, b in spans]
    owner: list[int | None] = []
    for special, (a, b) in zip(e.special, e.spans):
        best, best_overlap = None, 0
        if not special:
            for j, (wa, wb) in enumerate(spans):
                overlap = min(b, wb) - max(a, wa)
                if overlap > best_overlap:
                    best, best_overlap = j, overlap
        owner.append(best)
    return words, owner


def word_weights(row: torch.Tensor, owner: list[int | None], n_words: int) -> list[float]:
    """A row of token weights summed into a row of word weights: a word's pieces add up."""
    out = [0.0] * n_words
    for i, o in enumerate(owner):
        if o is not None:
            out[o] += float(row[i])
    return out
