# Two commands for a new user:  `make serve`  and  `make test`.
# Both create .venv and node_modules when missing; test builds the book itself, serve builds it
# when something the build reads changed since site/ was built.

SHELL   := /bin/bash
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PORT    ?= 8000
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

export PORT
export NO_MKDOCS_2_WARNING := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: serve test test-fast lint lock build pdf bench bench-load bench-compose bench-weight gpu-check chromium redis podman prewarm container-check clean

## serve: serve the book with the API on http://127.0.0.1:$(PORT), built first unless site/ was
## built from the tree as it is now (widgets/build/inputs.py)
serve: $(VENV)/.installed node_modules/.installed
	$(BIN)/python -m widgets.build.inputs --check site || $(MAKE) build
	exec $(BIN)/python -m backend.serve

## test: every test; the suite builds the book itself (strict, notebooks executed) and, with
## root and podman (installed under CI=true), builds the image and probes it. First, in seconds,
## ruff, then node's own runner on the browser runtime's pure modules (tests/js: shared cases from
## Python), then pytest in lanes (tests/lanes.py): the built book's tests beside the rest, then
## the timing tests alone
test: $(VENV)/.dev-installed node_modules/.installed chromium redis podman
	$(BIN)/ruff check .
	node --test tests/js/
	BOOK_TEST_SITE= $(BIN)/python tests/lanes.py

## test-fast: a developer's shortcut, a few minutes: ruff, then every test that needs no built
## book, browser, container, wall-clock timing or minutes of its own (markers: pyproject.toml)
test-fast: $(VENV)/.dev-installed node_modules/.installed
	$(BIN)/ruff check .
	node --test tests/js/
	BOOK_TEST_SITE= $(BIN)/python -m pytest -m "$(FAST)"

FAST := not (build or browser or container or timing or slow or gpu)

## lint: ruff alone (`$(BIN)/ruff check --fix .` fixes what it can)
lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

## build: the static site in site/, with widgets baked
build: $(VENV)/.installed node_modules/.installed
	$(BIN)/python -m widgets.build.inputs --build site -- $(BIN)/mkdocs build --strict

## pdf: the print edition (site/print/) printed by the system Chromium to site/book.pdf: a
## table of contents with each chapter's page, page numbers in the footer
pdf: build $(VENV)/.dev-installed chromium
	$(BIN)/python widgets/build/print_pdf.py --site site --out site/book.pdf

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Installed from the hashed locks (`make lock` writes them from requirements*.txt): every
# package at the locked version, and pip refuses any file whose SHA-256 the lock does not list.
# The lock hashes torch's CPU build for Linux (x86_64, aarch64); where pip finds no such file (a
# Mac, or PyPI's CUDA build on Linux) the pins in requirements*.txt are installed instead, unhashed.
UNHASHED = { echo "make: no file here matches $(1)'s hashes (torch's CPU build is hashed for Linux); installing the pins of $(2) without hashes" >&2; $(BIN)/pip install $(3) -r $(2); }

$(VENV)/.installed: requirements-docs.lock requirements-nodeps.lock | $(BIN)/python
	$(BIN)/pip install --require-hashes -r requirements-docs.lock \
	  || $(call UNHASHED,requirements-docs.lock,requirements-docs.txt,-r requirements.txt)
	$(BIN)/pip install --require-hashes --no-deps -r requirements-nodeps.lock
	touch $@

$(VENV)/.dev-installed: requirements-dev.lock $(VENV)/.installed
	$(BIN)/pip install --require-hashes -r requirements-dev.lock \
	  || $(call UNHASHED,requirements-dev.lock,requirements-dev.txt,)
	touch $@

## lock: the hashed locks (requirements*.lock) from the pins people edit (requirements*.txt),
## after any change to those (tests/test_lock.py fails until then); keeps every locked version
## no pin moves. UPGRADE=1: the newest release each pin allows (the re-lock, README "What ages")
lock: $(VENV)/.dev-installed
	$(BIN)/python deploy/lock.py $(if $(UPGRADE),--upgrade)

# plotly.js is built from its source with only the trace types the book draws (the script says why)
node_modules/.installed: package.json package-lock.json widgets/build/plotly_bundle.mjs
	npm ci --no-audit --no-fund
	node widgets/build/plotly_bundle.mjs node_modules/.book/plotly.min.js
	touch $@

## bench: recorded, not asserted: slider-to-plot latency of every widget, in Chromium; first
## paint on a throttled link; SmolLM2-135M's load, forward and cached step on this CPU
bench: build $(VENV)/.dev-installed chromium
	$(BIN)/python tests/benchmarks/slider_latency.py
	$(BIN)/python tests/benchmarks/first_paint.py
	$(BIN)/python tests/benchmarks/smollm2.py

## bench-load: recorded, not asserted: a lecture hall (50, 200, 500 readers behind one address)
## against gunicorn on loopback, ~3 minutes; LOAD_ARGS passes options (e.g. --duration 60,
## --env BOOK_RATE_LIMIT=off, --url http://127.0.0.1:8080 for compose's nginx)
bench-load: build $(VENV)/.dev-installed
	$(BIN)/python tests/benchmarks/load.py $(LOAD_ARGS)

## bench-compose: recorded, not asserted: the lecture-hall stack (compose.yaml, shipped settings)
## under 1,000 readers through nginx, with podman (root); ~5 minutes with the images built
bench-compose: build $(VENV)/.dev-installed
	$(MAKE) podman CI=true
	SITE=site tests/benchmarks/compose_load.sh

## bench-weight: recorded: the full build's time, then each page's first-load bytes in Chromium
bench-weight: $(VENV)/.dev-installed chromium
	$(BIN)/python tests/benchmarks/page_weight.py --build

## gpu-check: on a GPU host, every Part III timing measured on CUDA and recorded
## (tests/benchmarks/results/part3_timings_cuda.json), then the chapters' timing claims on CUDA
gpu-check: $(VENV)/.dev-installed
	BOOK_DEVICE=cuda $(BIN)/python tests/benchmarks/part3_timings.py
	BOOK_DEVICE=cuda $(BIN)/python -m pytest -q tests/claims/test_cost.py \
	  tests/claims/test_kv_cache.py tests/claims/test_recurrence.py

## chromium: the system browser the browser tests drive (Playwright never downloads its own)
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }

## podman: the container tools tests/container/test_image.py drives; installed when missing
## under CI=true (elsewhere that test skips and says why)
podman:
	@if [ "$${CI:-}" = true ] && ! { command -v podman && command -v runc && command -v debootstrap; } >/dev/null 2>&1; then \
	  echo "Installing podman, buildah, runc, debootstrap for the image test"; \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y podman buildah runc debootstrap; fi

## container-check: the image test alone, building the book inside the image as a plain
## `docker build .` does (`make test` hands the image the suite's own build of the site)
container-check: $(VENV)/.dev-installed
	$(MAKE) podman CI=true
	CI=true BOOK_IMAGE_SITE=build $(BIN)/python -m pytest tests/container -v

## redis: Debian's redis-server, for the tests of the shared cache and rate counters
redis:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "Installing Debian's redis-server for the cache tests"; \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server; }

## prewarm: compute every baked point and the chapters' settings into the shared cache
## (BOOK_CACHE_URL=redis://..., computed here), else through `make serve`'s server on
## http://127.0.0.1:$(PORT), or through another: `make prewarm URL=http://host:8080`. Without a
## shared cache a server's workers each keep their own, and the report says it warmed only some
prewarm: $(VENV)/.installed
	$(BIN)/python -m backend.prewarm $(if $(URL),--url $(URL),$(if $(BOOK_CACHE_URL),,--url http://127.0.0.1:$(PORT)))

clean:
	rm -rf site .cache
