"""Command line: check the book's DecoderLM against Hugging Face's LlamaForCausalLM.

    python -m backend.reference.parity --layers 2 --d-model 64 --heads 8 --kv-heads 2 \
        --d-ff 172 --vocab 1000 --seed 0 --seq-len 16
    python -m backend.reference.parity --preset llama-3-8b --count-only

The last line of stdout is one JSON object (``max_abs_logit_diff``, losses, ``ok``, ...).
Exit status: 0 within tolerance (logits, loss, attention weights, cached and left-padded
logits), 1 outside it, 2 for invalid arguments. Only argument parsing, printing and exit codes
live here; the comparison itself is ``llama_compare.compare``, which returns a ``ParityReport``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from .config import ModelConfig
from .counting import count_parameters
from .llama_compare import (  # noqa: F401  (re-exported: older imports read them from here)
    ATTENTION_TOLERANCE,
    LOGIT_TOLERANCE,
    LOSS_TOLERANCE,
    ParityReport,
    build_pair,
    compare,
    hf_config,
    hf_state_dict,
)
from .presets import DECODER_PRESETS, PRESETS

DEFAULT_MAX_PARAMS = 50_000_000  # two fp32 copies of this many parameters fit comfortably on a laptop
MAX_SEQ_LEN = 4096  # the eager path materializes (B, h, T, T) weights in both models


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m backend.reference.parity",
        description="Compare the book's decoder-only LM with transformers' LlamaForCausalLM on random weights.",
    )
    p.add_argument("--layers", type=int, help="number of decoder blocks L")
    p.add_argument("--d-model", type=int, help="model width d")
    p.add_argument("--heads", type=int, help="query heads h")
    p.add_argument("--kv-heads", type=int, help="key/value heads n_kv (default: = heads; 1 = multi-query)")
    p.add_argument("--d-ff", type=int, help="SwiGLU inner width")
    p.add_argument("--vocab", type=int, help="vocabulary size")
    p.add_argument("--rope-theta", type=float, default=10000.0, help="RoPE base (default 10000)")
    p.add_argument("--norm-eps", type=float, default=1e-5, help="RMSNorm epsilon (default 1e-5)")
    p.add_argument("--tie-embeddings", action="store_true", help="share the embedding and LM-head matrix")
    p.add_argument("--seed", type=int, default=0, help="seed for the weights and the tokens")
    p.add_argument("--seq-len", type=int, default=16, help="tokens per sequence (at least 2)")
    p.add_argument("--batch", type=int, default=2, help="sequences per batch")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32", help="both models' dtype")
    p.add_argument("--max-params", type=int, default=DEFAULT_MAX_PARAMS, help="refuse bigger configs")
    p.add_argument("--preset", choices=DECODER_PRESETS, help="a named real config (only with --count-only)")
    p.add_argument("--count-only", action="store_true", help="print the meta-device parameter count and exit")
    return p


def config_from_args(args: argparse.Namespace) -> ModelConfig:
    """The ModelConfig the arguments describe; ValueError with a readable message if they do not."""
    if args.preset:
        return PRESETS[args.preset]
    missing = [flag for flag, value in (("--layers", args.layers), ("--d-model", args.d_model),
                                        ("--heads", args.heads), ("--d-ff", args.d_ff), ("--vocab", args.vocab))
               if value is None]
    if missing:
        raise ValueError(f"missing {', '.join(missing)} (or pass --preset NAME --count-only)")
    return ModelConfig(
        vocab_size=args.vocab, d_model=args.d_model, n_layers=args.layers, n_heads=args.heads,
        n_kv_heads=args.kv_heads, d_ff=args.d_ff, max_seq_len=max(args.seq_len, 1),
        rope_theta=args.rope_theta, norm_eps=args.norm_eps, tie_embeddings=args.tie_embeddings,
    )


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.preset and not args.count_only:
        parser.error("--preset configs are real model sizes; use them with --count-only")
    if args.count_only and args.seq_len < 1:
        args.seq_len = 1
    if not args.count_only and args.seq_len < 2:
        parser.error("--seq-len must be at least 2 (the loss needs a next token)")
    if args.seq_len > MAX_SEQ_LEN:
        parser.error(f"--seq-len must be at most {MAX_SEQ_LEN}: both models keep (batch, heads, T, T) weights")
    if not 1 <= args.batch <= 64:
        parser.error("--batch must be between 1 and 64")
    try:
        config = config_from_args(args)
    except ValueError as err:
        parser.error(str(err))

    counts = count_parameters(config)
    if args.count_only:
        breakdown = {k: v for k, v in counts.to_dict().items() if k != "total"}
        print(json.dumps({"preset": args.preset, **breakdown, "n_params": counts.total}))
        return 0
    if counts.total > args.max_params:
        parser.error(
            f"this config has {counts.total:,} parameters; comparing needs two float32 copies "
            f"({2 * 4 * counts.total / 2**30:.1f} GiB). Raise --max-params to run it anyway."
        )

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    report = compare(config, args.seed, args.seq_len, args.batch, dtype=getattr(torch, args.dtype))
    print(json.dumps(report.to_dict()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
