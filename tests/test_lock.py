"""The hashed locks (requirements*.lock, `make lock`, deploy/lock.py) are in step with the pins
people edit (requirements*.txt), and pyproject.toml declares the same runtime list.

Editing a requirements file without `make lock` fails here: a pin moved or added is missing from
its lock at that version, a pin removed is still in the lock as a direct requirement."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)((?: \\\n {4}--hash=sha256:[0-9a-f]{64})*)"
                   r"\n((?: {4}#.*\n)*)", re.M)
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s*$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def inputs(path: Path) -> dict[str, str]:
    """{name: version} of a requirements file's pins, following its `-r` includes."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            pins.update(inputs(path.parent / line[3:].strip()))
        elif line:
            found = PIN.match(line)
            assert found, f"{path.name}: not a `name==version` pin: {line!r}"
            pins[canonical(found.group(1))] = found.group(2)
    return pins


def lock_entries(path: Path) -> dict[str, dict]:
    """{name: {version, hashes, via}} of a lock file; every line that is not a comment belongs to
    an entry (so a hand-added line without a hash is caught)."""
    text = path.read_text()
    entries = {}
    for m in ENTRY.finditer(text):
        entries[canonical(m.group(1))] = {
            "version": m.group(2),
            "hashes": re.findall(r"[0-9a-f]{64}", m.group(3)),
            "via": re.findall(r"-r (\S+)", m.group(4)),
        }
    rest = ENTRY.sub("", text)
    strays = [line for line in rest.splitlines() if line.strip() and not line.startswith("#")]
    assert not strays, f"{path.name}: lines outside any hashed entry: {strays[:3]}"
    return entries


def load_lock_script():
    spec = importlib.util.spec_from_file_location("book_lock", ROOT / "deploy" / "lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOCK = load_lock_script()
PAIRS = {**LOCK.LOCKS, LOCK.NODEPS[1]: [LOCK.NODEPS[0]]}


@pytest.mark.parametrize("lock", sorted(PAIRS))
def test_every_input_pin_is_locked_at_its_version(lock):
    entries = lock_entries(ROOT / lock)
    for src in PAIRS[lock]:
        for name, version in inputs(ROOT / src).items():
            assert name in entries, f"{src} pins {name}, which {lock} lacks: run `make lock`"
            # torch too: the lock pins it without a build label, its hashes choose the CPU build
            assert entries[name]["version"] == version, (
                f"{src} pins {name}=={version}, {lock} has {entries[name]['version']}: "
                "run `make lock`")


@pytest.mark.parametrize("lock", sorted(LOCK.LOCKS))
def test_no_lock_keeps_a_direct_requirement_its_inputs_dropped(lock):
    pinned = {}
    for src in LOCK.LOCKS[lock]:
        pinned.update(inputs(ROOT / src))
    for name, entry in lock_entries(ROOT / lock).items():
        for src in entry["via"]:
            assert name in inputs(ROOT / src), (
                f"{lock} has {name} as a requirement of {src}, which no longer names it: "
                "run `make lock`")


@pytest.mark.parametrize("lock", sorted(PAIRS))
def test_every_locked_package_has_a_hash(lock):
    entries = lock_entries(ROOT / lock)
    assert entries
    unhashed = sorted(name for name, entry in entries.items() if not entry["hashes"])
    assert not unhashed, f"{lock}: no --hash for {unhashed}"


def test_the_smaller_locks_are_the_dev_locks_resolution():
    """One resolution: a package has the same version and files in every lock that holds it."""
    dev = lock_entries(ROOT / "requirements-dev.lock")
    for lock in ("requirements.lock", "requirements-docs.lock"):
        for name, entry in lock_entries(ROOT / lock).items():
            assert name in dev, f"{lock} has {name}, the dev lock does not"
            assert entry["version"] == dev[name]["version"], (name, lock)
            assert set(entry["hashes"]) <= set(dev[name]["hashes"]), (name, lock)
    runtime, docs = (set(lock_entries(ROOT / lock)) for lock in
                     ("requirements.lock", "requirements-docs.lock"))
    assert runtime < docs < set(dev)


def test_torch_is_the_cpu_build_and_carries_every_file_an_install_may_choose():
    for lock in LOCK.LOCKS:
        torch = lock_entries(ROOT / lock)["torch"]
        assert torch["version"] == inputs(ROOT / "requirements.txt")["torch"]
        cpu = LOCK.TORCH_CPU_WHEELS[torch["version"]]
        # exactly the CPU index's files: no CUDA build of PyPI's can pass --require-hashes
        assert set(torch["hashes"]) == set(cpu.values()), lock
        assert LOCK.TORCH_NOTE in (ROOT / lock).read_text()


def test_the_torch_wheel_pip_finds_on_this_machine_is_the_locked_one():
    """Here and in CI pip takes torch from its find-links folder: that file must be one the lock
    lists, or `make test`'s install stops at torch."""
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                          capture_output=True, text=True)
    folders = re.findall(r"find-links='([^']*)'", proc.stdout)
    wheels = [w for f in folders for d in f.split() for w in Path(d).glob("torch-*.whl")]
    version = inputs(ROOT / "requirements.txt")["torch"]
    wheels = [w for w in wheels if w.name.startswith(f"torch-{version}+cpu-cp311-")]
    if not wheels:
        pytest.skip("pip's configuration names no folder holding the locked torch's CPU wheel")
    locked = set(lock_entries(ROOT / "requirements.lock")["torch"]["hashes"])
    for wheel in wheels:
        digest = hashlib.sha256()
        with wheel.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        assert digest.hexdigest() in locked, wheel


def test_pyproject_declares_the_runtime_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {}
    for requirement in project["dependencies"]:
        found = PIN.match(requirement)
        assert found, f"pyproject.toml: not a `name==version` pin: {requirement!r}"
        declared[canonical(found.group(1))] = found.group(2)
    assert declared == inputs(ROOT / "requirements.txt")


def test_make_and_the_image_install_only_from_the_locks_with_hashes():
    """Every install reads a lock with --require-hashes. The one exception is make's fallback
    (UNHASHED), run only after a hashed install failed (`||`): a machine with no file the lock
    hashes (a Mac: torch's CPU build is hashed for Linux only) still gets the pinned versions."""
    makefile = (ROOT / "Makefile").read_text()
    dockerfile = (ROOT / "Dockerfile").read_text()
    fallback = re.search(r"^UNHASHED = .*$", makefile, re.M)
    assert fallback and "pip install" in fallback.group(0)
    makefile = makefile.replace(fallback.group(0), "")
    calls = re.findall(r"^(.*)\n\s*\|\| \$\(call UNHASHED,([^,]+),", makefile, re.M)
    assert calls and all("--require-hashes" in first and f"-r {lock}" in first
                         for first, lock in calls), calls
    installs = [line for text in (makefile, dockerfile) for line in text.splitlines()
                if re.search(r"\bpip install\b", line) and " -r " in line]
    assert len(installs) >= 5, installs
    for line in installs:
        assert "--require-hashes" in line and re.search(r" -r \S+\.lock\b", line), line
    for lock in PAIRS:
        assert f"-r {lock}" in makefile + dockerfile or lock == "requirements-dev.lock", lock
    assert "-r requirements-dev.lock" in makefile
