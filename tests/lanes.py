"""`make test`'s pytest: the suite in two lanes at once, then the timing tests alone.

On the 2-core machine the suite is written for, the tests that drive the built book (a browser,
a live gunicorn, podman) spend most of their time waiting, while the rest (the fuzzer, the
claims, the reference code) keeps a core busy. So the two run side by side, each a pytest
session of its own, and the tests that time things on this machine run last, with the machine
to themselves:

    book    the built book and what serves it: `build`, `browser` and `container` tests
            (only this session builds the book)
    rest    everything else but `timing` and `threads`
    timing  the wall-clock measurements, and the tests that run torch on more than one
            thread, alone

What this saves, and why not more lanes (four were slower: the cores oversubscribed), is
measured in tests/benchmarks/results/suite_time.md.

Any lane can be run by hand with the line this prints. Arguments are passed to every lane
(`python tests/lanes.py -x`). Each lane's output goes to a log, printed whole when the lane
ends (interleaved lines of two sessions would be unreadable); the exit status is the first
failing lane's.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDE_BY_SIDE = {
    "book": "(build or browser or container) and not (timing or threads)",
    "rest": "not (build or browser or container or timing or threads)",
}
ALONE = {"timing": "timing or threads"}
# Side by side, each lane's torch gets one intra-op thread: two processes' thread pools on two
# cores wait on each other (a pool spin-waits for a thread that is not running). The servers the
# tests start set their own (gunicorn_conf.py); the timing lane keeps the default.
ONE_THREAD = {"OMP_NUM_THREADS": "1"}
# How often to say which lanes are still running (CI prints nothing else meanwhile).
HEARTBEAT_S = 60
# How many of each lane's slowest test files to list at the end.
SLOWEST = 15


def command(mark: str, args: list[str], junit: Path | None = None) -> list[str]:
    return [sys.executable, "-m", "pytest", "-m", mark,
            *([f"--junitxml={junit}"] if junit else []), *args]


def _shown(cmd: list[str]) -> str:
    return shlex.join(["pytest", *cmd[3:]])


class Lane:
    def __init__(self, name: str, cmd: list[str], env: dict, log: Path):
        self.name, self.log, self.started = name, log, time.monotonic()
        with log.open("w") as out:
            # a process group of its own: stopping the lane stops what its tests started too
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        print(f"lane {name} started: {_shown(cmd)}", flush=True)

    def tail(self) -> str:
        """The last line of its log, e.g. `....... [ 41%]`, shortened."""
        lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        return lines[-1][-50:] if lines else ""

    def show(self) -> None:
        print(f"\n{'=' * 25} lane {self.name}: exit {self.proc.returncode}, "
              f"{time.monotonic() - self.started:.0f} s {'=' * 25}", flush=True)
        sys.stdout.write(self.log.read_text(errors="replace"))
        sys.stdout.flush()


def main(args: list[str]) -> int:
    # Stopped (CI's timeout, a kill): stop the lanes too, through `_wait`'s `finally`.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # Bytecode written: where PYTHONDONTWRITEBYTECODE is set (this machine does), every
    # session would compile and assertion-rewrite the whole suite again, and every gunicorn
    # worker, notebook kernel and build the tests start would compile the book's code again
    # (collection alone: 12 s without the cache, 7.5 s with it). __pycache__ is ignored by git
    # and by the image's build context (.dockerignore).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="book-lanes-") as logs:
        return _run(args, env, Path(logs))


def _run(args: list[str], env: dict, logs: Path) -> int:
    t0 = time.monotonic()
    codes: dict[str, int] = {}
    side = 0.0
    for together, extra in ((SIDE_BY_SIDE, ONE_THREAD), (ALONE, {})):
        codes |= _wait([Lane(name, command(mark, args, logs / f"{name}.xml"), {**env, **extra},
                             logs / f"{name}.log")
                        for name, mark in together.items()], t0)
        side = side or time.monotonic() - t0
    for name in codes:
        where = logs / f"{name}.xml"
        if where.is_file():
            print(f"\nlane {name}, its slowest files:\n" + "\n".join(
                f"{seconds:7.0f} s  {file}" for file, seconds in by_file(where)[:SLOWEST]))
    for name in [n for n, c in codes.items() if c != 0]:
        print(f"\nlane {name}, again:\n{summary((logs / f'{name}.log').read_text(errors='replace'))}")
    print(f"\nlanes: {', '.join(f'{n} exit {c}' for n, c in codes.items())}; side by side "
          f"{side:.0f} s, in all {time.monotonic() - t0:.0f} s", flush=True)
    # 5 (no test collected) fails too: a lane that selects nothing is a mistake in this file
    return next((c for c in codes.values() if c != 0), 0)


def by_file(junit: Path) -> list[tuple[str, float]]:
    """Seconds per test file (setup, call and teardown: junit's time), the slowest first, from
    a lane's junit XML. Printed at the very end, where CI's report of the output keeps it: the
    ends of each lane's log list its slowest tests only, and a file's many fast tests are where
    a lane's time hides as often."""
    import xml.etree.ElementTree as ET

    seconds: dict[str, float] = {}
    for case in ET.parse(junit).iter("testcase"):
        parts = case.get("classname", "").split(".")  # tests.site.test_print[.TestClass]
        module = next((i for i, part in enumerate(parts) if part.startswith("test_")), len(parts) - 1)
        file = "/".join(parts[:module + 1]) + ".py"
        seconds[file] = seconds.get(file, 0.0) + float(case.get("time") or 0)
    return sorted(seconds.items(), key=lambda kv: -kv[1])


def summary(log: str) -> str:
    """A failed lane's short summary (pytest's `-ra`: each failure with its message) from its
    log, to print again at the very end: CI reports the output's head and tail, and a long
    lane's failures were cut from its middle."""
    at = log.rfind("short test summary info")
    return log[log.rfind("\n", 0, at) + 1:].rstrip() if at >= 0 else log[-3000:].rstrip()


def _wait(running: list[Lane], t0: float) -> dict[str, int]:
    """Wait for every lane, printing each one's log as it ends and a heartbeat meanwhile; if
    interrupted (Ctrl-C, SIGTERM), stop the lanes still running with what their tests started."""
    codes: dict[str, int] = {}
    try:
        beat = time.monotonic()
        while running:
            time.sleep(1)
            for lane in [ln for ln in running if ln.proc.poll() is not None]:
                codes[lane.name] = lane.proc.returncode
                lane.show()
                running.remove(lane)
            if running and time.monotonic() - beat >= HEARTBEAT_S:
                beat = time.monotonic()
                print(f"[{beat - t0:4.0f} s] " + "; ".join(f"{ln.name} {ln.tail()}"
                                                          for ln in running), flush=True)
    finally:  # interrupted: stop what is left
        for lane in running:
            try:
                os.killpg(lane.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    return codes


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
