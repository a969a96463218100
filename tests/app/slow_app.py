"""A test server whose `attention_scaling` computation is a fixed sleep: the guards' behaviour
on a live gunicorn, measured without depending on how busy the machine's CPUs are.

`gunicorn --pythonpath tests/app 'slow_app:create()'`; `BOOK_TEST_COMPUTE_SECONDS` sets the
sleep (default 0.05 s)."""

from __future__ import annotations

import os
import time

from backend.app import create_app
from backend.compute import REGISTRY


def create():
    app = create_app()
    module = REGISTRY["attention_scaling"]
    delay = float(os.environ.get("BOOK_TEST_COMPUTE_SECONDS", "0.05"))
    canned = {"values": {"var_unscaled": 1.0, "var_scaled": 1.0},
              "figure": {"data": [], "layout": {}}}

    def compute(params):
        time.sleep(delay)
        return canned

    module.compute = compute

    @app.after_request
    def say_which_worker(resp):  # the tests wait until every worker has answered once
        resp.headers["X-Test-Worker"] = str(os.getpid())
        return resp

    return app
