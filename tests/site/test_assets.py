"""The files the build ships under content-hashed folders (widgets/build/assets.py): a change to
any file of a folder renames it, so a page names one deploy's files only, which browsers and
nginx then keep a year (tests/app/test_site.py checks the built pages and the headers)."""

from __future__ import annotations

import posixpath
import re
import shutil
from pathlib import Path

import pytest
import yaml
from mkdocs.exceptions import PluginError

from widgets.build import assets

ROOT = Path(__file__).resolve().parents[2]


def test_a_folder_is_named_after_every_file_in_it():
    one = assets.bundle("assets/book/runtime", {"main.js": b"a", "page.js": b"b"})
    assert re.fullmatch(r"assets/book/runtime-[0-9a-f]{10}", one.folder)
    assert one.url("main.js") == one.folder + "/main.js"
    assert assets.bundle("assets/book/runtime", {"page.js": b"b", "main.js": b"a"}).folder \
        == one.folder
    assert assets.bundle("assets/book/runtime", {"main.js": b"a", "page.js": b"c"}).folder \
        != one.folder, "a file's content"
    assert assets.bundle("assets/book/runtime", {"main.js": b"a", "pages.js": b"b"}).folder \
        != one.folder, "a file's name"
    with pytest.raises(PluginError, match="has no nope.js"):
        one.url("nope.js")


def test_changing_a_module_changes_the_runtime_url_and_nothing_else(tmp_path):
    runtime = tmp_path / "runtime"
    shutil.copytree(ROOT / "widgets/runtime", runtime)
    before = assets.bundles(runtime)
    assert assets.bundles(runtime) == before
    (runtime / "page.js").write_text((runtime / "page.js").read_text() + "\n// changed\n")
    after = assets.bundles(runtime)
    assert after["runtime"].folder != before["runtime"].folder
    assert {k: b.folder for k, b in after.items() if k != "runtime"} == \
        {k: b.folder for k, b in before.items() if k != "runtime"}


def test_the_runtime_finds_plotly_under_its_hashed_folder():
    built = assets.bundles()
    runtime, plotly = built["runtime"], built["plotly"]
    module = runtime.files[assets.VENDOR_MODULE].decode()
    path = re.search(r'export const PLOTLY = "([^"]+)";', module).group(1)
    assert posixpath.normpath(posixpath.join(runtime.folder, path)) == plotly.url("plotly.min.js")
    # the source tree's vendor.js (what node and a reader see) exports the same name
    assert "export const PLOTLY = " in (ROOT / "widgets/runtime/vendor.js").read_text()
    # every module the runtime has is shipped, with its stylesheet
    assert {p.name for p in (ROOT / "widgets/runtime").glob("*.js")} | {"runtime.css"} == \
        set(runtime.files)


def test_what_mkdocs_yml_loads_is_given_its_hashed_folder(monkeypatch):
    built = assets.bundles()
    monkeypatch.setattr(assets, "BUILT", built)
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    scripts = [s["path"] if isinstance(s, dict) else s for s in config["extra_javascript"]]
    for path in scripts + config["extra_css"]:
        new = assets.hashed(path)
        if path == "assets/book/diagrams.css":  # written by the figures hook, not hashed
            assert new == path
            continue
        assert new != path and re.search(r"/[a-z]+-[0-9a-f]{10}/", new), path
        assert posixpath.basename(new) == posixpath.basename(path)
    assert assets.hashed("assets/book/runtime/main.js") == built["runtime"].url("main.js")
    with pytest.raises(PluginError):
        assets.hashed("assets/book/runtime/no-such-module.js")


def test_the_shipped_plotly_names_its_traces_and_the_build_refuses_any_other():
    """plotly.js is built with the book's trace types only (widgets/build/plotly_bundle.mjs); a
    figure of another type would be an empty plot on the page, so the build stops instead."""
    built = assets.bundles()
    traces = assets.plotly_traces(built["plotly"].files["plotly.min.js"])
    assert traces == {"scatter", "bar", "heatmap"}
    assets.BUILT.clear()
    assets.BUILT.update(built)
    try:
        assets.check_traces({"data": [{"type": "bar"}, {"x": [1]}, {"type": "heatmap"}]}, "p.md")
        with pytest.raises(PluginError, match=r"p\.md: .*draws pie, violin, which the book's "
                                              r"plotly\.js leaves out"):
            assets.check_traces({"data": [{"type": "violin"}, {"type": "pie"}]}, "p.md")
        with pytest.raises(PluginError, match="not the book's plotly.js build"):
            assets.plotly_traces(b"/* plotly.js (cartesian - minified) v4.1.1 */")
    finally:
        assets.BUILT.clear()
