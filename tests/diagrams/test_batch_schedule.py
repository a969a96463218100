"""The batching diagram follows its configuration and its step counts are the schedules' own."""

from __future__ import annotations

import heapq
import re

import pytest

from backend.diagrams import batch_schedule as bs


def _cells(canvas):
    svg = "".join(canvas.parts)
    return len(re.findall(r"<rect ", svg)), svg.count("tw-d-dashed")


def _continuous_steps(lengths, slots):
    """Independently: a heap of the times each slot frees; each request takes the earliest."""
    free = [0] * slots
    heapq.heapify(free)
    for n in lengths:
        heapq.heappush(free, heapq.heappop(free) + n)
    return max(free)


@pytest.mark.parametrize("lengths, slots", [((6, 2, 3, 5, 2, 4), 2), ((3, 3, 3), 3),
                                            ((8, 1, 1, 1, 1, 1, 1), 2), ((2, 7, 1, 4), 3)])
def test_each_request_runs_its_length_once_in_both_schedules(lengths, slots):
    for plan in (bs.static(list(lengths), slots), bs.continuous(list(lengths), slots)):
        assert len(plan) == slots and len({len(row) for row in plan}) == 1
        for r, n in enumerate(lengths):
            where = [(s, i) for s, row in enumerate(plan) for i, x in enumerate(row) if x == r]
            assert len(where) == n and len({s for s, _ in where}) == 1  # one slot, n steps
            steps = [i for _, i in where]
            assert steps == list(range(steps[0], steps[0] + n))          # back to back


@pytest.mark.parametrize("lengths, slots", [((6, 2, 3, 5, 2, 4), 2), ((3, 3, 3), 3),
                                            ((8, 1, 1, 1, 1, 1, 1), 2), ((2, 7, 1, 4), 3)])
def test_the_labels_are_the_step_counts(lengths, slots):
    c = bs.draw(lengths=lengths, slots=slots)
    groups = [lengths[i:i + slots] for i in range(0, len(lengths), slots)]
    static_steps = sum(max(g) for g in groups)
    cont_steps = _continuous_steps(lengths, slots)
    texts = c.texts()
    assert f"static: {static_steps} steps" in texts
    assert f"continuous: {cont_steps} steps" in texts
    assert cont_steps <= static_steps
    work = sum(lengths)
    assert f"{static_steps * slots - work} idle" in texts
    assert f"{cont_steps * slots - work} idle" in texts
    rects, dashed = _cells(c)
    assert rects == slots * (static_steps + cont_steps)
    assert dashed == slots * (static_steps + cont_steps) - 2 * work
    assert f"{static_steps} decode steps" in c.desc and f"{cont_steps} steps" in c.desc


def test_the_picture_changes_with_its_configuration():
    a = bs.draw(lengths=(6, 2, 3, 5, 2, 4), slots=2)
    b = bs.draw(lengths=(6, 2, 3, 5, 2, 4), slots=3)
    assert "static: 15 steps" in a.texts() and "continuous: 12 steps" in a.texts()
    assert "static: 11 steps" in b.texts() and "continuous: 9 steps" in b.texts()
    assert [t for t in b.texts() if t.startswith("slot ")] == ["slot 1", "slot 2", "slot 3"] * 2
    # equal lengths: nothing to gain, nothing idle
    c = bs.draw(lengths=(3, 3, 3, 3), slots=2)
    assert "static: 6 steps" in c.texts() and "continuous: 6 steps" in c.texts()
    assert c.texts().count("0 idle") == 2


def test_impossible_settings_are_refused():
    for bad in ({"slots": 0}, {"slots": 5}, {"lengths": ()}, {"lengths": (9,)}):
        with pytest.raises(ValueError):
            bs.draw(**bad)


def test_requests_side_by_side_in_a_slot_never_share_a_colour():
    """Each request its own tone where there are tones enough (the chapter's six requests), and
    in every configuration two requests next to each other in a slot differ in colour, judged by
    the palette's colours, not the tone names (two names can be one colour)."""
    import itertools
    import random

    from backend.diagrams.palette import TONE_COLORS

    assert len({TONE_COLORS[t] for t in bs.TONES}) == len(bs.TONES)
    default = bs.tones([6, 2, 3, 5, 2, 4], 2)
    assert len(set(default)) == 6
    rng = random.Random(15)
    configs = [((6, 2, 3, 5, 2, 4), 2), ((5, 1, 1, 1, 1, 1, 1), 2), ((8, 1, 1, 1, 1, 1, 1), 4)]
    configs += [(tuple(rng.randint(1, 8) for _ in range(rng.randint(1, 7))), rng.randint(1, 4))
                for _ in range(400)]
    for lengths, slots in configs:
        tone = bs.tones(list(lengths), slots)
        svg = "".join(bs.draw(lengths=lengths, slots=slots).parts)
        drawn = [t for t in re.findall(r'class="tw-d-box tw-d-(\w+)', svg) if t != "muted"]
        plans = [bs.static(list(lengths), slots), bs.continuous(list(lengths), slots)]
        assert drawn == [tone[r] for p in plans for row in p for r in row if r is not None]
        for plan in plans:
            for row in plan:
                for a, b in itertools.pairwise(row):
                    if a is not None and b is not None and a != b:
                        assert TONE_COLORS[tone[a]] != TONE_COLORS[tone[b]], (lengths, slots)
