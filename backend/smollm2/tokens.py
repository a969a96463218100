"""SmolLM2's tokens for a reader: a prompt encoded as the widgets run it (after `<|endoftext|>`,
a typed special token read as text, at most MAX_PROMPT tokens), and one token's text as a page
can show it (a piece of a character as its bytes, a newline as ↵)."""

from __future__ import annotations

from functools import lru_cache

from backend.errors import ParamError

MAX_PROMPT = 48  # prompt tokens, <|endoftext|> included: bounds a request's work


def shown(text: str) -> str:
    """A token as a reader can see it: a newline as ↵, a token of spaces as ·."""
    text = text.replace("\n", "↵")
    return text.replace(" ", "·") if text and not text.strip() else text


@lru_cache(maxsize=1)
def byte_of() -> dict[str, int]:
    """Byte-level BPE's alphabet read backwards (GPT-2's scheme, which SmolLM2's tokenizer
    uses): printable bytes stand for themselves, every other byte for the character 256 + its
    place among them."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + i): b for i, b in enumerate(others)}


def piece(tok, i: int) -> str:
    """One token's text; a piece of a character (UTF-8 split across tokens) as its bytes."""
    text = tok.decode([i])
    if "\ufffd" not in text:
        return text
    raw = bytes(byte_of().get(c, 0x3F) for c in tok.convert_ids_to_tokens(i))
    return "bytes " + raw.hex(" ")


def encode(prompt: str) -> list[int]:
    """The prompt's token ids after `<|endoftext|>`; a 400 naming the prompt when it is empty
    or too long."""
    from backend.smollm2.load import model

    _, tok = model()
    body = tok(prompt, split_special_tokens=True)["input_ids"]
    ids = [tok.eos_token_id] + body
    if not body:
        raise ParamError("the prompt gives SmolLM2 no tokens at all", "prompt")
    if len(ids) > MAX_PROMPT:
        raise ParamError(f"'prompt' is {len(ids)} tokens for SmolLM2; the limit is {MAX_PROMPT} "
                         "tokens (<|endoftext|> included). Try a shorter prompt.", "prompt")
    return ids


