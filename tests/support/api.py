"""Requests to the widget API: in process through Flask's test client, or over HTTP to a live
server. One helper each, instead of a copy in every test file."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable


def poster(url: str, status: int | None = 200, field: str | None = None) -> Callable:
    """`post(client, **params)` for one widget's URL (`/api/widgets/<name>`).

    With `status` (200 unless told), the answer must have it and `post` returns its JSON body
    (or only its `field`: `poster(URL, 400, "error")` gives the refusal's sentence); with
    None, `post` returns the response itself for the test to look at."""

    def post(client, **params):
        resp = client.post(url, json=params)
        if status is None:
            return resp
        assert resp.status_code == status, resp.get_json()
        return resp.get_json() if field is None else resp.get_json()[field]

    return post


def http_post(base: str, widget: str, body: dict, timeout: float = 120) -> tuple[int, dict]:
    """POST a JSON body to a live server's widget: `(status, JSON answer)`, errors included."""
    req = urllib.request.Request(f"{base}/api/widgets/{widget}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())
