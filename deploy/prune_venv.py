"""Take out of the image's virtual environment what the server never imports or runs.

    python deploy/prune_venv.py /opt/venv [--dry-run]

Run in the Dockerfile's `pruned` stage, after every requirement is installed and before the
venv is copied into the final image (the book's build stage keeps the whole venv). Each entry
says why it can go; each is a path that must exist, so a torch or pip upgrade that moves
something fails the build instead of silently shipping it again. Shared libraries lose their
static symbol tables (`strip --strip-unneeded`: the dynamic symbols the loader links against
stay), as most wheels already ship them.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

# (path under site-packages, why the server does without it)
REMOVE = (
    ("torch/test", "PyTorch's C++ test binaries and data"),
    ("torch/include", "C++ headers, for compiling extensions; the server compiles nothing"),
    ("pip", "the image installs nothing at run time"),
    ("hf_xet", "huggingface_hub's Xet download backend: the image runs with HF_HUB_OFFLINE=1"),
    ("networkx", "graph algorithms for torch.compile's partitioner; the server compiles nothing"),
)
# torch/bin: protoc and the C++ test runners go; torch_shm_manager stays (`import torch`
# checks that it is there)
TORCH_BIN_KEEP = ("torch_shm_manager",)

# transformers ships some 560 model families, each compiled to bytecode at install time; the
# book loads Llama (the parity check), BERT (the MiniLM encoder) through the auto classes, so
# only those keep their bytecode. The others keep their source: an instructor's own checkpoint
# of another family (BOOK_HF_CHECKPOINT) still loads, compiled in memory when imported.
KEEP_BYTECODE = ("auto", "llama", "bert")
# Shared libraries whose symbol tables are stripped: PyTorch's own two big ones (93 MiB of
# symbols). Not the libraries auditwheel grafted into wheels (numpy.libs/, *.libs/): patchelf
# rewrote their headers, and stripped they no longer load (numpy's OpenBLAS: "ELF load
# command address/offset not page-aligned", seen in this image).
STRIP = ("torch/lib/libtorch_cpu.so", "torch/lib/libtorch_python.so")


def site_packages(venv: Path) -> Path:
    (found,) = venv.glob("lib/python3*/site-packages")
    return found


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def drop(paths: list[Path], what: str, dry_run: bool) -> int:
    """Remove files and folders, say what and how much; returns the bytes."""
    n = sum(size(p) for p in paths)
    print(f"{n / 2**20:7.1f} MiB  {what}")
    if not dry_run:
        for p in paths:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("venv", type=Path)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    site = site_packages(args.venv)
    saved = 0
    for rel, why in REMOVE:
        path = site / rel
        if not path.exists():
            sys.exit(f"prune_venv: {path} is not there; update deploy/prune_venv.py ({why})")
        n = size(path)
        saved += n
        print(f"{n / 2**20:7.1f} MiB  {rel}: {why}")
        if not args.dry_run:
            shutil.rmtree(path)
            if "/" not in rel:  # a whole package: its metadata and scripts go with it
                for meta in site.glob(f"{rel}-*.dist-info"):
                    shutil.rmtree(meta)
                for script in (args.venv / "bin").glob(f"{rel}*"):
                    script.unlink()
    tools = [p for p in (site / "torch/bin").iterdir() if p.name not in TORCH_BIN_KEEP]
    saved += drop(tools, f"torch/bin but {', '.join(TORCH_BIN_KEEP)}: protoc, C++ test runners",
                  args.dry_run)
    caches = [p for p in (site / "transformers/models").glob("*/__pycache__")
              if p.parent.name not in KEEP_BYTECODE]
    saved += drop(caches, f"bytecode of {len(caches)} transformers model families the book "
                          f"does not load", args.dry_run)
    libs = [site / rel for rel in STRIP]
    missing = [str(p) for p in libs if not p.is_file()]
    if missing:
        sys.exit(f"prune_venv: {missing} not there; update deploy/prune_venv.py")
    before = sum(p.stat().st_size for p in libs)
    if not args.dry_run:
        subprocess.run(["strip", "--strip-unneeded", *map(str, libs)], check=True)
    after = sum(p.stat().st_size for p in libs)
    saved += before - after
    print(f"{(before - after) / 2**20:7.1f} MiB  symbol tables of {', '.join(STRIP)}")
    print(f"{saved / 2**20:7.1f} MiB  in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
