"""backend/reference/pricing.py against the handout's printed bill and hand arithmetic."""

from __future__ import annotations

from fractions import Fraction

import pytest

from backend.reference import pricing


def test_handout_text_to_sql_example():
    full = pricing.bill(400, 100, 0, 10, 50, 1)
    cached = pricing.bill(400, 100, 350, 10, 50, 1)
    # the handout's lines: 400*10/1e6 + 100*50/1e6, and 350*1/1e6 + 50*10/1e6 + 100*50/1e6
    assert full.total == Fraction(9, 1000) and float(full.total) == 0.009
    assert cached.total == Fraction(585, 100_000) and float(cached.total) == 0.00585
    assert pricing.saving(full, cached) == Fraction(35, 100)
    assert f"${float(full.total):.5f}" == "$0.00900" and f"${float(cached.total):.5f}" == "$0.00585"


def test_first_write_and_break_even():
    full = pricing.bill(400, 100, 0, 10, 50, 1)
    cached = pricing.bill(400, 100, 350, 10, 50, 1)
    write = pricing.first_write(400, 100, 350, 10, 50, 12.5)
    assert write.total == Fraction(350 * 25, 2 * 10**6) + Fraction(50 * 10 + 100 * 50, 10**6)
    assert float(write.total) == 0.009875
    # premium 350 * 2.5 / 1e6 = 0.000875, saved per later request 0.00315: repaid by request 2
    assert pricing.requests_to_break_even(full, write, cached) == 2
    pricier = pricing.first_write(400, 100, 350, 10, 50, 100)  # premium 0.0315 = 10 savings
    assert pricing.requests_to_break_even(full, pricier, cached) == 11
    same = pricing.bill(400, 100, 350, 10, 50, 10)  # cached price = input price: nothing saved
    assert pricing.requests_to_break_even(full, write, same) is None
    # a free write but a dearer read: the first request gains, every later one loses (never)
    free_write = pricing.first_write(400, 100, 350, 10, 50, 0)
    dearer = pricing.bill(400, 100, 350, 10, 50, 200)
    assert free_write.total < full.total < dearer.total
    assert pricing.requests_to_break_even(full, free_write, dearer) is None
    assert pricing.requests_to_break_even(full, free_write, cached) == 1


def test_decimal_prices_stay_exact():
    assert pricing.exact(0.1) == Fraction(1, 10) and pricing.exact(12.5) == Fraction(25, 2)
    assert pricing.bill(3, 0, 0, 0.1, 0, 0).total == Fraction(3, 10**7)


@pytest.mark.parametrize("cached", [-1, 401])
def test_cached_outside_the_input_is_refused(cached):
    with pytest.raises(ValueError, match="cached tokens"):
        pricing.bill(400, 100, cached, 10, 50, 1)
