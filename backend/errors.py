"""The errors the book's computations raise for the app to answer, with no HTTP in them.

The widget layer says *what* went wrong; the app alone (`backend/app/errors.py`) says which
status that is: `ParamError` 400, `Busy` 503 with Retry-After, `ModelUnavailable` 503.
"""

from __future__ import annotations


class ParamError(ValueError):
    """A client sent a value the spec does not allow. The message is shown to the reader."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class Busy(RuntimeError):
    """The server cannot take this computation now (its queue is full, or another reader's
    timing holds the host's lock): try again in `retry_after` seconds. `reason` names the
    cause in a word, for the server's log and metrics."""

    def __init__(self, description: str, retry_after: int = 1, reason: str = "other"):
        super().__init__(description)
        self.description = description
        self.retry_after = retry_after
        self.reason = reason


class ModelUnavailable(RuntimeError):
    """The shipped model could not be loaded (a damaged or missing file): the server's fault,
    not the reader's. The API answers 503, and the page falls back to its baked results."""
