# The book, self-hosted: site + API from one origin on port 8000.
#   docker build -t transformer-book . && docker run -p 8000:8000 transformer-book
#
# Build arguments:
#   TORCH_INDEX   which PyTorch build: `cpu` (default), or a CUDA wheel index such as `cu128`
#                 (the GPU image: `--build-arg TORCH_INDEX=cu128`, run with `--gpus all` or
#                 podman's `--device nvidia.com/gpu=all`). The wheels carry their CUDA runtime,
#                 so the base stays python:3.11-slim; the host needs only the NVIDIA driver.
#                 Empty: torch from pip's own index/configuration (on PyPI, its default build).
#   BOOK_API_URL  the API base the built pages call (e.g. https://api.example.edu/api);
#                 empty: /api on the page's own origin.
#   BASE / NODE_BASE  base images; can point at local ones where registries are unreachable.
# Layers, slowest-changing first: the Python requirements (minutes, cached until a
# lock file changes), then the code, then the book's build. A chapter edit reruns only
# the `site` stage. A site already built on the host (`make build`) can stand in for that stage
# with `--build-context site=site` (BuildKit / podman): then a chapter edit costs seconds.
ARG BASE=python:3.11-slim
ARG NODE_BASE=node:26-trixie-slim

# ---- browser libraries (KaTeX, plotly.js) from the npm registry, served by the site itself;
# plotly.js built from its source with the book's trace types only (as `make` does). The book
# stage takes what the site ships, not the ~180 MB of packages that build it.
FROM ${NODE_BASE} AS assets
WORKDIR /book
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY widgets/build/plotly_bundle.mjs ./widgets/build/
RUN node widgets/build/plotly_bundle.mjs node_modules/.book/plotly.min.js

# ---- the API server's Python environment: exactly requirements.txt, locked, in a venv
FROM ${BASE} AS deps
ARG TORCH_INDEX=cpu
# the pin in requirements.txt (tests/test_dockerfile.py checks they agree)
ARG TORCH_VERSION=2.13.0
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv
WORKDIR /book
COPY requirements.lock requirements-nodeps.lock ./
# Every package from the hashed locks (`make lock`): pip refuses a file whose SHA-256 the lock
# does not list, whichever index offers it. torch is the lock's CPU build: TORCH_INDEX=cpu adds
# that index (the hashes keep every other package to PyPI's files); empty, pip's own
# configuration finds it (a local wheel folder). A CUDA index installs its own build of torch
# first, unhashed (the lock lists the CPU build's files); the lock's torch pin is then met.
RUN if [ "${TORCH_INDEX}" = cpu ]; then \
      export PIP_EXTRA_INDEX_URL="https://download.pytorch.org/whl/cpu"; \
    elif [ -n "${TORCH_INDEX}" ]; then \
      pip install --index-url "https://download.pytorch.org/whl/${TORCH_INDEX}" "torch==${TORCH_VERSION}"; \
    fi \
    && pip install --require-hashes -r requirements.lock \
    && pip install --require-hashes --no-deps -r requirements-nodeps.lock

# ---- the same venv less what the server never imports or runs (deploy/prune_venv.py says
# what and why: torch's C++ tests, headers and tools, pip, unused bytecode, symbol tables)
FROM deps AS pruned
# binutils for `strip`; the stage is thrown away, only the venv it leaves is copied
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends binutils \
    && rm -rf /var/lib/apt/lists/*
COPY deploy/prune_venv.py ./
RUN python prune_venv.py /opt/venv

# ---- what every stage below runs on: the base image and the pruned venv
FROM ${BASE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NO_MKDOCS_2_WARNING=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    PATH=/opt/venv/bin:$PATH
WORKDIR /book
COPY --from=pruned /opt/venv /opt/venv
RUN useradd --system --uid 10001 --home-dir /book book

# ---- the book: notebooks executed, widgets baked (computed by the torch above, in the venv
# before pruning, which still has pip for the docs' requirements)
FROM deps AS book
ENV NO_MKDOCS_2_WARNING=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1
COPY requirements-docs.lock ./
RUN pip install --require-hashes -r requirements-docs.lock
COPY --from=assets /book/node_modules/katex/dist ./node_modules/katex/dist
COPY --from=assets /book/node_modules/.book ./node_modules/.book
COPY backend ./backend
COPY widgets ./widgets
COPY mkdocs.yml ./
COPY docs ./docs
ARG BOOK_API_URL=
# mkdocs-jupyter keeps executed notebooks in .cache/, keyed by their content: a build cache
# across image builds, so a chapter edit does not execute every exercise again (BuildKit/podman)
RUN --mount=type=cache,target=/book/.cache,id=transformer-book-mkdocs \
    BOOK_API_URL="${BOOK_API_URL}" mkdocs build --strict --site-dir /site

# ---- the built site alone, at the root: `--build-context site=DIR` replaces this stage
FROM scratch AS site
COPY --from=book /site /

# ---- what runs: the server code and the built site, nothing of the build
FROM runtime
COPY backend ./backend
COPY --from=site / ./site
USER 10001
EXPOSE 8000
# 10 s: each check starts a Python that compiles urllib anew (python images ship the standard
# library without bytecode), which takes seconds on a loaded host before the server answers
HEALTHCHECK --interval=30s --timeout=10s \
  CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/api/health', timeout=8)"]
CMD ["python", "-m", "backend.serve"]
