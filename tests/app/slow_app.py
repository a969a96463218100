"""A test server whose `attention_scaling` computation is a fixed sleep: the guards' behaviour
on a live gunicorn, measured without depending on how busy the machine's CPUs are.

`gunicorn --pythonpath tests/app 'slow_app:create()'`; `BOOK_TEST_COMPUTE_SECONDS` sets the
sleep (default 0.05 s).

`kv_decode`, a measured widget, is a stand-in too: a `BOOK_TEST_MEASURE_SECONDS` sleep (default
0.5 s) under the real timing lock, which appends one line (pid, start, end) to the file
`BOOK_TEST_MEASURE_LOG` names, so a test counts the measurements every replica took."""

from __future__ import annotations

import json
import os
import time

from backend.app import create_app
from backend.compute import REGISTRY, measure


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

    measure_delay = float(os.environ.get("BOOK_TEST_MEASURE_SECONDS", "0.5"))
    measure_log = os.environ.get("BOOK_TEST_MEASURE_LOG")

    def measured(params):
        with measure.timing_lock():
            t0 = time.monotonic()
            time.sleep(measure_delay)
            t1 = time.monotonic()
        if measure_log:
            with open(measure_log, "a", encoding="utf-8") as f:
                f.write(json.dumps([os.getpid(), t0, t1]) + "\n")
        return {"values": {"steps": params["steps"]}, "figure": {"data": [], "layout": {}}}

    REGISTRY["kv_decode"].compute = measured

    @app.after_request
    def say_which_worker(resp):  # the tests wait until every worker has answered once
        resp.headers["X-Test-Worker"] = str(os.getpid())
        return resp

    return app
