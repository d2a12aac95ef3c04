"""The fakes' word counter, which every fake provider runs on every request body, stays linear.

A fuzzed body with a long blank run once made the old pattern backtrack for minutes while holding
the GIL, which froze the in-process Momor and hung the whole test run."""

from __future__ import annotations

import pytest

from tests.fakes.behaviour import count_tokens, truncate


def test_words_keep_their_white_space() -> None:
    assert count_tokens("  one two\n three ") == 3
    assert truncate("  one two\n three ", 2) == "  one two"
    assert count_tokens("   ") == 0


@pytest.mark.timeout(5)  # the quadratic pattern takes about 15 s on this input; linear takes milliseconds
def test_a_long_blank_run_is_counted_in_linear_time() -> None:
    assert count_tokens(" " * 50_000) == 0
    assert count_tokens(" " * 50_000 + "word") == 1
