"""The book model as it stood during training: checkpoints of the run that made `weights/`.

`python -m backend.bookmodel.train --checkpoints 0,25,...` keeps the weights after those steps
(0: the initialisation) with their losses; the book ships them in half precision under
`weights/checkpoints/` with `manifest.json` (step, tokens seen, train and validation loss, each
file's sha256), for the training chapter's step slider. The last one is the shipped model,
rounded to half precision. `shrink` turns a run's checkpoints into the shipped ones:

    python -m backend.bookmodel.checkpoints /tmp/run/checkpoints
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
from functools import cache
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer

from backend.errors import ModelUnavailable
from backend.reference.model import DecoderLM

from . import WEIGHTS_DIR

FOLDER = "checkpoints"  # inside a weights folder
CHECKPOINT_DIR = WEIGHTS_DIR / FOLDER
MANIFEST = "manifest.json"  # in the checkpoints folder, naming its files relative to it
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def checkpoint_name(step: int) -> str:
    return f"step-{step:05d}.safetensors"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_checkpoint(state: dict[str, torch.Tensor], path: Path, dtype: str, step: int) -> dict:
    """One checkpoint file in `dtype` (the tied output head left out, as in model.safetensors);
    its size and sha256 for the manifest. `.to()` copies, so nothing stored aliases a parameter
    that training goes on updating."""
    tensors = {k: v.detach().to(DTYPES[dtype]).contiguous()
               for k, v in state.items() if k != "lm_head.weight"}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={"format": "pt", "step": str(step)})
    path.chmod(0o644)  # save_file leaves it owner-only; an image's server user must read it
    return {"bytes": path.stat().st_size, "sha256": sha256(path)}


# --- reading the shipped checkpoints --------------------------------------------------------

@cache
def manifest(folder: Path = CHECKPOINT_DIR) -> dict:
    return json.loads((folder / MANIFEST).read_text())


def steps(folder: Path = CHECKPOINT_DIR) -> tuple[int, ...]:
    """The steps whose weights are shipped, in order (0 is the initialisation)."""
    return tuple(e["step"] for e in manifest(folder)["checkpoints"])


def entry(step: int, folder: Path = CHECKPOINT_DIR) -> dict:
    for e in manifest(folder)["checkpoints"]:
        if e["step"] == step:
            return e
    raise KeyError(f"no checkpoint of step {step}; the shipped steps are {steps(folder)}")


def load_checkpoint(step: int) -> tuple[DecoderLM, Tokenizer]:
    """The model with step `step`'s weights, through the book's own loader (the shipped
    config and tokenizer; float32 parameters holding the half-precision values)."""
    from .load import load_model

    return load_model(WEIGHTS_DIR, f"{FOLDER}/{entry(step)['file']}")


_LOADING = threading.Lock()


def shared_checkpoint(step: int) -> tuple[DecoderLM, Tokenizer]:
    """A step's model, loaded once per process (every checkpoint is ~5 MB in float32); like
    `load.shared_model`, one load at a time and a failed load not cached."""
    with _LOADING:
        try:
            return _load_shared(step)
        except Exception as exc:
            raise ModelUnavailable(f"the book's step-{step} checkpoint could not be loaded on "
                                   f"this server ({type(exc).__name__}); try again later") from exc


@cache
def _load_shared(step: int) -> tuple[DecoderLM, Tokenizer]:
    return load_checkpoint(step)


# --- from a training run to the shipped files -------------------------------------------------

def score(path: Path, step: int, loss_windows: int) -> dict:
    """A manifest entry for the weights in `path`, scored as the run scores its checkpoints
    (`train.mean_loss` over the first `loss_windows` windows of each split, the run's thread
    count): the same numbers the run would have written. Needs the corpus (a dev dependency)."""
    from .load import load_model
    from .train import TrainConfig, mean_loss

    tc = TrainConfig()
    torch.set_num_threads(tc.threads)
    model, tok = load_model()  # the shipped config and tokenizer
    model.load_state_dict(load_file(str(path)), strict=False)  # then these weights (head: tied)
    losses = {f"{name}_loss": mean_loss(model, stream, tc.seq_len, loss_windows)
              for name, stream in zip(("train", "val"), _streams(), strict=True)}
    return {"step": step, "tokens": step * tc.batch_size * tc.seq_len, **losses,
            "file": path.name, "bytes": path.stat().st_size, "sha256": sha256(path)}


@cache
def _streams() -> tuple[torch.Tensor, torch.Tensor]:
    """The corpus' training and validation splits as token streams, as the run encodes them."""
    from .corpus import split
    from .data import encode_articles
    from .load import load_model

    tok = load_model()[1]
    return tuple(encode_articles(tok, articles) for articles in split())


def run_record(run_dir: Path) -> dict:
    """A run's checkpoints folder as a manifest: the one the run wrote when it finished, else
    (a run stopped early) its checkpoint files scored again, each marked so."""
    if (run_dir / MANIFEST).is_file():
        return json.loads((run_dir / MANIFEST).read_text())
    from .train import TrainConfig

    tc = TrainConfig()
    files = sorted(run_dir.glob("step-*.safetensors"))
    entries = [{**score(f, int(f.stem.split("-")[1]), tc.eval_windows),
                "note": "scored after the run, which stopped before writing its manifest"}
               for f in files]
    dtype = str(next(iter(load_file(str(files[0])).values())).dtype).removeprefix("torch.")
    return {"dtype": dtype, "seed": tc.seed, "steps": tc.steps, "loss_windows": tc.eval_windows,
            "seq_len": tc.seq_len, "checkpoints": entries}


def shrink(run_dir: Path, out: Path = CHECKPOINT_DIR, dtype: str = "float16",
           final_from_shipped: bool = False) -> dict:
    """Store a run's checkpoints (its `checkpoints/` folder) in `dtype` under `out`, with a
    manifest that keeps the run's losses and each source file's sha256. `final_from_shipped`:
    when the run stopped short of its last step, that step is the shipped model (scored the
    same way), and its entry says so."""
    source = run_record(run_dir)
    todo = [(e, run_dir / checkpoint_name(e["step"])) for e in source["checkpoints"]]
    if final_from_shipped and todo[-1][0]["step"] != source["steps"]:
        path = WEIGHTS_DIR / "model.safetensors"
        last = {**score(path, source["steps"], source["loss_windows"]),
                "note": "the shipped model: the re-run had not reached this step"}
        todo.append((last, path))
    if "final_val_loss" not in source:
        from .load import metrics

        source["final_val_loss"] = metrics()["final"]["val_loss"]  # the shipped model's
    entries = []
    for e, src in todo:
        kept = write_checkpoint(load_file(str(src)), out / checkpoint_name(e["step"]), dtype, e["step"])
        entries.append({**{k: e[k] for k in ("step", "tokens", "train_loss", "val_loss")},
                        "file": checkpoint_name(e["step"]), **kept, "source_sha256": e["sha256"],
                        **({"note": e["note"]} if "note" in e else {})})
    shipped = {**{k: v for k, v in source.items() if k != "checkpoints"}, "dtype": dtype,
               "source_dtype": source["dtype"], "checkpoints": entries}
    (out / MANIFEST).write_text(json.dumps(shipped, indent=2) + "\n")
    manifest.cache_clear()
    return shipped


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Store a training run's checkpoints for the book.")
    parser.add_argument("run_dir", type=Path, help="the run's checkpoints folder (OUT/checkpoints)")
    parser.add_argument("--out", type=Path, default=CHECKPOINT_DIR)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float16")
    parser.add_argument("--final-from-shipped", action="store_true",
                        help="the run stopped early: take its last step from the shipped model")
    args = parser.parse_args(argv)
    shipped = shrink(args.run_dir, args.out, args.dtype, args.final_from_shipped)
    total = sum(e["bytes"] for e in shipped["checkpoints"])
    print(f"{len(shipped['checkpoints'])} checkpoints, {total / 2**20:.1f} MiB, in {args.out}")


if __name__ == "__main__":
    main()
