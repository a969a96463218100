"""compose.yaml, read the way podman-compose reads it (its own `config` command, no containers):
the shared cache requires a password, the stack refuses to start without one, and every replica
is given the same one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _config(**env_extra) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "BOOK_REDIS_PASSWORD"}
    return subprocess.run([sys.executable, "-m", "podman_compose", "-f", "compose.yaml", "config"],
                          cwd=ROOT, env={**env, **env_extra}, capture_output=True, text=True,
                          timeout=120)


def test_the_stack_will_not_start_without_a_cache_password():
    proc = _config()
    assert proc.returncode != 0
    assert "BOOK_REDIS_PASSWORD" in proc.stdout + proc.stderr


def test_redis_requires_the_password_every_replica_is_given():
    proc = _config(BOOK_REDIS_PASSWORD="pw-from-env")
    assert proc.returncode == 0, proc.stderr[-2000:]
    services = yaml.safe_load(proc.stdout)["services"]
    command = services["redis"]["command"]
    assert command[command.index("--requirepass") + 1] == "pw-from-env"
    assert "--protected-mode" not in command
    assert services["redis"]["environment"]["REDISCLI_AUTH"] == "pw-from-env"  # health check
    app_env = services["app"]["environment"]
    assert app_env["BOOK_CACHE_PASSWORD"] == "pw-from-env"
    assert "pw-from-env" not in app_env["BOOK_CACHE_URL"]  # kept out of the URL that gets printed
