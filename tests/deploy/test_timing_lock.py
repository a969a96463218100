"""The timing lock is the host's (review L6): measured widgets time one at a time across every
process that names the same lock, as replicas on one host do when they mount one host folder
(compose's timing-lock volume, the cluster's hostPath), and the lock falls back to this
process's own when the path cannot be opened, rather than failing the request."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from backend import settings
from backend.compute import measure

ROOT = Path(__file__).resolve().parents[2]

# One "replica": waits for the go file (so both run at once), then takes N timings under the
# lock, each a 40 ms sleep with 15 ms between, and prints the (start, end) of each on the system-wide monotonic clock.
REPLICA = """
import json, os, sys, time
from backend.compute import measure
lock, go, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.002)
spans = []
for _ in range(n):
    with measure.timing_lock(wait=30, path=lock):
        t0 = time.monotonic()
        time.sleep(0.04)
        spans.append((t0, time.monotonic()))
    time.sleep(0.015)  # a request's work outside the timing, so the other process gets turns
print(json.dumps(spans), flush=True)
"""


def _replicas(lock: str, go: Path, count: int = 2, n: int = 8) -> list[list[tuple[float, float]]]:
    procs = [subprocess.Popen([sys.executable, "-c", REPLICA, lock, str(go), str(n)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for _ in range(count)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    go.touch()
    out = []
    for p in procs:
        stdout, _ = p.communicate(timeout=60)
        assert p.returncode == 0
        out.append([tuple(s) for s in json.loads(stdout)])
    return out


def _overlaps(spans: list[tuple[float, float]]) -> list:
    spans = sorted(spans)
    return [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]


def test_two_processes_on_one_lock_folder_never_time_at_once(tmp_path):
    """The deploys name a folder (mounted read-only), so the folder itself is the lock: two
    processes' timings, recorded as intervals, never overlap, and yet both ran over the same
    stretch of time (each started before the other finished), so they did contend."""
    folder = tmp_path / "book-timing"
    folder.mkdir()
    a, b = _replicas(str(folder), tmp_path / "go")
    assert not _overlaps(a + b)
    assert a[0][0] < b[-1][1] and b[0][0] < a[-1][1]


def test_without_a_shared_lock_the_same_processes_do_overlap(tmp_path):
    """The control: each process with its own lock (each container's own /tmp, as before the
    shared folder) times at once with the other; the check above would see it."""
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir(), b_dir.mkdir()
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", REPLICA, str(d / "timing.lock"), str(go), "8"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True) for d in (a_dir, b_dir)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    go.touch()
    spans = [tuple(s) for p in procs for s in json.loads(p.communicate(timeout=60)[0])]
    assert _overlaps(spans)


def test_a_lock_folder_the_process_may_only_read_still_locks(tmp_path):
    """The cluster's hostPath folder is root's and mounted read-only: no file can be created in
    it. Opening the folder read-only is enough for flock, and a second open is turned away."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with measure.timing_lock(path=str(folder)):
            try:
                with measure.timing_lock(wait=0, path=str(folder)):
                    raise AssertionError("two timings at once on one folder")
            except measure.Busy:
                pass
    finally:
        folder.chmod(0o755)


def test_a_lock_that_cannot_be_opened_falls_back_to_this_process(tmp_path, caplog):
    """A lock path that cannot be opened (its folder removed after the server started) is no
    500: timings fall back to this process's lock, which still keeps its threads' timings
    apart, and the server says once that other workers' may overlap them."""
    gone = str(tmp_path / "removed" / "timing.lock")
    spans: list[tuple[float, float]] = []
    errors: list[BaseException] = []

    def timing():
        try:
            for _ in range(5):
                with measure.timing_lock(wait=30, path=gone):
                    t0 = time.monotonic()
                    time.sleep(0.02)
                    spans.append((t0, time.monotonic()))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    measure._WARNED.discard(gone)
    with caplog.at_level(logging.WARNING, logger=measure.__name__):
        threads = [threading.Thread(target=timing) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors, errors
    assert len(spans) == 15 and not _overlaps(spans)
    warnings = [r for r in caplog.records if "cannot be opened" in r.getMessage()]
    assert len(warnings) == 1
    # held by one thread, the fallback turns another away after its wait, as the file lock does
    with measure.timing_lock(path=gone):
        got = []
        t = threading.Thread(target=lambda: _try(gone, got))
        t.start()
        t.join(10)
        assert got == ["busy"]


def _try(path, got):
    try:
        with measure.timing_lock(wait=0.05, path=path):
            got.append("held")
    except measure.Busy:
        got.append("busy")


def test_unset_the_lock_is_a_file_in_the_temporary_folder():
    """Without the setting (one `make serve`, one container), every worker of the server
    shares a lock file in the system's temporary folder, as before."""
    assert settings.get("BOOK_TIMING_LOCK", {}) == os.path.join(tempfile.gettempdir(),
                                                                 "book-timing.lock")


def test_compose_replicas_share_one_host_folder_as_their_lock():
    """Every app replica mounts the one named volume at the folder BOOK_TIMING_LOCK names."""
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    app = compose["services"]["app"]
    folder = app["environment"]["BOOK_TIMING_LOCK"]
    mounts = [v.split(":") for v in app.get("volumes", [])]
    named = [m for m in mounts if m[1] == folder]
    assert len(named) == 1 and named[0][0] in compose["volumes"], mounts
    assert int(str(app["deploy"]["replicas"]).split(":-")[-1].rstrip("}")) > 1


def test_the_cluster_pods_on_a_node_share_one_host_folder_as_their_lock():
    """The pod mounts a hostPath folder (one per node) read-only at the path the configmap
    names as BOOK_TIMING_LOCK."""
    docs = {}
    for name in ("deployment.yaml", "configmap.yaml"):
        for doc in yaml.safe_load_all((ROOT / "deploy/kubernetes/base" / name).read_text()):
            docs[doc["kind"]] = doc
    folder = docs["ConfigMap"]["data"]["BOOK_TIMING_LOCK"]
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    mount = next(m for c in pod["containers"] for m in c["volumeMounts"]
                 if m["mountPath"] == folder)
    assert mount.get("readOnly") is True
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["hostPath"]["type"] == "DirectoryOrCreate"
    settings.get("BOOK_TIMING_LOCK", {"BOOK_TIMING_LOCK": folder})  # a value the server accepts
