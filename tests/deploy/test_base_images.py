"""The base images the repository names by default are on lines their projects still support.

The table is the projects' published schedules (Node.js's release schedule; nginx's even minor
lines are its stable ones, each replaced by the next in April). This test fails on the day a
default's line ends, naming the one to move to: the README's "What ages" check, run by CI."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# line -> its last supported day. Node.js publishes its LTS lines' end-of-life dates; an nginx
# stable line ends when the next one is released (1.28.0: April 2025, 1.30.0: April 2026), so
# 1.30's day is the expected April release of 1.32: correct it when that lands.
NODE_LTS = {"20": "2026-04-30", "22": "2027-04-30", "24": "2028-04-30", "26": "2029-04-30"}
NGINX_STABLE = {"1.26": "2025-04-23", "1.28": "2026-04-14", "1.30": "2027-04-30"}
NEXT = "node: the current LTS line (Node.js release schedule); nginx: the current stable line"

DEFAULTS = {  # file -> what names a default base image there
    "Dockerfile": r"^ARG NODE_BASE=(\S+)$",
    "compose.yaml": r"NODE_BASE:-([^}]+)\}",
    "deploy/nginx/Containerfile": r"^ARG NGINX_BASE=(\S+)$",
    "compose.yaml ": r"NGINX_BASE:-([^}]+)\}",
}


def defaults() -> list[tuple[str, str]]:
    found = []
    for where, pattern in DEFAULTS.items():
        tags = re.findall(pattern, (ROOT / where.strip()).read_text(), re.M)
        assert tags, f"no default base image found in {where.strip()}"
        found += [(where.strip(), tag) for tag in tags]
    return found


def last_day(image: str) -> str:
    name, _, tag = image.partition(":")
    if name == "node":
        table, line = NODE_LTS, tag.split(".")[0].split("-")[0]
    elif name == "nginx":
        table, line = NGINX_STABLE, ".".join(tag.split("-")[0].split(".")[:2])
    else:
        raise AssertionError(f"{image}: no schedule for this image in the test's table")
    assert line in table, f"{image}: line {line} is not a supported line in the table ({NEXT})"
    return table[line]


def test_every_default_base_image_is_on_a_supported_line():
    today = datetime.date.today().isoformat()
    for where, image in defaults():
        assert last_day(image) >= today, (
            f"{where}: {image} reached its end of life on {last_day(image)}; move to {NEXT}")


def test_the_table_reads_tags_as_their_lines():
    assert last_day("node:20-bookworm-slim") == "2026-04-30"  # what the Dockerfile named before
    assert last_day("node:26-trixie-slim") == "2029-04-30"
    assert last_day("nginx:1.30-trixie") == "2027-04-30"
    with pytest.raises(AssertionError, match="not a supported line"):
        last_day("nginx:1.27-bookworm")  # a mainline line (odd), which deploy/ named before
