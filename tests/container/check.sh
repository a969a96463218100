#!/usr/bin/env bash
# `make container-check`: build the Dockerfile with podman, run the image, probe it over HTTP.
# Opt-in (not part of `make test`): it needs root or sudo, several minutes and ~3 GB of disk.
#
# No Docker engine is needed. Where container registries are unreachable (the default here),
# the base images are made locally and passed as BASE / NODE_BASE: Debian bookworm from
# debootstrap (the mirror apt already uses) with the host's CPython 3.11 (>= 3.11.5, as the pins
# need) copied into /usr/local like python:3.11-slim, and that plus Debian's nodejs and npm.
# The Dockerfile's public defaults stay untouched.
# Pip inside the build trusts the host's CA bundle and, when pip's own configuration names a
# `find-links` folder of local wheels (e.g. a CPU torch wheel), sees that folder too: both
# reach the build as read-only mounts and a pip.conf, never as changes to the Dockerfile.
#
# Settings (environment):
#   BASE, NODE_BASE  base images to build from; when unset, local Debian bookworm images
#                    (made once, then reused). BASE=python:3.11-slim
#                    NODE_BASE=node:20-bookworm-slim uses the public defaults.
#   CHECK_PYTHON     host interpreter copied into the local python base (default python3.11)
#   IMAGE            tag of the built image (default localhost/transformer-book:check)
#   CHECK_PORT       host port to publish on 127.0.0.1 (default: a free one)
#   EXPECT_DEVICE    what /api/health's device must start with (default cpu; empty: any)
#   READY_TIMEOUT    seconds to wait for /api/health (default 120)
#   KEEP_IMAGE=0     remove the built image afterwards (default: keep it, for layer reuse)
set -euo pipefail
cd "$(dirname "$0")/../.."

IMAGE=${IMAGE:-localhost/transformer-book:check}
PY_BASE_LOCAL=localhost/transformer-book-base-python:bookworm
NODE_BASE_LOCAL=localhost/transformer-book-base-node:bookworm
SUITE=bookworm                       # python3.11, like python:3.11-slim
EXPECT_DEVICE=${EXPECT_DEVICE-cpu}
READY_TIMEOUT=${READY_TIMEOUT:-120}
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

say() { printf '\n== %s\n' "$*"; }
die() { printf 'container-check: FAIL: %s\n' "$*" >&2; exit 1; }

WORK=$(mktemp -d)
CONTAINER=""
cleanup() {
  if [ -n "$CONTAINER" ]; then pm rm -f "$CONTAINER" >/dev/null 2>&1 || true; fi
  $SUDO rm -rf "$WORK"
}
trap cleanup EXIT

# ---------------------------------------------------------------- podman, installed if missing
need=()
command -v podman >/dev/null 2>&1 || need+=(podman buildah)
command -v runc >/dev/null 2>&1 || need+=(runc)
if [ -z "${BASE:-}" ] || [ -z "${NODE_BASE:-}" ]; then
  command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
fi
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"
fi

# A containers.conf without default ulimits: sandboxes often refuse to raise them.
printf '[containers]\ndefault_ulimits = []\n' > "$WORK/containers.conf"
pm() { $SUDO env CONTAINERS_CONF="$WORK/containers.conf" podman "$@"; }

# ---------------------------------------------------------------- base images
debian_mirror() {  # the first apt source serving $SUITE, deb822 or one-line format
  python3 - "$SUITE" <<'PY'
import glob, re, sys
suite = sys.argv[1]
def sources():
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        for block in re.split(r"\n\s*\n", open(path).read()):
            fields = {}
            for line in block.splitlines():
                if ":" in line and not line.lstrip().startswith("#"):
                    key, value = line.split(":", 1)
                    fields[key.strip().lower()] = value.split()
            yield fields.get("types", []), fields.get("uris", []), fields.get("suites", [])
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()
            if len(parts) >= 3:
                yield [parts[0]], [parts[1]], [parts[2]]
for types, uris, suites in sources():
    if "deb" in types and suite in suites and uris:
        print(uris[0])
        break
else:
    print("http://deb.debian.org/debian")
PY
}

make_python_base() {  # Debian bookworm with the host's CPython 3.11 in /usr/local, like python:3.11-slim
  local image=$1
  if pm image exists "$image"; then echo "reusing $image"; return; fi
  # Debian's own python3 is 3.11.2, older than the pins allow (pymdown-extensions wants
  # >= 3.11.5), so the stdlib and pip come from a host interpreter; Debian's python3 package
  # is installed only for the shared libraries that interpreter links against.
  local pyexe=${CHECK_PYTHON:-python3.11} prefix pyver mirror rootfs="$WORK/rootfs"
  read -r prefix pyver < <("$pyexe" -c 'import sys; v = sys.version_info
print(sys.base_prefix if v >= (3, 11, 5) and v < (3, 12) else "-", f"{v[0]}.{v[1]}")') \
    || die "no $pyexe on this host; set CHECK_PYTHON, or BASE=python:3.11-slim"
  [ "$prefix" != - ] || die "$pyexe is not CPython 3.11.5+; set CHECK_PYTHON, or BASE=python:3.11-slim"
  mirror=$(debian_mirror)
  say "debootstrap $SUITE from $mirror + CPython $("$pyexe" -V 2>&1 | cut -d' ' -f2) -> $image"
  $SUDO debootstrap --variant=minbase --include=python3,ca-certificates "$SUITE" "$rootfs" "$mirror"
  $SUDO tar -C "$prefix" --exclude="lib/python$pyver/site-packages/*" --exclude="lib/python$pyver/test" \
    --exclude=__pycache__ --exclude='*.a' -c "bin/python$pyver" lib include \
    | $SUDO tar -C "$rootfs/usr/local" -x
  $SUDO ln -sf "python$pyver" "$rootfs/usr/local/bin/python3"
  $SUDO ln -sf python3 "$rootfs/usr/local/bin/python"
  $SUDO chroot "$rootfs" ldconfig
  $SUDO chroot "$rootfs" /usr/local/bin/python3 -m ensurepip --default-pip >/dev/null
  $SUDO chroot "$rootfs" /usr/local/bin/python3 -c 'import ssl, sqlite3, ctypes, lzma, bz2, zlib, decimal'
  $SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  $SUDO tar -C "$rootfs" -c . | pm import --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$image"
  $SUDO rm -rf "$rootfs"
}

make_node_base() {  # the python base plus Debian's nodejs and npm (debootstrap cannot resolve npm)
  local image=$1 from=$2
  if pm image exists "$image"; then echo "reusing $image"; return; fi
  say "$from + nodejs, npm -> $image"
  printf '%s\n' "FROM $from" \
    "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*" \
    'CMD ["node"]' > "$WORK/Containerfile.node"
  pm build --isolation=chroot --network=host -f "$WORK/Containerfile.node" -t "$image" "$WORK"
}

if [ -z "${BASE:-}" ] || [ -z "${NODE_BASE:-}" ]; then
  make_python_base "$PY_BASE_LOCAL"
fi
if [ -z "${NODE_BASE:-}" ]; then
  make_node_base "$NODE_BASE_LOCAL" "$PY_BASE_LOCAL"
  NODE_BASE=$NODE_BASE_LOCAL
fi
BASE=${BASE:-$PY_BASE_LOCAL}

# ---------------------------------------------------------------- pip and TLS inside the build
pip_setting() {  # the host's value of a pip setting: environment first, then pip's config
  local env_name=$1 key=$2 value
  value=${!env_name:-}
  if [ -z "$value" ] && command -v pip3 >/dev/null 2>&1; then
    value=$(pip3 config list 2>/dev/null | sed -n "s/^[^.]*\.$key='\(.*\)'$/\1/p" | head -n1)
  fi
  printf '%s' "$value"
}
mounts=()
{ echo "[global]"; } > "$WORK/pip.conf"
CA_FILE=$(pip_setting PIP_CERT cert)
[ -n "$CA_FILE" ] || CA_FILE=$(python3 -c 'import ssl; print(ssl.get_default_verify_paths().cafile or "")')
if [ -n "$CA_FILE" ] && [ -f "$CA_FILE" ]; then
  mounts+=(-v "$(dirname "$CA_FILE"):$(dirname "$CA_FILE"):ro")
  echo "cert = $CA_FILE" >> "$WORK/pip.conf"
fi
FIND_LINKS=""
for dir in $(pip_setting PIP_FIND_LINKS find-links); do
  if [ -d "$dir" ]; then
    mounts+=(-v "$dir:$dir:ro")
    FIND_LINKS="$FIND_LINKS $dir"
  fi
done
[ -z "$FIND_LINKS" ] || echo "find-links =$FIND_LINKS" >> "$WORK/pip.conf"
mounts+=(-v "$WORK/pip.conf:/etc/pip.conf:ro")
echo "pip inside the build:"; sed 's/^/  /' "$WORK/pip.conf"

# ---------------------------------------------------------------- build
say "podman build -t $IMAGE (BASE=$BASE NODE_BASE=$NODE_BASE)"
t0=$(date +%s)
pm build --isolation=chroot --network=host --format docker \
  --build-arg BASE="$BASE" --build-arg NODE_BASE="$NODE_BASE" \
  "${mounts[@]}" -t "$IMAGE" .
build_s=$(( $(date +%s) - t0 ))
size=$(pm image inspect --format '{{.Size}}' "$IMAGE")

# ---------------------------------------------------------------- run
PORT=${CHECK_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
say "podman run $IMAGE on 127.0.0.1:$PORT"
t0=$(date +%s.%N)
# Without systemd podman complains that it cannot time the HEALTHCHECK (harmless: it is run
# by hand below), so its messages are shown only when the start fails.
CONTAINER=$(pm run --runtime runc -d -p "127.0.0.1:$PORT:8000" "$IMAGE" 2>"$WORK/run.err") \
  || { cat "$WORK/run.err" >&2; die "podman run failed"; }
ready=""
deadline=$(( $(date +%s) + READY_TIMEOUT ))
while [ "$(date +%s)" -lt "$deadline" ]; do
  if [ "$(pm inspect --format '{{.State.Running}}' "$CONTAINER")" != true ]; then
    pm logs "$CONTAINER" | tail -n 40 >&2
    die "the container exited before it answered"
  fi
  if python3 -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=2)' \
       "http://127.0.0.1:$PORT/api/health" 2>/dev/null; then
    ready=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
    break
  fi
  sleep 0.25
done
if [ -z "$ready" ]; then
  pm logs "$CONTAINER" | tail -n 40 >&2
  die "/api/health did not answer within ${READY_TIMEOUT}s"
fi

# ---------------------------------------------------------------- HTTP checks
say "HTTP checks"
uid=$(pm exec "$CONTAINER" id -u)
[ "$uid" = 10001 ] || die "the server runs as uid $uid, not 10001"
pm healthcheck run "$CONTAINER" >/dev/null || die "the image's HEALTHCHECK fails"
echo "uid $uid; HEALTHCHECK passes"
python3 - "http://127.0.0.1:$PORT" "$EXPECT_DEVICE" <<'PY'
import gzip, json, sys, time, urllib.error, urllib.request

base, expect_device = sys.argv[1], sys.argv[2]
failures = []

def request(method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        req.add_header("Content-Type", "application/json")
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            status, hdrs, raw = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        status, hdrs, raw = err.code, err.headers, err.read()
    return status, hdrs, raw, (time.perf_counter() - start) * 1000

def check(label, ok, detail):
    print(f"{'ok  ' if ok else 'FAIL'} {label}: {detail}")
    if not ok:
        failures.append(label)

status, _, raw, ms = request("GET", "/api/health")
health = json.loads(raw) if status == 200 else {}
check("GET /api/health", status == 200 and health.get("status") == "ok"
      and str(health.get("device", "")).startswith(expect_device),
      f"{status}, device {health.get('device')!r}, torch {health.get('torch')}")

for name, params in [("attention_scaling", {"d_k": 128}), ("attention_map", {"model": "minilm"}),
                     ("attention_map", {"model": "minilm"})]:  # again: cached
    status, _, raw, ms = request("POST", f"/api/widgets/{name}", params)
    try:
        body = json.loads(raw)
    except ValueError:
        body = {}
    check(f"POST /api/widgets/{name} {json.dumps(params)}",
          status == 200 and "values" in body and "figure" in body,
          f"{status}, device {body.get('device')!r}, elapsed_ms {body.get('elapsed_ms')}, "
          f"round trip {ms:.0f} ms" + ("" if status == 200 else f", {raw[:200]!r}"))

status, _, raw, ms = request("GET", "/chapters/scaling/")
check("GET /chapters/scaling/", status == 200 and b"data-widget" in raw,
      f"{status}, {len(raw)} bytes, data-widget {'present' if b'data-widget' in raw else 'MISSING'}")

status, hdrs, raw, ms = request("GET", "/", headers={"Accept-Encoding": "gzip"})
encoding = hdrs.get("Content-Encoding")
try:
    html = gzip.decompress(raw) if encoding == "gzip" else raw
except OSError:
    html = b""
check("GET / (Accept-Encoding: gzip)", status == 200 and encoding == "gzip" and b"<html" in html,
      f"{status}, Content-Encoding {encoding}, {len(raw)} bytes -> {len(html)}")

sys.exit(1 if failures else 0)
PY

say "container-check passed"
echo "build ${build_s}s; image $(python3 -c "import sys; print(f'{int(sys.argv[1]) / 1e9:.2f} GB')" "$size"); ready ${ready}s after podman run"
if [ "${KEEP_IMAGE:-1}" = 0 ]; then pm rmi -f "$IMAGE" >/dev/null; fi
