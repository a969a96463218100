"""gunicorn settings for `make serve` and the container: one command, two places.

Threads per worker let static files flow while a widget computes; torch's own thread pool
is divided among the workers so they do not fight over cores.
"""

import atexit
import os
import shutil
import tempfile

# `backend` imports without a sys.path edit here: `python -m backend.serve` runs from the
# repository root (the image's WORKDIR), and `gunicorn -c backend/gunicorn_conf.py` puts the
# folder it starts in on sys.path before it reads this file (elsewhere: PYTHONPATH=<the root>).
from backend import settings
from backend.host import available_cpus, limit_malloc_arenas, torch_threads

# Every variable is checked here, in the master, before a worker forks: a bad one stops
# gunicorn at once with a message naming it.
SETTINGS = settings.load()

# The CPUs torch's threads are planned for: the container's quota, not the host's cores, or
# fewer where BOOK_CPUS says so (a pod's CPU request); never more than the quota allows.
cpus = min(SETTINGS["BOOK_CPUS"], available_cpus())
limit_malloc_arenas(2)  # 64 threads a worker would otherwise spread freed memory over many arenas
bind = f"{SETTINGS['HOST']}:{SETTINGS['PORT']}"
workers = SETTINGS["WEB_CONCURRENCY"]
worker_class = "gthread"
threads = SETTINGS["BOOK_THREADS"]
timeout = 60
graceful_timeout = 20
keepalive = 5
preload_app = True  # import torch and the widgets once, before forking
control_socket_disable = True  # gunicorn 27 otherwise opens a socket in ~/.gunicorn
accesslog = "-" if SETTINGS["BOOK_ACCESS_LOG"] else None
# Behind nginx, %(h)s is the proxy and X-Forwarded-For the reader; %(M)s is the milliseconds
# from request to answer; the id is the X-Request-Id the answer carries (the proxy's, or the
# app's own), so a reader's report or a refusal's log line finds its request.
access_log_format = ('%(h)s %(t)s "%(r)s" %(s)s %(b)s %(M)sms '
                     'id=%({x-request-id}o)s for=%({x-forwarded-for}i)s')
errorlog = "-"
wsgi_app = "backend.app:create_app()"
limit_request_line = 4094  # gunicorn's default, named: the page POSTs a setting longer than this

# Prometheus metrics from every worker in one scrape: each process writes its counts to files in
# this folder (prometheus_client's multiprocess mode) and the worker answering /metrics adds
# them up. A new folder for each server start, so no earlier run's counts are ever added; it
# is gunicorn that sets the variable (raw_env), just before it imports the app, which is when
# prometheus_client picks its storage, and a test that imports this file changes nothing. The
# master removes the folder when it exits (a worker's exit must not).
METRICS_DIR = tempfile.mkdtemp(prefix="book-metrics-")
raw_env = [f"PROMETHEUS_MULTIPROC_DIR={METRICS_DIR}"]
_OWNER = os.getpid()
atexit.register(lambda: os.getpid() == _OWNER and shutil.rmtree(METRICS_DIR, ignore_errors=True))


def _json_error(sock, status_int, reason, mesg):
    """What gunicorn itself answers (a request line or headers too long, a malformed request,
    before Flask sees it) as the API's JSON `{"error": ...}`, not gunicorn's HTML page."""
    import json

    from gunicorn.util import write_nonblock

    if status_int == 414:
        text = (f"the request line is longer than this server takes ({limit_request_line} "
                "bytes); send a long setting as the JSON body of a POST to /api/widgets/<name>")
    elif status_int == 431:
        text = "the request's headers are larger than this server takes"
    else:
        text = f"{reason.lower()}: {mesg}" if mesg else reason.lower()
    body = json.dumps({"error": text}).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    write_nonblock(sock, head.encode("latin-1") + body)


def _answer_errors_as_json() -> None:
    import gunicorn.util

    gunicorn.util.write_error = _json_error  # the workers' handle_error writes through it


_answer_errors_as_json()


def on_starting(server):
    """In the master, before any worker forks: imports that the first computation of several
    light widgets would otherwise pay in every worker, each on its own (torch._dynamo, about
    a second, imported by torch on first use of a meta-device module or a FLOP counter). Done
    once here, every worker starts with it, shared copy-on-write, and a reader's first answer
    does not wait behind a worker's import of it."""
    import torch._dynamo  # noqa: F401


def post_fork(server, worker):
    import torch

    torch.set_num_threads(torch_threads(cpus, workers))  # a share of the quota each
    # Warm the widgets in the background, so the worker answers at once (health checks, pages,
    # cached answers) and a reader's first slider move rarely pays for a cold start: light
    # widgets first (caches, kernels), then the heavy ones that load whole models (seconds).
    # After the fork, not in the master: torch thread pools do not survive a fork.
    import threading

    from backend.app.demand import WARMING

    WARMING.set()  # from the fork on, not from whenever the thread gets going
    threading.Thread(target=warm, args=(worker.log,), name="warm-widgets", daemon=True).start()


# Before each of its computations the warm-up waits until no reader's computation has run for
# WARM_QUIET_S (a reader who arrives while a worker warms is served first, and the next
# requests of the same page or slider drag too), but at most WARM_YIELD_MAX_S, so that under
# constant traffic it still ends.
WARM_QUIET_S = 1.0
WARM_YIELD_MAX_S = 10.0


def warm(log) -> None:
    import time

    from backend.app import metrics
    from backend.app.demand import DEMAND, WARMING
    from backend.compute import REGISTRY

    WARMING.set()  # computations that arrive meanwhile wait longer for a slot, not 503
    metrics.WARMING.set(1)
    start, yields = time.monotonic(), DEMAND.yields
    try:
        _warm(log, REGISTRY, DEMAND)
    finally:
        WARMING.clear()
        metrics.WARMING.set(0)
        log.info("warm-up done in %.1f s (gave way to readers %d times)",
                 time.monotonic() - start, DEMAND.yields - yields)


def _warm(log, REGISTRY, demand) -> None:
    for hint in ("light", "heavy"):
        for module in REGISTRY.values():
            spec = module.SPEC
            if spec.cost_hint != hint or (hint == "heavy" and not spec.warm):
                continue
            if spec.measured:
                # a measured widget takes the host-wide timing lock: warming it in the
                # background would make the first readers' timings wait for it (and 503)
                continue
            points = [spec.defaults()] if hint == "light" else [
                p for p in spec.bake_points() if spec.warm is True or spec.warm(p)]
            for params in points:
                demand.wait_idle(WARM_YIELD_MAX_S, WARM_QUIET_S)  # readers first
                try:
                    module.compute(params)
                except Exception:  # a model that cannot load answers 400 per request
                    log.exception("warming %s failed", spec.name)


def child_exit(server, worker):
    """In the master, when a worker has exited: its gauges (queue depth, slots in use, warming)
    stop counting; its counters and histograms stay in the totals, which never go down."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid, METRICS_DIR)


def when_ready(server):
    """Say so when the threads are too few for the fair queue: gunicorn's own queue would then
    hold the surplus in arrival order, and health checks would wait behind computations."""
    from backend.app.fair_queue import threads_needed

    need = threads_needed(SETTINGS["BOOK_MAX_CONCURRENT"])
    if threads < need:
        server.log.warning(
            "BOOK_THREADS=%d is fewer than the %d that BOOK_MAX_CONCURRENT=%d needs: requests "
            "beyond it wait in gunicorn's queue, first come first served, and health checks "
            "wait with them", threads, need, SETTINGS["BOOK_MAX_CONCURRENT"])
