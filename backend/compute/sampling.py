"""Widget: a trained model's next-token distribution, and what sampling keeps of it.

The prompt runs through the book's model (`backend/bookmodel`, a 4-layer Llama-style decoder
trained on Wikipedia text) or SmolLM2-135M (`backend/smollm2`); the last position's logits go
through temperature, then top-k, then top-p (`backend.reference.sampling`), and a short
continuation is drawn with the same settings and a seeded generator
(`backend.reference.generate`). The same forward also measures two things the chapter needs: the
logits tensor with and without ``logits_to_keep``, and the loss with labels passed right and
shifted twice.
"""

from __future__ import annotations

import html
import math

import torch

from backend.compute.spec import Output, Param, ParamError, WidgetSpec, sampling_params, seed_param
from backend.compute.style import COLORS
from backend.reference.generate import generate
from backend.reference.model import IGNORE_INDEX, next_token_loss
from backend.reference.sampling import (
    apply_temperature,
    next_token_probs,
    top_k_filter,
    top_p_filter,
)

MAX_CHARS = 300
MAX_TOKENS = 64  # prompt tokens after tokenization (BOS included): bounds every request's work
NEW_TOKENS = 12  # the continuation's length
SHOW = 15  # bars in the figure
PROMPT = "The river flows through the"

SPEC = WidgetSpec(
    name="sampling",
    try_next=(
        "Lower `temperature` towards 0.1 and the distribution piles onto the most likely token; "
        "raise it to 3 and it flattens. Then set `top_k` to 5: only five tokens keep any "
        "probability."
    ),
    title="Temperature, top-k and top-p on a real next-token distribution",
    description="A trained model's distribution for the token after the prompt, what each "
                "sampling setting keeps of it, and a short continuation drawn with those settings.",
    params=(
        Param("prompt", "prompt", "text", default=PROMPT, max_length=MAX_CHARS,
              help=f"Any English text; at most {MAX_TOKENS} tokens after tokenization (48 for "
                   "SmolLM2-135M)."),
        *sampling_params(temperature=1.0, top_p=1.0, temperature_max=3.0, top_k_max=200),
        seed_param(999, help="Seeds the generator that draws the continuation."),
        Param("model", "model", "choice", default="book", options=("book", "smollm2"),
              option_labels=("the book's model", "SmolLM2-135M, trained"),
              help="book: the book's 4-layer decoder, trained on Wikipedia summaries. smollm2: "
                   "SmolLM2-135M, a 30-layer Llama trained on trillions of tokens."),
    ),
    outputs=(
        Output("top_token", "most likely next token", ""),
        Output("kept_tokens", "tokens no filter cut", ",d"),
        Output("drawable_tokens", "tokens that can be drawn (probability above 0)", ",d"),
        Output("entropy", "entropy after the settings", ".3f", "nats"),
        Output("entropy_raw", "entropy at τ = 1, no cut", ".3f", "nats"),
        Output("continuation", "continuation", ""),
        Output("n_prompt_tokens", "prompt tokens (BOS included)", "d"),
        Output("loss_right", "loss, labels = input_ids", ".2f", "nats"),
        Output("loss_off_by_two", "loss, labels shifted twice", ".2f", "nats"),
        Output("loss_right_same", "loss, labels right, same positions", ".2f", "nats"),
        Output("logits_bytes_full", "logits, every position", ",d", "bytes"),
        Output("logits_bytes_last", "logits, logits_to_keep=1", ",d", "bytes"),
    ),
    bake=(
        {},
        {"temperature": 0.5}, {"temperature": 2.0},
        {"top_k": 5}, {"top_k": 40},
        {"top_p": 0.5}, {"top_p": 0.9},
        {"seed": 1}, {"seed": 2},
        {"model": "smollm2"}, {"model": "smollm2", "temperature": 0.5},
        {"model": "smollm2", "top_p": 0.9},
    ),
    cost_hint="heavy",
    warm=lambda point: point["model"] == "book",  # SmolLM2 loads on a reader's first ask
)

def _book():
    from backend.bookmodel.load import shared_model

    return shared_model()


def _smollm2():
    from backend.smollm2.load import model

    return model()


def encode(prompt: str, model: str = "book") -> list[int]:
    if model == "smollm2":
        from backend.smollm2.tokens import encode as smollm2_ids

        return smollm2_ids(prompt)  # <|endoftext|> first too; refuses past its own limit
    from backend.bookmodel.tokenizer import EOT

    _, tok = _book()
    ids = [tok.token_to_id(EOT)] + tok.encode(prompt).ids  # BOS, as every training article began
    if len(ids) > MAX_TOKENS:
        raise ParamError(f"'prompt' is {len(ids)} tokens long; the limit is {MAX_TOKENS} tokens. "
                         "Try a shorter prompt.", "prompt")
    return ids


def _tick(token: str) -> str:
    """A token as a tick label: spaces as ␣, a newline as ↵ (a byte piece, "bytes e5 b7", as it
    is), and HTML shown as text."""
    if not token.startswith("bytes "):
        token = token.replace(" ", "␣").replace("\n", "↵") or "␣"
    return html.escape(token, quote=False)


def _entropy(p: torch.Tensor) -> float:
    nz = p[p > 0]
    return max(0.0, float(-(nz * nz.log()).sum()))  # one token left: 0, not -0.000


def kept_by_filters(logits: torch.Tensor, temperature: float, k: int | None, p: float | None) -> int:
    """How many tokens the filters leave drawable (finite logits), in the order sampling applies
    them. Counted on the logits, not on the probabilities: at a low temperature a float32 softmax
    rounds the far tail to exactly 0, which is underflow, not a cut."""
    x = apply_temperature(logits.float(), temperature)
    if k is not None:
        x = top_k_filter(x, k)
    if p is not None:
        x = top_p_filter(x, p)
    return int(torch.isfinite(x).sum())


@torch.no_grad()
def compute(params: dict) -> dict:
    from backend.bookmodel.tokenizer import token_text

    trained = params["model"] == "smollm2"
    model, tok = _smollm2() if trained else _book()
    ids = torch.tensor([encode(params["prompt"], params["model"])])  # (1, T)
    T, k, p, temp = ids.size(1), params["top_k"] or None, params["top_p"], params["temperature"]
    top_p = None if p >= 1 else p

    full = model(ids).logits  # (1, T, V): every position, as in training
    last = model(ids, logits_to_keep=1).logits  # (1, 1, V): what generation needs
    raw = next_token_probs(last[:, -1], 1.0)[0]  # (V,)
    probs = next_token_probs(last[:, -1], temp, k, top_p)[0]  # (V,) after the settings

    loss_right = loss_twice = loss_same = None
    if T >= 3:  # labels = input_ids, shifted once inside; shifted again by hand = off by two
        twice = torch.cat((ids[:, 1:], torch.full((1, 1), IGNORE_INDEX)), dim=1)
        loss_right, loss_twice = float(next_token_loss(full, ids)), float(next_token_loss(full, twice))
        # the off-by-two scores one position fewer (its last label is padding); the right labels
        # on exactly those positions compare like with like
        same = ids.clone()
        same[:, -1] = IGNORE_INDEX
        loss_same = float(next_token_loss(full, same))

    gen = torch.Generator().manual_seed(params["seed"])
    out = generate(model, ids, NEW_TOKENS, temperature=temp, top_k=k, top_p=top_p, generator=gen)
    continuation = tok.decode(out.tokens[0, T:].tolist())
    if trained:  # SmolLM2's tokenizer: a piece of a character shows as its bytes
        from backend.smollm2.tokens import piece as name_of
    else:
        name_of = token_text

    order = torch.argsort(raw, descending=True)[:SHOW]
    rows = [{"token": name_of(tok, int(i)), "id": int(i), "prob_raw": float(raw[i]),
             "prob": float(probs[i])} for i in order]
    kept = kept_by_filters(last[:, -1], temp, k, top_p)
    values = {
        "probs": rows, "top_token": rows[0]["token"], "kept_tokens": kept,
        "entropy": _entropy(probs), "entropy_raw": _entropy(raw),
        "max_entropy": math.log(raw.numel()), "vocab_size": raw.numel(),
        "continuation": continuation, "n_new_tokens": NEW_TOKENS, "n_prompt_tokens": T,
        "logits_shape_full": list(full.shape), "logits_shape_last": list(last.shape),
        "logits_bytes_full": full.nelement() * full.element_size(),
        "logits_bytes_last": last.nelement() * last.element_size(),
        "loss_right": loss_right, "loss_off_by_two": loss_twice, "loss_right_same": loss_same,
        "n_scored_right": T - 1, "n_scored_off_by_two": T - 2,
        "underflow_tokens": kept - int((probs > 0).sum()),
        "drawable_tokens": int((probs > 0).sum()),
        "top_prob": rows[0]["prob_raw"],
    }
    labels = [_tick(r["token"]) for r in rows]
    fig = {
        "data": [
            {"type": "bar", "name": "model (τ = 1, no cut)", "x": labels,
             "y": [r["prob_raw"] for r in rows], "marker": {"color": COLORS["guide"]},
             "hovertemplate": "%{x}: %{y:.3f}<extra>model</extra>"},
            {"type": "bar", "name": "sampled from", "x": labels, "y": [r["prob"] for r in rows],
             "marker": {"color": COLORS["scaled"]},
             "hovertemplate": "%{x}: %{y:.3f}<extra>sampled from</extra>"},
        ],
        "layout": {
            "barmode": "group",
            "title": {"text": f"Next token: {values['drawable_tokens']:,} of {raw.numel():,} "
                              "can be drawn"},
            "xaxis": {"title": {"text": f"the model's {SHOW} most likely tokens", "standoff": 12},
                      "tickangle": -40, "automargin": True},
            "yaxis": {"title": {"text": "probability"}, "rangemode": "tozero", "automargin": True},
            "legend": {"orientation": "h", "y": 1.02, "x": 0, "yanchor": "bottom"},
            "margin": {"l": 60, "r": 20, "t": 80, "b": 90},
        },
        # phones: a smaller title, the legend on its own line below it, no x-axis title (the
        # tick labels say what the bars are)
        "narrow": {"title": {"font": {"size": 12}, "y": 0.98, "yanchor": "top"},
                   "legend": {"font": {"size": 10}}, "xaxis": {"title": {"text": ""}},
                   "margin": {"t": 90}},
    }
    n = values["drawable_tokens"]
    summary = (f"The most likely next token is “{_tick(rows[0]['token'])}” at "
               f"{rows[0]['prob_raw']:.1%}. With these settings {n:,} "
               f"{'token' if n == 1 else 'tokens'} can be drawn "
               f"(entropy {values['entropy']:.2f} "
               f"nats, against {values['entropy_raw']:.2f} untouched); the model continued: "
               f"“{continuation}”.")
    table = {
        "caption": f"The {SHOW} most likely next tokens, before and after the sampling settings",
        "columns": ["token", "model probability", "probability sampled from"],
        "rows": [[r["token"], f"{r['prob_raw']:.4f}", f"{r['prob']:.4f}"] for r in rows],
    }
    return {"values": values, "figure": fig, "summary": summary, "table": table}
