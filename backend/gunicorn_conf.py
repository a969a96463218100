"""gunicorn settings for `make serve` and the container: one command, two places.

Threads per worker let static files flow while a widget computes; torch's own thread pool
is divided among the workers so they do not fight over cores.
"""

import multiprocessing
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # gunicorn -c from any folder
from backend import settings  # noqa: E402

# Every variable is checked here, in the master, before a worker forks: a bad one stops
# gunicorn at once with a message naming it.
SETTINGS = settings.load()

cpus = multiprocessing.cpu_count()
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
errorlog = "-"
wsgi_app = "backend.app:create_app()"


def post_fork(server, worker):
    import torch

    torch.set_num_threads(max(1, cpus // workers))
    # Warm each light widget once (caches, kernels) so a reader's first slider move is fast.
    # Done after the fork, not in the master: torch thread pools do not survive a fork.
    from backend.widgets import REGISTRY

    for module in REGISTRY.values():
        if module.SPEC.cost_hint == "light":
            module.compute(module.SPEC.defaults())
    # Heavy widgets load whole models (seconds): warm them in the background so the worker
    # starts answering at once and a reader's first request rarely waits for a load.
    import threading

    def warm_heavy():
        for module in REGISTRY.values():
            if module.SPEC.cost_hint == "heavy" and module.SPEC.warm:
                for params in module.SPEC.bake_points():
                    try:
                        module.compute(params)
                    except Exception:  # a model that cannot load answers 400 per request
                        worker.log.exception("warming %s failed", module.SPEC.name)

    threading.Thread(target=warm_heavy, name="warm-heavy-widgets", daemon=True).start()
