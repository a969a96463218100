#!/usr/bin/env bash
# Build the Dockerfile with podman; `tests/container/test_image.py` (run by `make test` and
# `make container-check`) calls this, then runs the image and probes it over HTTP.
# Needs root or sudo, a few minutes cold and ~3 GB of disk.
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
#   TORCH_INDEX      the Dockerfile's build argument (default here: empty, i.e. torch from
#                    pip's configuration, when its find-links folder holds a torch wheel, as
#                    download.pytorch.org may be unreachable; else cpu)
#   SITE_CONTEXT     a folder holding an already built site (`mkdocs build`): the image takes
#                    it instead of building the book again (the Dockerfile's `site` stage)
#   BASES_ONLY=1     make the base images and stop
# Prints `BUILD_SECONDS=<n>` and `IMAGE_BYTES=<n>` as its last lines.
set -euo pipefail
cd "$(dirname "$0")/../.."

IMAGE=${IMAGE:-localhost/transformer-book:check}
PY_BASE_LOCAL=localhost/transformer-book-base-python:bookworm
NODE_BASE_LOCAL=localhost/transformer-book-base-node:bookworm
SUITE=bookworm                       # python3.11, like python:3.11-slim
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

say() { printf '\n== %s\n' "$*"; }
die() { printf 'build.sh: FAIL: %s\n' "$*" >&2; exit 1; }

WORK=$(mktemp -d)
cleanup() { $SUDO rm -rf "$WORK"; }
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

# A site handed in replaces the book's stages, and with them the only use of NODE_BASE.
if [ -n "${SITE_CONTEXT:-}" ] && [ -z "${NODE_BASE:-}" ]; then NODE_BASE=${BASE:-$PY_BASE_LOCAL}; fi
if [ -z "${BASE:-}" ] || [ -z "${NODE_BASE:-}" ]; then
  make_python_base "$PY_BASE_LOCAL"
fi
if [ "${BASES_ONLY:-0}" = 1 ] && [ -n "${NODE_BASE:-}" ]; then exit 0; fi
if [ -z "${NODE_BASE:-}" ]; then
  make_node_base "$NODE_BASE_LOCAL" "$PY_BASE_LOCAL"
  NODE_BASE=$NODE_BASE_LOCAL
fi
BASE=${BASE:-$PY_BASE_LOCAL}
if [ "${BASES_ONLY:-0}" = 1 ]; then exit 0; fi

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
# torch: from the local wheel folder when it holds one (download.pytorch.org may be out of
# reach), else the Dockerfile's default CPU index (PyPI's own torch is the CUDA build).
if [ -z "${TORCH_INDEX+set}" ]; then
  TORCH_INDEX=cpu
  for dir in $FIND_LINKS; do
    if compgen -G "$dir/torch-*.whl" >/dev/null; then TORCH_INDEX=""; fi
  done
fi
extra=(--build-arg TORCH_INDEX="$TORCH_INDEX")
[ -z "${BOOK_API_URL:-}" ] || extra+=(--build-arg BOOK_API_URL="$BOOK_API_URL")
if [ -n "${SITE_CONTEXT:-}" ]; then
  compgen -G "$SITE_CONTEXT/assets/book/runtime-*/main.js" >/dev/null || die "SITE_CONTEXT=$SITE_CONTEXT holds no built site"
  extra+=(--build-context site="$SITE_CONTEXT")
fi
say "podman build -t $IMAGE (BASE=$BASE NODE_BASE=$NODE_BASE ${extra[*]})"
t0=$(date +%s.%N)
pm build --isolation=chroot --network=host --format docker \
  --build-arg BASE="$BASE" --build-arg NODE_BASE="$NODE_BASE" "${extra[@]}" \
  "${mounts[@]}" -t "$IMAGE" .
build_s=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
echo "BUILD_SECONDS=$build_s"
echo "IMAGE_BYTES=$(pm image inspect --format '{{.Size}}' "$IMAGE")"
