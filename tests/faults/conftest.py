"""Fault injection across the three doors: the end-to-end harness, plus knobs and a stopwatch.

The harness's fixtures (`momor`, `fake` and what they stand on) are re-exported from
tests/integration/conftest.py, so a fault test drives the same uvicorn-served Momor, fake providers
and DynamoDB Local as the integration tests. A non-root conftest may not declare `pytest_plugins`;
importing the fixture functions registers them here (run with tests/integration in one session,
this folder gets its own Momor and fake server: a second or so, on free ports).

- `tune(MOMOR_X=value, ...)`: set attempt-loop knobs for this test. The policy is cached per
  process, so the cache is cleared, and the process's circuit breakers (built once from the knobs)
  are rebuilt on the next call; both are put back after the test.
- `arrivals`: when each request reached the fakes, by label (the fakes record what, not when).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from momor.config import reset_config
from momor.routing.policy import Policy, current_policy
from tests.fakes import FakeState, RecordedRequest
from tests.integration import conftest as harness

from .support import Arrivals

fake_session, fake, momor_server, momor = harness.fake_session, harness.fake, harness.momor_server, harness.momor


@pytest.fixture
def tune() -> Iterator[Callable[..., Policy]]:
    with pytest.MonkeyPatch.context() as patch:

        def apply(**knobs: float | str) -> Policy:
            for name, value in knobs.items():
                assert name.startswith("MOMOR_"), name
                patch.setenv(name, str(value))
            reset_config()  # the policy and the breakers are rebuilt from these knobs by the next call
            return current_policy()

        yield apply
    reset_config()


@pytest.fixture
def arrivals(monkeypatch: pytest.MonkeyPatch) -> Arrivals:
    seen = Arrivals()
    original = FakeState.record

    def record(self: FakeState, request: RecordedRequest) -> None:
        seen.add(request.label, time.monotonic())
        original(self, request)

    monkeypatch.setattr(FakeState, "record", record)
    return seen
