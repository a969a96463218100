"""Autoregressive generation, with and without the KV cache.

Without a cache every step re-runs the model on the whole sequence so far (1 + 2 + ... + n
token-steps for n new tokens from a one-token prompt); with it, the prompt is processed once
(prefill) and each later step feeds only the newest token (decode).

A batch of prompts of different lengths is left-padded and passed with an ``attention_mask``;
an ``eos_token_id`` stops each row on its own (the row is then filled with ``pad_token_id``),
and generation ends when every row has stopped. Both rules are Hugging Face ``generate``'s,
and the tests compare token for token with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .kv_cache import KVCache
from .model import DecoderLM
from .sampling import check_sampling_args, sample_next_token


@dataclass
class GenerationResult:
    tokens: torch.Tensor  # (B, T_prompt + n_steps): prompt followed by the generated ids
    step_logits: torch.Tensor  # (B, n_steps, V): the logits each new token was drawn from
    tokens_processed: int  # positions run through the model, summed over steps (per sequence)
    finished: torch.Tensor | None = None  # (B,) True where the row emitted eos_token_id
    attention_mask: torch.Tensor | None = None  # (B, T_prompt + n_steps) when a padding mask was given
    cache: KVCache | None = None  # the filled cache of a cached run: T_prompt + n_steps - 1 positions


# --8<-- [start:generate]
@torch.no_grad()
def generate(
    model: DecoderLM,
    input_ids: torch.Tensor,
    max_new_tokens: int,
    use_cache: bool = True,
    greedy: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    eos_token_id: int | None = None,
    pad_token_id: int | None = None,
    attention_mask: torch.Tensor | None = None,
) -> GenerationResult:
    """Up to max_new_tokens steps; a row that emits eos_token_id is finished and is filled with
    pad_token_id (default: the eos id) while the others go on; all rows finished ends the loop.
    ``attention_mask`` (B, T_prompt), 1 = real token, marks left padding of a batched prompt."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
    check_sampling_args(temperature, top_k, top_p)
    pad = eos_token_id if pad_token_id is None else pad_token_id
    tokens = input_ids  # (B, T_prompt)
    B = tokens.size(0)
    cache = model.new_cache() if use_cache else None
    step_input = tokens  # the first step (prefill) always sees the whole prompt
    finished = torch.zeros(B, dtype=torch.bool, device=tokens.device)
    all_logits, processed = [], 0
    for _ in range(max_new_tokens):
        out = model(step_input, cache=cache, logits_to_keep=1, attention_mask=attention_mask)
        processed += step_input.size(1)
        logits = out.logits[:, -1, :]  # (B, V)
        next_id = sample_next_token(logits, greedy, temperature, top_k, top_p, generator)  # (B, 1)
        if eos_token_id is not None:
            next_id = next_id.masked_fill(finished[:, None], pad)  # finished rows only pad
            finished = finished | (next_id[:, 0] == eos_token_id)
        tokens = torch.cat((tokens, next_id), dim=1)
        all_logits.append(logits)
        if attention_mask is not None:
            attention_mask = torch.cat((attention_mask, attention_mask.new_ones(B, 1)), dim=1)
        step_input = next_id if use_cache else tokens  # cached: only the new token is new work
        if finished.all():
            break
    vocab = model.config.vocab_size
    step_logits = torch.stack(all_logits, dim=1) if all_logits else tokens.new_zeros((B, 0, vocab), dtype=torch.float32)
    return GenerationResult(tokens, step_logits, processed,
                            finished if eos_token_id is not None else None, attention_mask, cache)
# --8<-- [end:generate]


# --8<-- [start:token_steps]
def token_steps(n_new: int, use_cache: bool, prompt_len: int = 1) -> int:
    """Positions processed to generate n_new tokens, the count ``generate`` reports, in closed form."""
    if use_cache:
        return prompt_len + max(n_new - 1, 0)
    return sum(prompt_len + i for i in range(n_new))
# --8<-- [end:token_steps]
