"""Whether a built book was built from the tree as it is now, so `make serve` rebuilds only when
something the build reads has changed (a full build executes every notebook and bakes every
widget: minutes; serving an unchanged tree should take seconds).

    python -m widgets.build.inputs --check SITE               # exit 0: SITE is current
    python -m widgets.build.inputs --build SITE -- mkdocs build --strict   # build, then record

What the build reads: the chapters and notebooks, the configuration, the build hooks and the
runtime, the backend (widgets' code and the reference code the chapters include and bake), the
pinned packages (the environment the build ran in follows them: make reinstalls when they
change) and the environment's BOOK_* settings (the API's address and the device are baked
into pages). The record lives outside the site, so the server never serves it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INPUTS = ("mkdocs.yml", "docs", "widgets", "backend", "requirements.txt", "requirements-docs.txt",
          "requirements-nodeps.txt", "package-lock.json",
          # what is installed: a re-lock can move a package no requirements file names
          "requirements.lock", "requirements-docs.lock", "requirements-nodeps.lock")
RECORD = ROOT / ".cache" / "site-inputs"


def digest(site: Path) -> str:
    h = hashlib.sha256()
    h.update(f"{sys.version}\0{site.resolve()}\0".encode())
    for name, value in sorted(os.environ.items()):
        if name.startswith("BOOK_"):
            h.update(f"{name}={value}\0".encode())
    for top in INPUTS:
        path = ROOT / top
        files = [path] if path.is_file() else sorted(
            p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for file in files:
            h.update(b"\0" + file.relative_to(ROOT).as_posix().encode() + b"\0")
            h.update(file.read_bytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m widgets.build.inputs", description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", metavar="SITE", type=Path, help="exit 0 if SITE is current, 1 if not")
    action.add_argument("--build", metavar="SITE", type=Path,
                        help="run the build command given after --, and record SITE's inputs if it succeeds")
    parser.add_argument("command", nargs="*", help="the build command (with --build)")
    args = parser.parse_args(argv)
    if args.build:
        if not args.command:
            parser.error("--build needs the build command after --")
        before = digest(args.build)  # the tree the build reads, not what changed while it ran
        RECORD.unlink(missing_ok=True)
        status = subprocess.run(args.command).returncode
        if status == 0:
            RECORD.parent.mkdir(parents=True, exist_ok=True)
            RECORD.write_text(before + "\n", encoding="utf-8")
        return status
    current = (args.check / "index.html").is_file() and RECORD.is_file() and \
        RECORD.read_text(encoding="utf-8").strip() == digest(args.check)
    if not current:
        print("the book's sources changed since site/ was built (or it never was): building it",
              file=sys.stderr)
    return 0 if current else 1


if __name__ == "__main__":
    raise SystemExit(main())
