"""compose.yaml, read the way podman-compose reads it (its own `config` command, no containers):
the shared cache requires a password, the stack refuses to start without one, every replica is
given the same one, and no command line carries it; the app replicas are hardened as the
cluster's pods are and have a CPU quota; the trusted-proxy count is a setting."""

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


def _services(**env_extra) -> dict:
    proc = _config(BOOK_REDIS_PASSWORD="pw-from-env", **env_extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return yaml.safe_load(proc.stdout)["services"]


def test_redis_requires_the_password_every_replica_is_given():
    services = _services()
    assert services["redis"]["environment"]["REDIS_PASSWORD"] == "pw-from-env"
    assert services["redis"]["environment"]["REDISCLI_AUTH"] == "pw-from-env"  # health check
    app_env = services["app"]["environment"]
    assert app_env["BOOK_CACHE_PASSWORD"] == "pw-from-env"
    assert "pw-from-env" not in app_env["BOOK_CACHE_URL"]  # kept out of the URL that gets printed


def test_no_secret_is_on_a_command_line():
    """Arguments are anyone's to read (`ps` on the host, `podman inspect`): the password is in
    the environment of the containers that need it, never in a command, entrypoint or health
    check, as compose writes them."""
    for name, service in _services().items():
        for key in ("command", "entrypoint", "healthcheck"):
            assert "pw-from-env" not in yaml.safe_dump(service.get(key)), (name, key)


def run_redis_script(script: str, tmp_path: Path, password: str) -> tuple[int, str, str, str]:
    """The redis service's shell script run by /bin/sh with a stand-in `redis-server` on PATH
    that writes down its arguments and what it reads on its standard input."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "redis-server"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$OUT/argv"\ncat > "$OUT/stdin"\n')
    fake.chmod(0o755)
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(tmp_path),
                               "REDIS_PASSWORD": password})
    def read(name):
        return (tmp_path / name).read_text() if (tmp_path / name).exists() else ""

    return proc.returncode, proc.stderr, read("argv"), read("stdin")


def test_redis_reads_its_password_from_stdin_not_its_arguments(tmp_path):
    redis = _services()["redis"]
    script = redis["command"][-1]
    assert redis["command"][:2] == ["sh", "-c"]
    code, _, argv, stdin = run_redis_script(script, tmp_path, "0123abcdef")
    assert code == 0
    args = argv.splitlines()
    assert args[0] == "-" and "0123abcdef" not in argv  # configuration from standard input
    assert args[args.index("--maxmemory") + 1] == "256mb"
    assert args[args.index("--maxmemory-policy") + 1] == "allkeys-lru"
    assert 'requirepass "0123abcdef"' in stdin
    # a password that would not survive redis' configuration syntax stops it with a message
    (bad := tmp_path / "bad").mkdir()
    code, err, argv, _ = run_redis_script(script, bad, 'x" y')
    assert code == 1 and "BOOK_REDIS_PASSWORD" in err and argv == ""


def test_the_app_service_is_hardened_as_the_pod_is():
    """compose's app replicas get what deploy/kubernetes gives the pod: a read-only root
    filesystem, no capabilities, no privilege escalation, a small tmpfs at /tmp and a place on
    disk for what must be written (TMPDIR: SmolLM2's converted weights are 538 MB, twice that
    while both workers convert, too much for memory); and a CPU quota, which the workers divide
    among their torch threads."""
    app = _services()["app"]
    assert app["read_only"] is True
    assert app["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in app["security_opt"]
    tmpfs = app["tmpfs"] if isinstance(app["tmpfs"], list) else [app["tmpfs"]]
    assert any(t.split(":")[0] == "/tmp" for t in tmpfs)
    tmpdir = app["environment"]["TMPDIR"]
    (volume,) = [v.split(":")[0] for v in app["volumes"] if v.split(":")[1] == tmpdir]
    assert not volume.startswith((".", "/"))  # a named volume (on disk), not a host folder
    assert float(app["deploy"]["resources"]["limits"]["cpus"]) == 2
    assert float(_services(BOOK_APP_CPUS="6")["app"]["deploy"]["resources"]["limits"]["cpus"]) == 6

    pod = yaml.safe_load((ROOT / "deploy/kubernetes/base/deployment.yaml").read_text())
    container = pod["spec"]["template"]["spec"]["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    assert "cpu" in container["resources"]["limits"]


def test_the_trusted_proxy_count_is_a_setting():
    """nginx is one proxy; a campus TLS proxy in front of it is a second, and the count must
    say so or every reader is the campus proxy's address (one rate limit, one queue share)."""
    from backend import settings

    assert _services()["app"]["environment"]["BOOK_TRUSTED_PROXIES"] == "1"
    env = _services(BOOK_TRUSTED_PROXIES="2")["app"]["environment"]
    assert env["BOOK_TRUSTED_PROXIES"] == "2"
    assert settings.load({"BOOK_TRUSTED_PROXIES": env["BOOK_TRUSTED_PROXIES"]})["BOOK_TRUSTED_PROXIES"] == 2


def test_the_readme_explains_the_count_the_stacks_ship():
    """The README's table of what sits in front of the app gives the count each shipped stack
    sets (compose's default, the cluster's ConfigMap) and the one a campus proxy adds."""
    import re

    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Lecture hall: HTTPS and the client's address", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (.+?) \| `(\d)`", section, re.M))
    assert sorted(rows.values()) == ["0", "1", "2"]
    nginx = next(v for k, v in rows.items() if "nginx" in k and "campus" not in k)
    assert nginx == _services()["app"]["environment"]["BOOK_TRUSTED_PROXIES"]
    config = yaml.safe_load((ROOT / "deploy/kubernetes/base/configmap.yaml").read_text())["data"]
    assert nginx == config["BOOK_TRUSTED_PROXIES"]
    assert "compose.tls.yaml" in section and "BOOK_TLS_DIR" in section and "/64" in section
