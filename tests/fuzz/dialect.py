"""One adapter per dialect for the fuzz suite: the route, a valid body, near-valid bodies, and what a
clean answer looks like in that dialect's own shape. test_fuzz_routes.py runs every test on each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st


@dataclass(frozen=True)
class Dialect:
    name: str
    path: str
    base: Callable[[], dict[str, Any]]
    """A valid body."""
    stream_field: str
    """The body field that asks for a stream."""
    near_valid: Callable[[], st.SearchStrategy[Any]]
    """Valid bodies with a field removed, retyped or replaced by a near miss."""
    check: Callable[[Any], None]
    """Asserts the answer is clean in this dialect's shape (conftest.py's invariant included)."""
    auth: str = "bearer"
    """The header the key travels in."""
    extra_headers: st.SearchStrategy[dict[str, str]] = field(default_factory=lambda: st.just({}))
    """The dialect's own request headers, valid and not."""

    def streamed(self) -> dict[str, Any]:
        return {**self.base(), self.stream_field: True}
