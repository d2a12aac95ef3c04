"""An explanation (X-Momor-Explain: 1) follows the attempt loop's own breaker order: an offering whose
circuit is open is listed last, deferred by the `breaker` rule, and the real call then goes first to
the explanation's first candidate without asking the open one."""

from __future__ import annotations

import pytest

from tests.fakes.script import fail

from .doors.native import NativeOutcome, ask
from .support import attempts, record_of

pytestmark = pytest.mark.emulators


def test_an_open_circuit_is_explained_as_deferred_by_the_breaker(momor, fake, tune):
    tune(MOMOR_BREAKER_FAILURES=3, MOMOR_BREAKER_COOLDOWN_S=60)
    fake.script("flaky", *[fail(503)] * 3)
    assert NativeOutcome(momor, ask()).provider() == "backup"  # flaky failed three times: its circuit opens
    asked_before = len(fake.requests())
    explained = momor.post("/models", ask(), headers=momor.headers(**{"X-Momor-Explain": "1"}))
    assert explained.status_code == 200, explained.text
    candidates = explained.json()["candidates"]
    assert [(c["provider"], c["deferred"]) for c in candidates] == [
        ("backup", None),
        ("flaky", {"rule": "breaker", "why": "circuit open: tried after the other candidates"}),
    ]
    assert len(fake.requests()) == asked_before  # explaining asked no provider
    served = NativeOutcome(momor, ask())
    assert served.provider() == candidates[0]["provider"]
    assert attempts(record_of(momor, served.request_id)) == [("flaky", "skipped", None), ("backup", "ok", 200)]
