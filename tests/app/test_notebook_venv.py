"""A downloaded notebook runs on a reader's laptop from the file and its own install lines
(issue 33, item 2, UX review B3 and W4; issue 35, item 8): for each kind of notebook (plain
PyTorch, the book's trained model, the MiniLM encoder, SmolLM2-135M), a fresh virtual environment is made
from the lines its first cell prints and nothing else (plus nbclient, which stands in for the
reader's Jupyter), and the notebook is executed there, offline but for the book's own server,
from which the model's notebook downloads the weights and checks their SHA-256. Its last cell
must hold the values the API answers for the same setting.

Slow: four environments with torch."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import nbformat
import pytest

from backend.app import notebook
from tests.support.server import serve

pytestmark = pytest.mark.slow

KINDS = {  # a widget of each kind, at a setting that is not its default
    "plain": ("rmsnorm", {"offset": 8.0, "dtype": "float16"}),
    "book model": ("sampling", {"temperature": 0.7, "top_k": 5}),
    "MiniLM": ("attention_map", {"model": "minilm", "layer": 2, "average": False, "head": 3}),
    "SmolLM2": ("induction_lab", {"n_tokens": 20, "ablate": 2}),
}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("no-site"), workers=1) as srv:
        yield srv.base


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as resp:
        return resp.read()


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_downloaded_notebook_runs_in_a_venv_made_from_its_install_lines(live, tmp_path, kind):
    name, setting = KINDS[kind]
    query = urllib.parse.urlencode({k: str(v).lower() if isinstance(v, bool) else v
                                    for k, v in setting.items()})
    text = _get(f"{live}/api/widgets/{name}/notebook?{query}").decode()
    nb = nbformat.reads(text, as_version=4)
    first = nb.cells[0].source
    assert f"*{notebook.BOOK_TITLE}*" in first
    assert f"Python {sys.version_info.major}.{sys.version_info.minor}" in first
    lines = [m.strip() for m in re.findall(r"^    (pip install .+)$", first, re.M)]
    assert lines and lines[0].startswith("pip install ")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # --no-compile: the same files installed, without compiling every module of torch to
    # bytecode first (42 s of a 2-core machine's torch install, 13 s without); the notebook's
    # kernel compiles the few hundred it imports
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
           "--disable-pip-version-check", "--no-compile"]
    for line in lines:
        _install(pip + line.split()[2:], tmp_path)
    _install(pip + ["nbclient"], tmp_path)  # the reader's Jupyter

    folder = tmp_path / "laptop"
    folder.mkdir()
    path = folder / "setting.ipynb"
    path.write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BOOK_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PATH=f"{venv / 'bin'}:{env['PATH']}")
    run = subprocess.run([str(venv / "bin" / "jupyter-execute"), "--inplace", str(path)],
                         cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]

    done = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    last = [c for c in done.cells if c.cell_type == "code"][-1]
    got = next(o["data"]["application/json"] for o in last.outputs
               if "application/json" in o.get("data", {}))
    api = json.loads(urllib.request.urlopen(urllib.request.Request(
        f"{live}/api/widgets/{name}", data=json.dumps(setting).encode(),
        headers={"Content-Type": "application/json"}), timeout=300).read())
    assert got["params"] == api["params"]
    # float32 arithmetic on another thread count (the reader's kernel is not the server's
    # worker) may differ in the last bits: the same values, to float32's precision
    assert _close(got["values"], api["values"]), (got["values"], api["values"])
    if kind == "book model":  # downloaded next to the notebook, as its first cell says
        assert sorted(p.name for p in (folder / "book_weights").iterdir()) == \
            sorted(notebook.BOOK_WEIGHT_FILES)
    shutil.rmtree(venv)  # about 1 GB with torch: four at once crowd a CI machine's disk


def _install(cmd: list[str], where: Path) -> None:
    """pip, failing with its own error in the message: on CI pip's first lines are warnings for
    each package (an index folder the machine lacks), and the report kept only those."""
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    said = [line for line in (run.stdout + run.stderr).splitlines()
            if not re.match(r"WARNING: Location '.*' is ignored", line)]
    free = shutil.disk_usage(where).free / 2**30
    assert run.returncode == 0, (f"{' '.join(cmd[3:])} failed ({free:.1f} GiB free):\n"
                                 + "\n".join(said[-40:]))


def _close(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
    return a == b


def test_a_weights_file_is_served_under_its_digest_only(client):
    for f, digest in notebook.book_model_files().items():
        r = client.get(f"/api/book-model/{digest[:16]}/{f}")
        assert r.status_code == 200 and "immutable" in r.headers["Cache-Control"]
        assert hashlib.sha256(r.get_data()).hexdigest() == digest
        assert client.get(f"/api/book-model/{'0' * 16}/{f}").status_code == 404
    assert client.get(f"/api/book-model/{'0' * 16}/config.json").status_code == 404


def test_the_notebooks_title_is_the_books():
    root = Path(__file__).resolve().parents[2]
    site_name = next(line.split(":", 1)[1].strip() for line in
                     (root / "mkdocs.yml").read_text().splitlines() if line.startswith("site_name:"))
    assert notebook.BOOK_TITLE == site_name
