"""The files the build ships from outside docs/: the vendored libraries (plotly.js and KaTeX, from
`node_modules/`, so the built book loads nothing from outside itself), the browser runtime
(`widgets/runtime/`) and the print edition's script and style, each set under a folder named
after a hash of its content:

    assets/vendor/plotly-<hash>/plotly.min.js
    assets/vendor/katex-<hash>/katex.min.js, katex.min.css, contrib/, fonts/
    assets/book/runtime-<hash>/main.js, ... (every module), runtime.css
    assets/book/print-<hash>/print.js, print.css

One hash per folder, of every file's name and bytes: a change to any file renames the whole
folder. The runtime's modules import each other by relative path, so inside the folder nothing
is rewritten, and a page (HTML is revalidated on every load) names one deploy's folders only: a
deploy never mixes old and new modules. The runtime finds plotly.js and KaTeX through
`vendor.js`, which this module writes with their hashed folders before hashing the runtime's (a
new plotly.js or KaTeX renames the runtime too). Files under a hashed folder are kept a year,
immutable (`backend/app/site.py` `cache_control`, and nginx's copy of it in
deploy/nginx/default.conf).

`mkdocs.yml` names these files by their unhashed paths (`assets/book/runtime/main.js`):
`on_config` rewrites `extra_javascript` and `extra_css` to the hashed ones, and hands the theme
the runtime's modules and plotly.js (`config.extra`, widgets/theme/main.html); the print edition
asks `url()`.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules"
RUNTIME = ROOT / "widgets/runtime"
HASH_LENGTH = 10  # hex digits of sha256 in a folder's name
# plotly.js as `make` builds it from plotly.js's source with only the book's trace types
# (widgets/build/plotly_bundle.mjs, run after `npm ci`); its header names them
PLOTLY = NODE / ".book/plotly.min.js"
TRACES_LINE = re.compile(rb"plotly\.js \(the book's traces: ([a-z0-9, ]+) - minified\)")
# the module the build writes with plotly's hashed path, relative to the runtime's folder
VENDOR_MODULE = "vendor.js"


@dataclass(frozen=True)
class Bundle:
    base: str                 # the unhashed folder: "assets/vendor/plotly"
    folder: str               # the hashed one: "assets/vendor/plotly-0123456789"
    files: dict[str, bytes]   # each file's path inside the folder, and its content

    def url(self, name: str) -> str:
        if name not in self.files:
            raise PluginError(f"{self.base}/ has no {name} (it has {', '.join(sorted(self.files))})")
        return f"{self.folder}/{name}"


def bundle(base: str, files: dict[str, bytes]) -> Bundle:
    """`files` under `base`-<hash of every name and content>."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return Bundle(base, f"{base}-{h.hexdigest()[:HASH_LENGTH]}", dict(files))


def _read(sources: dict[str, Path]) -> dict[str, bytes]:
    for src in sources.values():
        if not src.is_file():
            raise PluginError(f"{src} is missing: run `make build` (it runs `npm ci` and "
                              "builds plotly.js) first")
    return {name: src.read_bytes() for name, src in sources.items()}


def plotly_traces(script: bytes) -> frozenset[str]:
    """The trace types a plotly.js bundle of widgets/build/plotly_bundle.mjs's draws, from its
    header."""
    m = TRACES_LINE.search(script[:400])
    if m is None:
        raise PluginError(f"{PLOTLY} is not the book's plotly.js build (its header names no "
                          "trace types): run `make build`")
    return frozenset(m.group(1).decode().split(", "))


def check_traces(figure: dict, where: str) -> None:
    """Stop the build on a figure with a trace type the shipped plotly.js leaves out: the page
    would draw an empty plot. (A trace without a type is a scatter, as in plotly.js.)"""
    if "plotly" in BUILT:  # in a build: the bundle it ships
        known = plotly_traces(BUILT["plotly"].files["plotly.min.js"])
    else:  # a widget fence rendered outside a build (tests/site/test_macros.py)
        with open(PLOTLY, "rb") as script:
            known = plotly_traces(script.read(400))
    missing = sorted({t.get("type", "scatter") for t in figure.get("data") or []} - known)
    if missing:
        raise PluginError(f"{where}: a figure draws {', '.join(missing)}, which the book's "
                          f"plotly.js leaves out (it has {', '.join(sorted(known))}): add the "
                          "type to TRACES in widgets/build/plotly_bundle.mjs")


def vendor_module(runtime_base: str, plotly: Bundle, katex: Bundle) -> bytes:
    """`vendor.js` as the built runtime imports it: plotly.js's and KaTeX's hashed paths,
    relative to the runtime's folder (the folders sit at the same depth, so its hash does not
    change them)."""
    def rel(b: Bundle, name: str) -> str:
        return posixpath.relpath(b.url(name), runtime_base)

    return (f"/* Written by the build (widgets/build/assets.py): where the vendored scripts are. */\n"
            f"export const PLOTLY = \"{rel(plotly, 'plotly.min.js')}\";\n"
            f"export const KATEX = \"{rel(katex, 'katex.min.js')}\";\n"
            f"export const KATEX_AUTO = \"{rel(katex, 'contrib/auto-render.min.js')}\";\n").encode()


def bundles(runtime: Path = RUNTIME) -> dict[str, Bundle]:
    """This tree's shipped files, by name: plotly, katex, runtime, print."""
    katex = NODE / "katex/dist"
    plotly = bundle("assets/vendor/plotly", _read({"plotly.min.js": PLOTLY}))
    # Only what the pages load; KaTeX's woff2 fonts are enough for every browser that runs the
    # rest of the site.
    katex_files = _read({"katex.min.js": katex / "katex.min.js",
                         "katex.min.css": katex / "katex.min.css",
                         "contrib/auto-render.min.js": katex / "contrib/auto-render.min.js",
                         **{f"fonts/{font.name}": font
                            for font in sorted((katex / "fonts").glob("*.woff2"))}})
    runtime_files = _read({module.name: module for module in sorted(runtime.glob("*.js"))} |
                          {"runtime.css": runtime / "runtime.css"})
    katex_bundle = bundle("assets/vendor/katex", katex_files)
    runtime_files[VENDOR_MODULE] = vendor_module("assets/book/runtime", plotly, katex_bundle)
    printed = _read({"print.js": ROOT / "widgets/print/print.js",
                     "print.css": ROOT / "widgets/print/print.css"})
    return {"plotly": plotly,
            "katex": katex_bundle,
            "runtime": bundle("assets/book/runtime", runtime_files),
            "print": bundle("assets/book/print", printed)}


# This build's bundles (set by on_config; `mkdocs serve` rebuilds in one process).
BUILT: dict[str, Bundle] = {}


def url(name: str, file: str) -> str:
    """The site path of `file` in this build's bundle `name` ("plotly", "plotly.min.js")."""
    return BUILT[name].url(file)


def hashed(path: str) -> str:
    """A site path as mkdocs.yml writes it (`assets/book/runtime/main.js`) under its bundle's
    hashed folder; a path in no bundle as it is."""
    for b in BUILT.values():
        if path.startswith(b.base + "/"):
            return b.url(path[len(b.base) + 1:])
    return path


def on_config(config):
    BUILT.clear()
    BUILT.update(bundles())
    for script in config.extra_javascript:
        script.path = hashed(script.path)
    config.extra_css[:] = [hashed(path) for path in config.extra_css]
    # the theme (widgets/theme/main.html): every module of the runtime is preloaded, and
    # plotly.js on a page with a figure
    runtime = BUILT["runtime"]
    config.extra["tw_runtime"] = [runtime.url(name) for name in sorted(runtime.files)
                                  if name.endswith(".js")]
    config.extra["tw_plotly"] = url("plotly", "plotly.min.js")
    return config


def on_files(files: Files, config) -> Files:
    for b in BUILT.values():
        for name, content in b.files.items():
            files.append(File.generated(config, f"{b.folder}/{name}", content=content))
    return files
