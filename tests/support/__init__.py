"""Helpers the tests share: `server` (live gunicorn processes), `api` (requests to the API,
in process and over HTTP) and `browser` (Chromium pages, the phone's among them).

Imported as `tests.support.<module>`: pyproject.toml puts the repository root on sys.path."""
