"""The lecture hall (compose.yaml) brought up for real with podman-compose on loopback.

One stack per module: three app replicas (one gunicorn worker each: the machine has two cores),
nginx in front, Redis behind. A bounded classroom load runs through nginx while one replica is
stopped in the middle; every request must succeed except, at most, those that were in flight to
the stopped replica when it went (the proxy retries the rest on a live replica). Then a result
computed by one replica must come back `cached` from another: the cache is shared through Redis.

Needs root and podman (apt: podman buildah runc debootstrap). Without them the module skips with
the reason; under CI=true it fails instead. Cost, measured on a 2-core machine shared with other
builds (load average ~13): 4 min 22 s for the module (stack healthy 190 s after `up`, the load
55 s, teardown), plus the app image when it is not there yet (tests/container/build.sh builds
it from this tree each run; pass BOOK_IMAGE to use a ready one) and ~1.5 min once for deploy/local-bases.sh.

Settings (environment): BOOK_IMAGE (an app image to use instead of building one),
NGINX_BASE / REDIS_IMAGE (default: the local stand-ins deploy/local-bases.sh makes).
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.server import free_port

ROOT = Path(__file__).resolve().parents[2]
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
REPLICAS = 3
LOAD_REQUESTS = 900          # a class of ~60 dragging sliders for about half a minute
LOAD_CONCURRENCY = 12        # requests in flight at once from the class
STOP_AFTER = 300             # the replica is stopped once this many requests have completed


def _why_not() -> str | None:
    if sys.platform != "linux":
        return "the compose stack test runs on Linux only"
    if os.geteuid() != 0:
        return "the compose stack test needs root (podman builds and runs the stack)"
    for tool in ("podman", "debootstrap"):
        if shutil.which(tool) is None:
            return f"the compose stack test needs {tool} (apt-get install podman buildah runc debootstrap)"
    return None


if (_reason := _why_not()) is not None:
    if CI:
        pytest.fail(f"CI=true and {_reason}", pytrace=False)
    pytest.skip(_reason, allow_module_level=True)


class Stack:
    def __init__(self, tmp: Path):
        self.project = f"booktest{os.getpid()}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        conf = tmp / "containers.conf"
        # No default ulimits (sandboxes refuse to raise them); runc, as tests/container/build.sh.
        conf.write_text('[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n')
        self.env = {
            **os.environ,
            "CONTAINERS_CONF": str(conf),
            "BUILDAH_ISOLATION": "chroot",
            "BOOK_IMAGE": os.environ.get("BOOK_IMAGE", "localhost/transformer-book:test"),
            "BOOK_PROXY_IMAGE": "localhost/transformer-book-proxy:compose-test",
            "NGINX_BASE": os.environ.get("NGINX_BASE", "localhost/book-nginx:bookworm"),
            "REDIS_IMAGE": os.environ.get("REDIS_IMAGE", "localhost/book-redis:bookworm"),
            "BOOK_HTTP_PORT": str(self.port),
            "BOOK_REPLICAS": str(REPLICAS),
            "WEB_CONCURRENCY": "1",
            # One client address sends the whole class's load here; the limit is per address.
            "BOOK_RATE_LIMIT": "off",
            "BOOK_REDIS_PASSWORD": secrets.token_hex(16),
        }
        self.figures: dict[str, float | int | str] = {}

    def run(self, *args, check=True, timeout=900, capture=True) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), env=self.env, cwd=ROOT, check=check, timeout=timeout,
                              text=True, capture_output=capture)

    def compose(self, *args, **kw):
        return self.run(sys.executable, "-m", "podman_compose", "-p", self.project,
                        "-f", "compose.yaml", *args, **kw)

    def podman(self, *args, **kw):
        return self.run("podman", *args, **kw)

    def prepare_images(self, site_dir):
        if "BOOK_IMAGE" not in os.environ:
            # Built from this tree every run, with the suite's own build of the site, by the
            # image test's helper under the same tag: when tests/container has just built it,
            # every layer is reused and this takes seconds; the stack never runs a stale image.
            subprocess.run([str(ROOT / "tests/container/build.sh")], cwd=ROOT, check=True,
                           timeout=1800, env={**self.env, "IMAGE": self.env["BOOK_IMAGE"],
                                              "SITE_CONTEXT": str(site_dir)})
        if "NGINX_BASE" not in os.environ or "REDIS_IMAGE" not in os.environ:
            subprocess.run([str(ROOT / "deploy/local-bases.sh")], check=True, timeout=900,
                           env=self.env)
        # The proxy image is rebuilt every run (seconds: one COPY of the built site).
        self.podman("rmi", "-f", self.env["BOOK_PROXY_IMAGE"], check=False)

    def containers(self, service: str, running_only=True) -> list[str]:
        out = self.podman("ps", *([] if running_only else ["-a"]),
                          "--filter", f"label=com.docker.compose.project={self.project}",
                          "--filter", f"label=com.docker.compose.service={service}",
                          "--format", "{{.Names}}").stdout
        return sorted(out.split())

    def exec_post(self, container: str, widget: str, params: dict) -> dict:
        """POST to one replica directly, from inside its container (bypassing nginx)."""
        code = ("import json, sys, urllib.request as u; r = u.Request("
                "'http://127.0.0.1:8000/api/widgets/' + sys.argv[1], data=sys.argv[2].encode(), "
                "headers={'Content-Type': 'application/json'}); "
                "print(u.urlopen(r, timeout=30).read().decode())")
        out = self.podman("exec", container, "python", "-c", code, widget, json.dumps(params)).stdout
        return json.loads(out)


def http(method: str, url: str, body: dict | None = None, headers: dict | None = None,
         timeout: float = 30.0):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, request):
    s = Stack(tmp_path_factory.mktemp("compose"))
    s.prepare_images(None if "BOOK_IMAGE" in os.environ else request.getfixturevalue("built_site"))
    t0 = time.monotonic()
    try:
        s.compose("up", "-d", timeout=900)
        s.figures["compose up returned (s)"] = round(time.monotonic() - t0, 1)
        # Up = nginx answers health from a replica, and every replica answers its own.
        deadline = time.monotonic() + 240
        ready = False
        while time.monotonic() < deadline and not ready:
            try:
                status, _, _ = http("GET", s.base + "/api/health", timeout=3)
            except OSError:
                status = None
            if status == 200:
                apps = s.containers("app")
                ready = len(apps) == REPLICAS and all(
                    s.podman("exec", c, "python", "-c",
                             "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/api/health', timeout=3)",
                             check=False).returncode == 0 for c in apps)
            if not ready:
                time.sleep(1)
        if not ready:
            print(s.compose("logs", check=False).stdout[-6000:])
            pytest.fail("the stack did not become healthy within 240 s")
        s.figures["stack up to healthy (s)"] = round(time.monotonic() - t0, 1)
        yield s
    finally:
        print("\ncompose figures:", json.dumps(s.figures, indent=1))
        s.compose("down", "-v", "-t", "5", check=False, timeout=300)


def _slider_request(rng: random.Random) -> tuple[str, str, dict | None]:
    """One thing a student does: mostly drag a slider, sometimes open a page."""
    roll = rng.random()
    if roll < 0.1:
        return "GET", rng.choice(["/", "/chapters/scaling/", "/chapters/heads/"]), None
    if roll < 0.4:
        return "POST", "/api/widgets/attention_scaling", {"d_k": rng.randint(1, 256)}
    if roll < 0.7:
        return "POST", "/api/widgets/rmsnorm", {"offset": rng.randint(-40, 40) / 2}
    return "POST", "/api/widgets/positions_sinusoids", {"d_model": 2 * rng.randint(2, 32)}


def test_a_replica_stopped_mid_load_loses_nothing_beyond_its_in_flight_requests(stack):
    apps = stack.containers("app")
    assert len(apps) == REPLICAS
    victim = apps[1]
    rng = random.Random(12)
    plan = [_slider_request(rng) for _ in range(LOAD_REQUESTS)]
    lock = threading.Lock()
    state = {"done": 0, "in_flight": 0, "in_flight_at_stop": None, "stopped_at": None}
    failures, after_stop, latencies = [], [], []

    def stop_victim():
        with lock:
            state["in_flight_at_stop"] = state["in_flight"]
            state["stopped_at"] = time.monotonic()
        # SIGTERM, as `docker stop`/a node drain sends: gunicorn finishes what it holds.
        stack.podman("stop", "-t", "20", victim)

    stopper = None

    def one(i):
        nonlocal stopper
        method, path, body = plan[i]
        with lock:
            state["in_flight"] += 1
        start = time.monotonic()
        try:
            status, _, raw = http(method, stack.base + path, body, timeout=60)
            ok = status == 200
            detail = f"{status} {raw[:120]!r}"
        except OSError as exc:
            ok, detail = False, repr(exc)
        took = time.monotonic() - start
        with lock:
            state["in_flight"] -= 1
            state["done"] += 1
            latencies.append(took)
            if not ok:
                failures.append((i, method, path, body, detail))
            if state["stopped_at"] is not None and start > state["stopped_at"]:
                after_stop.append(ok)
            if state["done"] == STOP_AFTER and stopper is None:
                stopper = threading.Thread(target=stop_victim)
                stopper.start()

    t0 = time.monotonic()
    with ThreadPoolExecutor(LOAD_CONCURRENCY) as pool:
        list(pool.map(one, range(LOAD_REQUESTS)))
    wall = time.monotonic() - t0
    stopper.join(timeout=60)

    latencies.sort()
    stack.figures.update({
        "load requests": LOAD_REQUESTS, "concurrency": LOAD_CONCURRENCY,
        "load wall (s)": round(wall, 1), "throughput (req/s)": round(LOAD_REQUESTS / wall, 1),
        "p50 (ms)": round(1000 * latencies[len(latencies) // 2], 1),
        "p95 (ms)": round(1000 * latencies[int(len(latencies) * 0.95)], 1),
        "max (ms)": round(1000 * latencies[-1], 1),
        "in flight when the replica stopped": state["in_flight_at_stop"],
        "requests started after the stop": len(after_stop),
        "failed": len(failures),
    })
    assert victim not in stack.containers("app"), "the stopped replica is still running"
    assert len(after_stop) >= 200, "the stop came too late to test anything"
    assert all(after_stop), f"requests sent after the stop failed: {failures[:5]}"
    assert len(failures) <= state["in_flight_at_stop"], failures[:10]
    # The replicas left answer directly, too.
    for c in stack.containers("app"):
        assert stack.exec_post(c, "attention_scaling", {"d_k": 3})["values"]


def test_a_result_computed_by_one_replica_is_cached_for_another(stack):
    first, second = stack.containers("app")[:2]
    params = {"d_k": 999, "n_positions": 7}   # a position the load never asked for
    a = stack.exec_post(first, "attention_scaling", params)
    b = stack.exec_post(second, "attention_scaling", params)
    assert a["cached"] is False
    assert b["cached"] is True, "the second replica recomputed: the cache is not shared"
    assert b["values"] == a["values"]
    # And through the proxy, whichever replica answers.
    status, _, raw = http("POST", stack.base + "/api/widgets/attention_scaling", params)
    assert status == 200 and json.loads(raw)["cached"] is True


# Run inside a replica: says it is ready (torch imported), waits for a line on stdin, then takes
# its timings under the replica's own lock setting and prints their wall-clock intervals.
_TIMINGS = """
import json, sys, time
from backend.compute import measure
print("ready", flush=True)
sys.stdin.readline()
spans = []
for _ in range(8):
    with measure.timing_lock(wait=60):
        t0 = time.time()
        time.sleep(0.1)
        spans.append((t0, time.time()))
    time.sleep(0.03)
print(json.dumps(spans), flush=True)
"""


def test_the_replicas_take_their_timings_one_at_a_time_on_the_host(stack):
    """Review L6: each replica's own /tmp made the timing lock per container. Now every replica
    locks the one folder of the timing-lock volume (BOOK_TIMING_LOCK), so timings taken in the
    replicas at once, recorded as wall-clock intervals (one kernel, one clock), never overlap,
    though they interleave."""
    apps = stack.containers("app")
    assert len(apps) >= 2
    procs = [subprocess.Popen(["podman", "exec", "-i", c, "python", "-c", _TIMINGS],
                              env=stack.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) for c in apps]
    try:
        for p in procs:  # every replica has imported torch before any starts timing
            assert p.stdout.readline().strip() == "ready"
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        per_replica = [[tuple(x) for x in json.loads(p.communicate(timeout=120)[0])]
                       for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    spans = sorted(x for r in per_replica for x in r)
    assert not [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
    firsts, lasts = [r[0][0] for r in per_replica], [r[-1][1] for r in per_replica]
    assert max(firsts) < min(lasts), "the replicas did not contend: nothing was tested"


def test_the_proxy_serves_the_book_compressed_and_caches_the_api(stack):
    status, headers, raw = http("GET", stack.base + "/chapters/scaling/",
                                headers={"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert headers["Cache-Control"] == "no-cache"      # pages revalidate: a rebuild shows at once
    # nginx sends the page the security headers Flask sends (one policy, from the same site)
    _, flask_headers, _ = http("GET", stack.base + "/api/health")
    for name in ("Content-Security-Policy", "X-Frame-Options", "Strict-Transport-Security",
                 "Referrer-Policy", "X-Content-Type-Options", "Permissions-Policy"):
        assert headers[name] == flask_headers[name], name
    import gzip
    page = gzip.decompress(raw).decode()
    assert 'data-widget="attention_scaling"' in page
    bundle = next(p for p in page.split('"') if "/assets/javascripts/bundle." in p)
    status, headers, _ = http("GET", stack.base + "/chapters/scaling/" + bundle)
    assert status == 200 and "immutable" in headers["Cache-Control"]
    statuses = [http("GET", stack.base + "/api/widgets")[1]["X-Cache-Status"] for _ in range(2)]
    assert statuses[1] == "HIT", statuses
    # A slider setting, as the pages ask for it: the second reader's answer is nginx's, kept
    # as long as the app's Cache-Control says, with no replica asked (nothing recomputed).
    url = stack.base + "/api/widgets/attention_scaling/result?d_k=77&n_positions=5"
    answers = [http("GET", url) for _ in range(2)]
    assert [a[0] for a in answers] == [200, 200]
    assert [a[1]["X-Cache-Status"] for a in answers] == ["MISS", "HIT"]
    assert "max-age=600" in answers[1][1]["Cache-Control"]
    assert json.loads(answers[1][2])["values"] == json.loads(answers[0][2])["values"]
    status, headers, _ = http("GET", stack.base + "/api/health")
    assert status == 200 and "X-Cache-Status" not in headers   # health is always live
    status, _, _ = http("GET", stack.base + "/no-such-page/")
    assert status == 404
