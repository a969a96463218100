"""Times in the widgets' summaries read as the page writes them (widgets/runtime/format.js
`withUnit`, tests/js/time-format.test.mjs): seconds from 1,000 ms up, never e-notation."""

from __future__ import annotations

import pytest

from backend.compute import REGISTRY
from backend.compute.style import duration


@pytest.mark.parametrize(("ms", "text"), [(12.345, "12.3 ms"), (999, "999 ms"), (1000, "1 s"),
                                          (10123, "10.1 s"), (2.5e6, "2,500 s"), (0.5, "0.5 ms")])
def test_duration(ms, text):
    assert duration(ms) == text


def test_no_time_in_e_notation_from_a_hundredth_of_a_ms_to_a_day():
    ms = 0.01
    while ms < 864e5:
        assert "e+" not in duration(ms) and "e-" not in duration(ms), ms
        ms *= 1.37


def test_a_slow_decode_step_reads_in_seconds_and_no_number_in_e_notation():
    """decode_roofline's largest model on its smallest card, every user at the longest context:
    the summary said "3.52e+05 GB", "2.96e+03 TFLOP" (now 352,000 GB, 2,960 TFLOP)."""
    m = REGISTRY["decode_roofline"]
    setting = {p.name: p.default for p in m.SPEC.params}
    r = m.compute({**setting, "preset": "llama-2-70b", "card": "16", "batch": 1024,
                   "context_len": 1048576})
    assert r["values"]["step_ms"] >= 1000
    assert "e+" not in r["summary"] and " s, " in r["summary"], r["summary"]


def test_the_timing_widgets_summaries_write_long_times_in_seconds():
    """kv_decode's and sequential_vs_parallel's summaries wrote "1.23e+04 ms" (their own ".3g ms")."""
    from backend.compute import kv_decode, sequential_vs_parallel
    v = {"tokens_identical": True, "repeats": 3, "measured_on": "CPU",
         "step_ms_early_no_cache": 0.5, "step_ms_late_no_cache": 2.0, "step_ms_early_cache": 0.4,
         "step_ms_late_cache": 0.45, "ms_no_cache": 12345.0, "ms_cache": 1500.0,
         "key_rows_no_cache": 5000, "key_rows_cache": 100, "max_logit_diff": 1e-6}
    text = kv_decode._summary("book", 100, 5, v)
    assert "12.3 s against 1.5 s" in text and "e+" not in text, text
    v = {"ms_sequential": 25000.0, "ms_parallel": 3.25, "repeats": 5, "measured_on": "CPU",
         "speedup": 7692.3, "gradient_product": 0.5}
    text = sequential_vs_parallel._summary(4096, 64, 0.9, v)
    assert "took 25 s and the single product 3.25 ms" in text and "e+" not in text, text
