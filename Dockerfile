# The book, self-hosted: site + API from one origin on port 8000.
#   docker build -t transformer-book . && docker run -p 8000:8000 transformer-book
# BASE / NODE_BASE can point at local images where registries are unreachable.
ARG BASE=python:3.11-slim
ARG NODE_BASE=node:20-bookworm-slim

# ---- browser libraries (KaTeX, plotly.js) from the npm registry, served by the site itself
FROM ${NODE_BASE} AS assets
WORKDIR /book
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# ---- the runtime, plus a build of the book (notebooks executed, widgets baked)
FROM ${BASE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    NO_MKDOCS_2_WARNING=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HOST=0.0.0.0 \
    PORT=8000
WORKDIR /book
COPY requirements.txt requirements-docs.txt ./
RUN pip install -r requirements.txt -r requirements-docs.txt
COPY --from=assets /book/node_modules ./node_modules
COPY . .
RUN mkdocs build --strict \
    && rm -rf node_modules .cache \
    && useradd --system --uid 10001 --home-dir /book book \
    && chown -R book /book
USER 10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s \
  CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/api/health', timeout=4)"]
CMD ["gunicorn", "-c", "backend/gunicorn_conf.py"]
