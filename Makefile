# Two commands for a new user:  `make serve`  and  `make test`.
# Both create .venv and node_modules when missing and rebuild the book first.

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

.PHONY: serve test build bench chromium redis prewarm container-check clean

## serve: build the book and serve it with the API on http://127.0.0.1:$(PORT)
serve: build
	exec $(BIN)/python -m backend.serve

## test: every test; the suite builds the book itself (strict, notebooks executed)
test: $(VENV)/.dev-installed node_modules/.installed chromium redis
	$(BIN)/python -m pytest

## build: the static site in site/, with widgets baked
build: $(VENV)/.installed node_modules/.installed
	$(BIN)/mkdocs build --strict

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt requirements-docs.txt | $(BIN)/python
	$(BIN)/pip install -r requirements.txt -r requirements-docs.txt
	touch $@

$(VENV)/.dev-installed: requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install -r requirements-dev.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

## bench: recorded, not asserted: slider-to-plot latency of every widget, in Chromium
bench: build $(VENV)/.dev-installed chromium
	$(BIN)/python tests/benchmarks/slider_latency.py
	$(BIN)/python tests/benchmarks/first_paint.py

## chromium: the system browser the browser tests drive (Playwright never downloads its own)
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }

## redis: Debian's redis-server, for the tests of the shared cache and rate counters
redis:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "Installing Debian's redis-server for the cache tests"; \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server; }

## prewarm: compute every baked point and the chapters' settings into the configured cache
## (BOOK_CACHE_URL=redis://...), or into a running server: `make prewarm URL=http://host:8000`
prewarm: $(VENV)/.installed
	$(BIN)/python -m backend.prewarm $(if $(URL),--url $(URL))

## container-check: opt-in, not part of `make test`: build the Dockerfile with podman, run the
## image and probe its API and pages (needs root or sudo; makes local base images when needed)
container-check:
	tests/container/check.sh

clean:
	rm -rf site .cache
