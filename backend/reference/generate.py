"""Autoregressive generation, with and without the KV cache.

Without a cache every step re-runs the model on the whole sequence so far (1 + 2 + ... + n
token-steps for n new tokens from a one-token prompt); with it, the prompt is processed once
(prefill) and each later step feeds only the newest token (decode).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .model import DecoderLM
from .sampling import sample_next_token


@dataclass
class GenerationResult:
    tokens: torch.Tensor  # (B, T_prompt + n_new): prompt followed by the generated ids
    step_logits: torch.Tensor  # (B, n_new, V): the logits each new token was drawn from
    tokens_processed: int  # positions run through the model, summed over steps (per sequence)


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
) -> GenerationResult:
    tokens = input_ids  # (B, T_prompt)
    cache = model.new_cache() if use_cache else None
    step_input = tokens  # the first step (prefill) always sees the whole prompt
    all_logits, processed = [], 0
    for _ in range(max_new_tokens):
        out = model(step_input, cache=cache, logits_to_keep=1)
        processed += step_input.size(1)
        logits = out.logits[:, -1, :]  # (B, V)
        next_id = sample_next_token(logits, greedy, temperature, top_k, top_p, generator)  # (B, 1)
        tokens = torch.cat((tokens, next_id), dim=1)
        all_logits.append(logits)
        step_input = next_id if use_cache else tokens  # cached: only the new token is new work
    return GenerationResult(tokens, torch.stack(all_logits, dim=1), processed)
# --8<-- [end:generate]


def token_steps(n_new: int, use_cache: bool, prompt_len: int = 1) -> int:
    """Positions processed to generate n_new tokens, the count ``generate`` reports, in closed form."""
    if use_cache:
        return prompt_len + max(n_new - 1, 0)
    return sum(prompt_len + i for i in range(n_new))
