"""Train the book's model from scratch: `python -m backend.bookmodel.train`.

Seeded end to end (tokenizer, initialisation, batches, samples), two CPU threads, about a
quarter of an hour on a laptop-class CPU. Writes into `--out` (default: the committed
`weights/` folder) the weights, the tokenizer, `config.json`, `metrics.json` and
`MODEL_CARD.md`, and draws the loss curve as an SVG for the book.

`--checkpoints 0,25,50,...` also keeps the weights as they stood after each of those steps
(0: the initialisation) in `OUT/checkpoints/`, in half precision, with a manifest
(`manifest.json`: step, tokens seen, losses, sha256): the training chapter's "What training
changes" reads them. Keeping them draws no random number and touches neither the model nor the
optimiser, so the run with checkpoints is the run without them.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

from backend.reference.config import ModelConfig
from backend.reference.generate import generate
from backend.reference.model import DecoderLM
from backend.reference.training import lr_at as schedule

from . import WEIGHTS_DIR
from .card import loss_curve_svg, model_card
from .checkpoints import DTYPES, FOLDER, MANIFEST, checkpoint_name, write_checkpoint
from .corpus import PACKAGE, PACKAGE_VERSION, split
from .data import encode_articles, random_batch, sequential_batches
from .tokenizer import EOT, train_tokenizer

REPO_ROOT = Path(__file__).resolve().parents[2]
FIGURE = REPO_ROOT / "docs" / "images" / "bookmodel-loss.svg"
SAMPLE_PROMPTS = ("The animal", "In the nineteenth century,", "The city of", "Water is")


@dataclass(frozen=True)
class TrainConfig:
    # the model: Llama-style, tiny (RoPE, RMSNorm, SwiGLU, grouped-query attention)
    vocab_size: int = 4096
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int = 2
    d_ff: int = 384
    seq_len: int = 128
    # the optimisation: AdamW, linear warm-up then cosine decay to min_lr_ratio * lr
    batch_size: int = 16
    steps: int = 1600
    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    # bookkeeping
    eval_every: int = 100
    eval_windows: int = 64  # validation windows scored at each curve point (the final eval uses all)
    seed: int = 0
    threads: int = 2

    def model_config(self) -> ModelConfig:
        return ModelConfig(
            vocab_size=self.vocab_size, d_model=self.d_model, n_layers=self.n_layers,
            n_heads=self.n_heads, n_kv_heads=self.n_kv_heads, d_ff=self.d_ff,
            max_seq_len=self.seq_len, tie_embeddings=True,
        )


def lr_at(step: int, tc: TrainConfig) -> float:
    """The run's schedule: the training chapter's warm-up and cosine (backend/reference/training.py)."""
    return schedule(step, tc.lr, tc.warmup_steps, tc.steps, tc.min_lr_ratio)


@torch.no_grad()
def mean_loss(model: DecoderLM, stream: torch.Tensor, seq_len: int, limit: int | None = None) -> float:
    """Token-weighted mean next-token loss over non-overlapping windows (nats per token)."""
    model.eval()
    total, count = 0.0, 0
    for batch in sequential_batches(stream, 32, seq_len, limit):
        loss = model(batch, labels=batch).loss
        n = batch.numel() - batch.size(0)  # each window predicts seq_len - 1 tokens
        total += loss.item() * n
        count += n
    model.train()
    return total / count


def samples(model: DecoderLM, tok, seed: int, n_new: int = 40) -> list[dict]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    model.eval()
    for prompt in SAMPLE_PROMPTS:
        ids = torch.tensor([[tok.token_to_id(EOT)] + tok.encode(prompt).ids])  # (1, T_prompt)
        steps = min(n_new, model.config.max_seq_len - ids.size(1))  # stay inside the context
        result = generate(model, ids, steps, temperature=0.8, top_k=40, generator=gen)
        text = tok.decode(result.tokens[0, 1:].tolist()).strip()
        out.append({"prompt": prompt, "text": text})
    model.train()
    return out


class Checkpointer:
    """Saves the weights after chosen steps, with their losses, for the book's step slider.

    Only reads the model: the losses are scored in no_grad eval mode (the model has no dropout,
    so eval mode changes nothing it computes) on fixed windows, so no RNG is drawn and no
    parameter or optimiser state moves; the run with checkpoints is bit for bit the run without.
    """

    def __init__(self, steps, out_dir: Path, dtype: str, tc: TrainConfig, log):
        self.steps = sorted(set(steps))
        bad = [s for s in self.steps if not 0 <= s <= tc.steps]
        if bad:
            raise ValueError(f"checkpoint steps must lie in 0..{tc.steps}, got {bad}")
        self.dir = out_dir / FOLDER
        self.dtype, self.tc, self.log = dtype, tc, log
        self.entries: list[dict] = []

    def __call__(self, step: int, model: DecoderLM, train_stream, val_stream) -> None:
        if step not in self.steps:
            return
        tc = self.tc
        entry = {
            "step": step,
            "tokens": step * tc.batch_size * tc.seq_len,  # training tokens seen before these weights
            # both scored alike: the first eval_windows windows of each stream (the curve's val)
            "train_loss": mean_loss(model, train_stream, tc.seq_len, tc.eval_windows),
            "val_loss": mean_loss(model, val_stream, tc.seq_len, tc.eval_windows),
            "file": checkpoint_name(step),
        }
        path = self.dir / entry["file"]
        entry.update(write_checkpoint(model.state_dict(), path, self.dtype, step))
        self.entries.append(entry)
        self.write_manifest()  # after every checkpoint: a run stopped early leaves a record too
        self.log(f"checkpoint {step:5d}  train {entry['train_loss']:.3f}  val {entry['val_loss']:.3f}  "
                 f"-> {path.name}")

    def write_manifest(self, metrics: dict | None = None) -> None:
        """The manifest of the checkpoints so far; with the run's metrics, its final loss too."""
        if not self.entries:
            return
        manifest = {
            "dtype": self.dtype,
            "seed": self.tc.seed, "steps": self.tc.steps,
            "loss_windows": self.tc.eval_windows, "seq_len": self.tc.seq_len,
            **({"final_val_loss": metrics["final"]["val_loss"]} if metrics else {}),
            "checkpoints": self.entries,
        }
        (self.dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def train(tc: TrainConfig, out_dir: Path, figure: Path | None = None, log=print,
          articles: tuple[list, list] | None = None, checkpoints=(),
          checkpoint_dtype: str = "float16") -> dict:
    """Train, evaluate and write everything to out_dir. `articles` (train, val) replaces the
    corpus, so tests can run the same code on a few paragraphs. `checkpoints`: steps whose
    weights are kept too (see Checkpointer)."""
    keep = Checkpointer(checkpoints, out_dir, checkpoint_dtype, tc, log)
    torch.set_num_threads(tc.threads)
    torch.manual_seed(tc.seed)
    started, cpu_started = time.time(), time.process_time()

    train_articles, val_articles = articles if articles is not None else split()
    tok = train_tokenizer((a.text for a in train_articles), tc.vocab_size)
    train_stream = encode_articles(tok, train_articles)
    val_stream = encode_articles(tok, val_articles)
    log(f"corpus: {len(train_articles)} train / {len(val_articles)} val articles, "
        f"{len(train_stream):,} / {len(val_stream):,} tokens")

    cfg = tc.model_config()
    model = DecoderLM(cfg)
    n_params = sum(p.numel() for p in model.parameters())  # the tied embedding counts once
    decay = [p for p in model.parameters() if p.dim() >= 2]  # matrices decay; norm gains do not
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": tc.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=tc.lr, betas=(0.9, 0.95),
    )
    gen = torch.Generator().manual_seed(tc.seed)
    log(f"model: {n_params:,} parameters")
    keep(0, model, train_stream, val_stream)

    curve, window = [], []
    for step in range(tc.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, tc)
        batch = random_batch(train_stream, tc.batch_size, tc.seq_len, gen)  # (B, T)
        loss = model(batch, labels=batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
        opt.step()
        window.append(loss.item())
        keep(step + 1, model, train_stream, val_stream)
        if (step + 1) % tc.eval_every == 0 or step + 1 == tc.steps:
            point = {
                "step": step + 1,
                "tokens": (step + 1) * tc.batch_size * tc.seq_len,
                "train_loss": sum(window) / len(window),  # mean over the steps since the last point
                "val_loss": mean_loss(model, val_stream, tc.seq_len, tc.eval_windows),
            }
            window = []
            curve.append(point)
            log(f"step {point['step']:5d}  train {point['train_loss']:.3f}  val {point['val_loss']:.3f}  "
                f"lr {lr_at(step, tc):.2e}  {time.time() - started:6.0f} s")

    n_val_windows = len(val_stream) // tc.seq_len
    final = {
        "val_loss": mean_loss(model, val_stream, tc.seq_len),
        # the same number of windows from the start of the training stream, scored the same way
        "train_loss": mean_loss(model, train_stream, tc.seq_len, n_val_windows),
        "val_tokens": n_val_windows * tc.seq_len,
    }
    final["val_perplexity"] = math.exp(final["val_loss"])
    wall = time.time() - started
    cpu = time.process_time() - cpu_started  # all threads: about threads x wall on an idle machine
    log(f"final: train {final['train_loss']:.4f}  val {final['val_loss']:.4f}  ({wall:.0f} s)")

    metrics = {
        "corpus": {
            "package": PACKAGE, "version": PACKAGE_VERSION,
            "text_licence": "CC BY-SA 4.0 (Wikipedia)",
            "train_articles": len(train_articles), "val_articles": len(val_articles),
            "train_tokens": len(train_stream), "val_tokens": len(val_stream),
        },
        "tokenizer": {"type": "byte-level BPE", "vocab_size": tok.get_vocab_size(), "bos": EOT},
        "model": {"config": cfg.to_dict(), "n_params": n_params},
        "training": {**asdict(tc), "wall_seconds": round(wall, 1),
                     "cpu_seconds": round(cpu, 1), "torch": torch.__version__,
                     "machine": platform.machine()},
        "curve": curve,
        "final": final,
        "samples": samples(model, tok, tc.seed),
    }

    out_dir.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"},
              str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    tok.save(str(out_dir / "tokenizer.json"))
    (out_dir / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    (out_dir / "MODEL_CARD.md").write_text(model_card(metrics))
    keep.write_manifest(metrics)
    if figure is not None:
        figure.parent.mkdir(parents=True, exist_ok=True)
        figure.write_text(loss_curve_svg(metrics))
    return metrics


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=WEIGHTS_DIR, help="folder for weights and metrics")
    parser.add_argument("--steps", type=int, default=TrainConfig.steps)
    parser.add_argument("--seed", type=int, default=TrainConfig.seed)
    parser.add_argument("--eval-every", type=int, default=TrainConfig.eval_every)
    parser.add_argument("--figure", type=Path, default=None,
                        help=f"loss-curve SVG (default: {FIGURE.relative_to(REPO_ROOT)} when --out is the "
                             "committed weights folder, else OUT/loss.svg)")
    parser.add_argument("--checkpoints", type=_steps, default=(),
                        help="comma-separated steps whose weights are kept too, e.g. 0,25,50,100 "
                             "(0 is the initialisation)")
    parser.add_argument("--checkpoint-dtype", choices=sorted(DTYPES), default="float16",
                        help="storage precision of the kept checkpoints")
    args = parser.parse_args(argv)
    tc = TrainConfig(steps=args.steps, seed=args.seed, eval_every=args.eval_every)
    figure = args.figure or (FIGURE if args.out.resolve() == WEIGHTS_DIR else args.out / "loss.svg")
    train(tc, args.out, figure, log=lambda msg: print(msg, flush=True),
          checkpoints=args.checkpoints, checkpoint_dtype=args.checkpoint_dtype)


def _steps(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated step numbers, got {text!r}") from None


if __name__ == "__main__":
    main()
