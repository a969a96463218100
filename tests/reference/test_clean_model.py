"""The reference model readers see is the clean one: no knob that breaks it on purpose.

The parity widget's faults live in backend/compute/parity_faults.py and are put into a built model
from outside. A fault parameter or branch that came back into the reference code would show in
the chapters' listings, which include these very files (`--8<-- "file:region"`).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from backend.reference import grouped_query, llama_compare, rope
from backend.reference.block import DecoderBlock
from backend.reference.model import DecoderLM
from backend.reference.norms import RMSNorm

ROOT = Path(__file__).resolve().parents[2]
# The names the faults went by, and the shape of a switch: an upcast, layout or order flag, a
# model that knows whether it is causal. (RMSNorm's float32 upcast itself is real Llama: the
# listing shows it, unconditionally.)
KNOB = re.compile(r"\bfaults?\b|rope_layout|kv_order|norm_upcast|\btiled\b|self\.upcast\b"
                  r"|\bupcast\s*:\s*bool|\blayout\s*:\s*str|\border\s*:\s*str|self\.causal\b",
                  re.IGNORECASE)
# In the regions readers see, the words of a deliberate break too.
BREAK_WORDS = re.compile(r"\bthe bug\b|\bbroken\b|on purpose|parity widget", re.IGNORECASE)
INCLUDE = re.compile(r'--8<--\s+"([^":]+\.py):([\w-]+)"')


def included_regions() -> dict[tuple[str, str], list[str]]:
    """(file, region) -> the pages that include it, for every source region a page includes."""
    found: dict[tuple[str, str], list[str]] = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for path, region in INCLUDE.findall(page.read_text(encoding="utf-8")):
            found.setdefault((path, region), []).append(str(page.relative_to(ROOT)))
    return found


def region_text(path: str, region: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8")
    start, end = f"--8<-- [start:{region}]", f"--8<-- [end:{region}]"
    assert start in text and end in text, f"{path} has no region {region}"
    return text[text.index(start) + len(start): text.index(end)]


REGIONS = included_regions()


def test_the_chapters_include_the_models_regions():
    """The scan below sees what readers see: the model, its block, attention, RoPE, RMSNorm and
    the parity check are among the included regions."""
    for expected in [("backend/reference/model.py", "lm_init"), ("backend/reference/model.py", "lm_forward"),
                     ("backend/reference/grouped_query.py", "gqa_forward"),
                     ("backend/reference/grouped_query.py", "repeat_kv"), ("backend/reference/rope.py", "rope"),
                     ("backend/reference/norms.py", "rmsnorm"), ("backend/reference/llama_compare.py", "compare")]:
        assert expected in REGIONS


@pytest.mark.parametrize("path,region", sorted(REGIONS), ids=[f"{p}:{r}" for p, r in sorted(REGIONS)])
def test_no_fault_knob_in_a_listing(path, region):
    text = region_text(path, region)
    hits = KNOB.findall(text) + BREAK_WORDS.findall(text)
    assert not hits, (f"{', '.join(REGIONS[path, region])} show {path}:{region}, which holds {hits}: "
                      "faults belong in backend/compute/parity_faults.py")


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "backend/reference").glob("*.py")))
def test_no_fault_knob_in_the_reference_code(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    hits = [f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group()}" for m in KNOB.finditer(text)]
    assert not hits, f"{path}: {hits}: faults belong in backend/compute/parity_faults.py"


@pytest.mark.parametrize("obj", [DecoderLM, DecoderBlock, grouped_query.GroupedQueryAttention, RMSNorm,
                                 grouped_query.repeat_kv, rope.apply_rope, llama_compare.build_pair,
                                 llama_compare.compare], ids=lambda o: o.__qualname__)
def test_no_fault_parameter_in_a_signature(obj):
    names = set(inspect.signature(obj).parameters)
    assert not names & {"fault", "rope_layout", "kv_order", "order", "layout", "upcast", "causal"}
