"""The book's build hooks refuse a page's mistake with a reason that names the page first."""

from __future__ import annotations

import pytest
from mkdocs.exceptions import PluginError


def stops_the_build(build, text, message: str, page: str) -> None:
    """`build(text)` stops the build (a PluginError whose text matches `message`), and the
    reason starts with the page's path, `page`."""
    with pytest.raises(PluginError, match=message) as caught:
        build(text)
    assert str(caught.value).startswith(f"{page}: ")
