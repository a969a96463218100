"""The instructors' page quotes the recorded load benchmark; the quoted figures must be the
record's (tests/benchmarks/results/load.json and, for the old way of asking, load_post.json),
so a re-run that changes them fails here until the page is updated."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from backend.app import api

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
from load_plan import Plan  # noqa: E402

PAGE = (ROOT / "docs/instructors.md").read_text()
RECORD = json.loads((ROOT / "tests/benchmarks/results/load.json").read_text())
POST = json.loads((ROOT / "tests/benchmarks/results/load_post.json").read_text())
COMPOSE = json.loads((ROOT / "tests/benchmarks/results/load_compose.json").read_text())
SECTION = PAGE[PAGE.index("## How many students"):PAGE.index("## What each device allows")]
WORDS = " ".join(SECTION.split())  # the section's sentences, line breaks as spaces


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _near(quoted: str, recorded: float) -> bool:
    """A figure as the page writes it: one decimal under 1,000 ms, whole above."""
    return abs(_num(quoted) - recorded) < (1 if recorded >= 1000 else 0.051)


def _rows() -> dict[int, list[str]]:
    rows = {}
    for line in SECTION.splitlines():
        m = re.match(r"^\| (\d+) \|(.*)\|$", line)
        if m:
            rows[int(m.group(1))] = [c.strip() for c in m.group(2).split("|")]
    return rows


def test_the_capacity_table_is_the_recorded_benchmark():
    rows = _rows()
    levels = {lvl["readers"]: lvl for lvl in RECORD["levels"]}
    assert set(rows) == set(levels) == {50, 200, 500}
    assert RECORD["settings"]["moves_as"] == "GET"
    for readers, (rps, light, settled, heavy, page_asset, failed) in rows.items():
        lvl, c = levels[readers], levels[readers]["classes"]
        assert _num(rps) == lvl["throughput_rps"]
        p50, p95 = light.split("/")
        assert _near(p50, c["api-light"]["p50_ms"]) and _near(p95, c["api-light"]["p95_ms"])
        assert _near(settled, c["api-light"]["settled"]["p95_ms"])
        assert _near(heavy, c["api-heavy"]["p95_ms"])
        page, asset = page_asset.split("/")
        assert _near(page, c["page"]["p95_ms"]) and _near(asset, c["asset"]["p95_ms"])
        assert int(failed.split()[0]) == sum(lvl["errors_by_status"].values())


def test_the_words_around_the_table_are_the_records():
    (lvl,) = [lvl for lvl in RECORD["levels"] if lvl["readers"] == 500]
    assert "no 429" in WORDS and "no 503" in WORDS and "no request failed" in WORDS
    for level in RECORD["levels"]:
        assert not level["errors_by_status"]
    assert f"({lvl['retried_on_closed_keepalive']} requests at" in WORDS
    light = lvl["classes"]["api-light"]
    assert f"{light['cached_share']:.0%} of the light moves" in WORDS.replace(" %", "%")
    assert "under two thirds of one core" in WORDS and lvl["server_cpu_share"] < 2 / 3
    assert f"p95 of {light['p95_ms']:.0f} ms" in WORDS
    assert f"answered in {light['settled']['p95_ms']:.0f} ms" in WORDS
    assert "from the fifteenth second" in WORDS and lvl["settled_after_s"] == 15
    assert "some 11,500 files" in WORDS and abs(lvl["classes"]["asset"]["n"] - 11_500) < 100
    settings = RECORD["settings"]
    assert settings["ramp_s"] == 5 and "first five seconds" in WORDS
    assert settings["heavy_share"] == 0.05 and "One move in twenty" in WORDS
    assert settings["repeat_share"] == 0.7 and "seven in ten" in WORDS
    assert Plan.navigate_share == 0.03 and "one in thirty-three opens another chapter" in WORDS
    assert api.RESULT_MAX_AGE == 600 and "in the last ten minutes" in WORDS
    assert "for ten minutes, without asking a replica" in WORDS
    # the before: the same levels on a fresh server, asking with POSTs
    old = {level["readers"]: level for level in POST["levels"]}
    assert POST["settings"]["moves_as"] == "POST" and set(old) == {50, 200, 500}
    before = old[500]["classes"]["api-light"]
    assert f"p95 of {before['p95_ms']:.0f} ms" in WORDS
    assert f"{before['settled']['p95_ms']:.0f} ms once the chapter was open" in WORDS
    assert f"{sum(old[500]['errors_by_status'].values())} failed requests at" in WORDS


COMPOSE_ROWS = {"pages": "page", "files": "asset", "light widgets": "api-light",
                "heavy widgets": "api-heavy", "timing widgets": "api-timing"}


def test_the_lecture_hall_stack_at_a_thousand_readers_is_its_record():
    """Issue 35: 1,000 readers on every chapter, the heavy and timing widgets' pages among them;
    the table holds each class's count, p50, p95 and (for moves) p95 once the chapter is open."""
    (lvl,) = COMPOSE["levels"]
    c = lvl["classes"]
    assert lvl["readers"] == 1000 and "1,000 readers" in WORDS
    assert COMPOSE["server"] != "gunicorn" and "compose.yaml" in COMPOSE["note"]
    assert COMPOSE["settings"]["pages"] == "" and "on every chapter" in WORDS  # no page left out
    assert f"{lvl['throughput_rps']:.0f} requests/s" in WORDS
    assert not lvl["errors_by_status"] and "and no request failed" in WORDS
    warm = COMPOSE["prewarm"]
    assert COMPOSE["settings"]["prewarm"] and warm["failed"] == 0 and warm["warmed"] == warm["settings"]
    assert f"the {warm['settings']} settings the pages offer their heavy widgets" in WORDS
    assert f"({warm['seconds']:.0f} s)" in WORDS
    table = {}
    for line in SECTION.splitlines():
        cells = [x.strip() for x in line.strip().strip("|").split("|")]
        if cells[0] in COMPOSE_ROWS:
            table[COMPOSE_ROWS[cells[0]]] = cells[1:]
    assert set(table) == set(COMPOSE_ROWS.values()) == set(c)  # every class the run had
    for cls, (n, p50, p95, settled) in table.items():
        assert _num(n) == c[cls]["n"], cls
        assert _near(p50, c[cls]["p50_ms"]) and _near(p95, c[cls]["p95_ms"]), cls
        if cls.startswith("api"):
            assert _near(settled, c[cls]["settled"]["p95_ms"]), cls
        else:
            assert settled == "", cls
    # 'Half of each kind of widget move was answered within 16 ms', 'the 95th percentile is
    # seconds, and so is a reader's wait for a page and its files'
    moves = [v for k, v in c.items() if k.startswith("api")]
    assert max(v["p50_ms"] for v in moves) < 16 and "within 16 ms" in WORDS
    assert min(v["p95_ms"] for v in moves + [c["page"], c["asset"]]) >= 1000
    assert lvl["settled_after_s"] == 15 and COMPOSE["settings"]["moves_as"] == "GET"
    # "three replicas of two workers ... six workers": compose.yaml's shipped defaults
    compose = (ROOT / "compose.yaml").read_text()
    assert "replicas: ${BOOK_REPLICAS:-3}" in compose and "WEB_CONCURRENCY: ${WEB_CONCURRENCY:-2}" in compose
    assert "three replicas of two workers" in WORDS and "six workers, nginx, Redis" in WORDS
    assert COMPOSE["settings"]["server_env"] == {}  # nothing overridden for the run
    # "up to six connections": the readers' connection limit, as a browser's
    assert "TCPConnector(limit=6," in (ROOT / "tests/benchmarks/load.py").read_text()
    assert "opens a page with up to six connections" in WORDS
    # the proxy image's connection limit, as the page quotes it
    containerfile = (ROOT / "deploy/nginx/Containerfile").read_text()
    assert "worker_connections 8192;" in containerfile and "to 8,192 per nginx worker" in WORDS


def test_each_load_record_reads_as_its_numbers_and_says_what_it_did_not_measure():
    """Review L18: the compose record said "server CPU 0% of one core, peak RSS ? MiB" for a
    server in containers the benchmark cannot see. Each .md is the rendering of its .json, and a
    record without the server's figures says they were not measured."""
    from load_report import markdown

    for name in ("load", "load_post", "load_heavy", "load_compose"):
        record = json.loads((ROOT / f"tests/benchmarks/results/{name}.json").read_text())
        text = (ROOT / f"tests/benchmarks/results/{name}.md").read_text()
        assert text == markdown(record) + "\n", name
        for level in record["levels"]:
            measured = "server_cpu_share" in level
            assert ("peak RSS ?" not in text) and (measured or "not measured" in text), name
