"""backend/compute/kept.py: a slow result computed once per checkout, read back by the other
processes, and computed again when anything it depends on changes."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from backend.compute import kept

ROOT = kept.ROOT


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    monkeypatch.setattr(kept, "FOLDER", tmp_path / "kept")
    return tmp_path / "kept"


def _counting(result):
    calls = []

    def fn():
        calls.append(1)
        return result
    return fn, calls


def test_computed_once_then_read_back(folder):
    fn, calls = _counting({"loss": [1.5, math.nan], "steps": (1, 2)})
    first = kept.kept("thing")(fn)
    second = kept.kept("thing")(fn)   # another process's decorator: nothing shared in memory
    a, b = first(), second()
    assert calls == [1]
    assert a["loss"][0] == b["loss"][0] == 1.5 and math.isnan(a["loss"][1]) and math.isnan(b["loss"][1])
    assert a["steps"] == b["steps"] == [1, 2]   # the computing process gets what readers get
    assert [p.name for p in folder.iterdir()] == [kept.key("thing")]


def test_another_process_reads_what_this_one_kept(folder):
    fn, calls = _counting({"x": 0.1 + 0.2})
    kept.kept("thing")(fn)()
    code = ("import json, sys; from backend.compute import kept; "
            f"kept.FOLDER = __import__('pathlib').Path({str(folder)!r}); "
            "print(json.dumps(kept.kept('thing')(lambda: sys.exit('computed again'))()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == '{"x": 0.30000000000000004}'


def test_a_changed_source_is_computed_again(folder, monkeypatch):
    fn, calls = _counting([1])
    kept.kept("thing")(fn)()
    monkeypatch.setattr(kept, "_sources", lambda: "another tree")
    kept.kept("thing")(fn)()
    assert calls == [1, 1]
    assert len(list(folder.iterdir())) == 2


def test_the_key_follows_the_thread_count(folder, monkeypatch):
    import torch

    one = kept.key("thing")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 7)
    assert kept.key("thing") != one


def test_a_folder_that_cannot_be_written_computes_each_time(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setattr(kept, "FOLDER", blocked / "kept")   # under a file: mkdir fails
    fn, calls = _counting({"a": 1})
    assert kept.kept("thing")(fn)() == {"a": 1}
    assert kept.kept("thing")(fn)() == {"a": 1}
    assert calls == [1, 1]


def test_a_torn_file_is_computed_again(folder):
    fn, calls = _counting({"a": 1})
    folder.mkdir()
    (folder / kept.key("thing")).write_text('{"a": ')
    assert kept.kept("thing")(fn)() == {"a": 1}
    assert calls == [1]
    assert kept.kept("thing")(fn)() == {"a": 1} and calls == [1]
