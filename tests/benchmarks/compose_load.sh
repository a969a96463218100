#!/usr/bin/env bash
# Benchmark: the lecture hall (compose.yaml at its shipped settings) under a class of readers.
# Brings the stack up with podman-compose on loopback, waits for it, runs load.py against
# nginx (first asking once for the settings the pages offer their heavy widgets, as `make
# prewarm` does before class: the timing widgets are measured then, once for every replica),
# and takes the stack down again; `make bench-compose` runs it (needs root and podman,
# as tests/deploy/test_compose.py). Recorded, not asserted: tests/benchmarks/results/
# load_compose.json and .md.
#
# Settings (environment): SITE (a built book, for the chapter list; default site/),
# LEVELS (default 1000), DURATION (seconds a level, default 40), BOOK_IMAGE (an app image to
# use; default: built from this tree by tests/container/build.sh), NGINX_BASE / REDIS_IMAGE
# (default: deploy/local-bases.sh's stand-ins), BOOK_HTTP_PORT (default 18080), NOTE.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
SITE=${SITE:-site}
[ -f "$SITE/index.html" ] || { echo "SITE=$SITE is not a built book (make build)" >&2; exit 2; }
conf=$(mktemp)
printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' > "$conf"
export CONTAINERS_CONF=$conf BUILDAH_ISOLATION=chroot
export BOOK_PROXY_IMAGE=localhost/transformer-book-proxy:bench
export BOOK_HTTP_PORT=${BOOK_HTTP_PORT:-18080} BOOK_REDIS_PASSWORD=$(openssl rand -hex 16)
if [ -z "${BOOK_IMAGE:-}" ]; then
  export BOOK_IMAGE=localhost/transformer-book:bench
  IMAGE=$BOOK_IMAGE SITE_CONTEXT=$SITE tests/container/build.sh
fi
if [ -z "${NGINX_BASE:-}" ] || [ -z "${REDIS_IMAGE:-}" ]; then
  deploy/local-bases.sh
  export NGINX_BASE=${NGINX_BASE:-localhost/book-nginx:bookworm}
  export REDIS_IMAGE=${REDIS_IMAGE:-localhost/book-redis:bookworm}
fi
podman rmi -f "$BOOK_PROXY_IMAGE" >/dev/null 2>&1 || true   # rebuilt from BOOK_IMAGE's site
compose=("$PY" -m podman_compose -p bookbench -f compose.yaml)
trap '"${compose[@]}" down -v -t 5 >/dev/null 2>&1 || true; rm -f "$conf"' EXIT
t0=$(date +%s)
"${compose[@]}" up -d
until curl -fsS -o /dev/null "http://127.0.0.1:$BOOK_HTTP_PORT/api/health" 2>/dev/null; do
  [ $(( $(date +%s) - t0 )) -lt 300 ] || { echo "the stack did not answer within 300 s" >&2; exit 1; }
  sleep 1
done
echo "the stack answered after $(( $(date +%s) - t0 )) s; 20 s more for every replica to warm"
sleep 20
"$PY" tests/benchmarks/load.py --url "http://127.0.0.1:$BOOK_HTTP_PORT" --site "$SITE" \
  --levels "${LEVELS:-1000}" --duration "${DURATION:-40}" --prewarm \
  --out tests/benchmarks/results/load_compose.json \
  --note "${NOTE:-compose.yaml at its shipped settings (replicas, workers, threads, rate limit: its defaults) under podman on this machine, the load generator beside it}"
