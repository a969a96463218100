#!/usr/bin/env bash
# GPU smoke test of the image, for a machine with an NVIDIA GPU, its driver and the NVIDIA
# container toolkit (Docker: `--gpus all`; podman: CDI, `nvidia-ctk cdi generate`). Not part of
# `make test` (CI has no GPU). It builds the CUDA image, runs it and checks that
#   - /api/health says cuda, names the GPU, gives its memory and the CUDA version, and shows the
#     cuda row of the per-device limits (backend/budgets.py);
#   - a measured widget (sequential_vs_parallel) answers, measured on cuda.
#
#   tests/container/gpu_smoke.sh                 # docker if present, else podman
# Settings (environment):
#   ENGINE        docker | podman (default: whichever is installed, docker first)
#   TORCH_INDEX   the CUDA wheel index of torch==2.13.0 (default cu128)
#   IMAGE         tag to build (default transformer-book:gpu)
#   SKIP_BUILD=1  test an image already built under IMAGE
#   PORT          host port on 127.0.0.1 (default 8000)
set -euo pipefail
cd "$(dirname "$0")/../.."

ENGINE=${ENGINE:-$(command -v docker >/dev/null 2>&1 && echo docker || echo podman)}
TORCH_INDEX=${TORCH_INDEX:-cu128}
IMAGE=${IMAGE:-transformer-book:gpu}
PORT=${PORT:-8000}
if [ "$ENGINE" = docker ]; then GPU=(--gpus all); else GPU=(--device nvidia.com/gpu=all); fi
fail() { echo "gpu_smoke: FAIL: $*" >&2; exit 1; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
  || fail "nvidia-smi does not see a GPU on this host"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  echo "== $ENGINE build --build-arg TORCH_INDEX=$TORCH_INDEX -t $IMAGE ."
  start=$(date +%s)
  "$ENGINE" build --build-arg TORCH_INDEX="$TORCH_INDEX" -t "$IMAGE" .
  echo "build: $(( $(date +%s) - start )) s"
fi

echo "== $ENGINE run ${GPU[*]} -p 127.0.0.1:$PORT:8000 $IMAGE"
cid=$("$ENGINE" run -d "${GPU[@]}" -p "127.0.0.1:$PORT:8000" "$IMAGE")
trap '"$ENGINE" logs "$cid" 2>&1 | tail -n 20; "$ENGINE" rm -f "$cid" >/dev/null' EXIT
start=$(date +%s.%N)
for _ in $(seq 1 600); do
  curl -fsS "http://127.0.0.1:$PORT/api/health" >/dev/null 2>&1 && break
  sleep 0.2
done
echo "cold start to a healthy /api/health: $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s"

python3 - "http://127.0.0.1:$PORT" <<'PY'
import json, sys, urllib.request

base = sys.argv[1]
health = json.load(urllib.request.urlopen(base + "/api/health", timeout=10))
print(json.dumps(health, indent=2))
acc = health["accelerator"]
assert health["device"].startswith("cuda"), f"device is {health['device']!r}, not cuda"
assert isinstance(health["warming"], bool), health  # what a readiness probe may wait on
assert acc["kind"] == "cuda" and acc["name"], acc
assert acc["cuda_version"] and acc["memory_total_bytes"] >= acc["memory_free_bytes"] > 0, acc
cost = health["limits"]["attention_cost"]
assert cost["max_context_len"] > 1448, cost   # a GPU's ceiling is above the CPU's (1,448)
# each worker plans against its share of the card, not all of it
assert cost["memory_budget_bytes"] <= acc["memory_free_bytes"] // 2, (cost, acc)

req = urllib.request.Request(base + "/api/widgets/sequential_vs_parallel", data=b"{}",
                             method="POST", headers={"Content-Type": "application/json"})
body = json.load(urllib.request.urlopen(req, timeout=120))
where = body["values"]["measured_on"]
print("sequential_vs_parallel measured on:", where,
      f"speed-up {body['values']['speedup']:.1f}x")
assert where.startswith("cuda"), where
print("gpu_smoke passed")
PY
