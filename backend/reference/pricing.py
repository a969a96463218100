"""What prefix caching saves on a bill: the same request priced with and without a cached prefix.

A provider that keeps the KV cache of a prompt prefix many requests share (a long system
prompt, a fixed set of examples) skips that prefix's prefill the next time and charges less for
those tokens. Prices are quoted in dollars per million tokens. The arithmetic is done in exact
fractions of the decimal prices typed in, so $0.009 is 0.009 and not 0.009000000000000001.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

MILLION = 1_000_000


def exact(price: float | int | str) -> Fraction:
    """A price as the decimal number it was written as (12.5 -> 25/2, 0.1 -> 1/10)."""
    return Fraction(str(price))


@dataclass(frozen=True)
class Bill:
    """One request's cost in dollars, by part."""

    uncached_input: Fraction
    cached_input: Fraction
    output: Fraction

    @property
    def total(self) -> Fraction:
        return self.uncached_input + self.cached_input + self.output


# --8<-- [start:bill]
def bill(input_tokens: int, output_tokens: int, cached_tokens: int, price_input, price_output,
         price_cached) -> Bill:
    """A request of `input_tokens` (the first `cached_tokens` of them a cached prefix) and
    `output_tokens`; prices in dollars per million tokens. Cached tokens are billed at the
    cached price, the rest of the input at the input price, the output at the output price."""
    if not 0 <= cached_tokens <= input_tokens:
        raise ValueError(f"cached tokens ({cached_tokens}) must be between 0 and the input "
                         f"({input_tokens})")
    fresh = input_tokens - cached_tokens
    return Bill(uncached_input=fresh * exact(price_input) / MILLION,
                cached_input=cached_tokens * exact(price_cached) / MILLION,
                output=output_tokens * exact(price_output) / MILLION)
# --8<-- [end:bill]


def first_write(input_tokens: int, output_tokens: int, cached_tokens: int, price_input,
                price_output, price_write) -> Bill:
    """The request that first *writes* the prefix to the cache: the prefix is billed at the
    (higher) write price, since it is computed and then kept."""
    return bill(input_tokens, output_tokens, cached_tokens, price_input, price_output, price_write)


def saving(full: Bill, cached: Bill) -> Fraction:
    """The share of the full price a cached request saves."""
    return 1 - cached.total / full.total if full.total else Fraction(0)


def requests_to_break_even(full: Bill, write: Bill, cached: Bill) -> int | None:
    """How many requests in all (the writing one included) before caching has cost no more than
    not caching, and goes on costing less; None if a cached request saves nothing (then however
    cheap the write, every later request loses what the first one may have gained).
    Assumes each later request reads the prefix while it is still cached."""
    premium = write.total - full.total  # what the first request pays extra
    per_request = full.total - cached.total  # what each later request saves
    if per_request <= 0:  # a later request costs no less: caching never comes out ahead for good
        return None
    if premium <= 0:  # the first request already costs no more than without caching
        return 1
    later = -(-premium // per_request)  # ceiling of premium / per_request
    return 1 + int(later)
