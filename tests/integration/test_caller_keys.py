"""A caller's own key fails only for that caller (issue 33): a caller sending its own exhausted provider
key in `keys` made the provider answer 429 again and again, which opened the shared circuit for that
offering in every instance, and another organization's next call was served by a dearer model. Attempts
on a key the caller sent never count against the deployment's circuits, nor take a half-open probe."""

from __future__ import annotations

import pytest

from momor.routing.breaker import DEFERRED
from momor.store import apikeys, organizations
from tests.fakes.script import fail

pytestmark = pytest.mark.emulators

DUO = {"systemPrompt": "", "messages": [{"type": "user", "value": "Hello"}], "model": "duo",
       "parameters": {"maxTokens": 20}}
"""duo: `flaky` first (the cheaper), `backup` after it (tests/integration/conftest.py)."""


@pytest.mark.timeout(120)
def test_a_callers_exhausted_key_never_opens_the_shared_circuit(momor, fake):
    own = {"flaky": "sk-callers-own-exhausted-0001"}
    for _ in range(3):  # 3 calls x 3 attempts (two retries): more 429s in a row than MOMOR_BREAKER_FAILURES (5)
        fake.script("flaky", *[fail(429)] * 3)
        answer = momor.post("/models", {**DUO, "keys": own})
        assert answer.status_code == 200, answer.text
        assert answer.json()["model"]["provider"] == "backup"  # the caller's own key failed; the call went on
        attempts = momor.record(answer.headers["x-momor-request-id"])["attempts"]
        assert [(a["provider"], a["keySource"]) for a in attempts[:3]] == [("flaky", "call")] * 3
    assert len(fake.requests("flaky")) == 9
    # Another organization's call, on the deployment's keys: still served by the cheapest offering.
    other, _ = apikeys.create_api_key("another organization", org=organizations.create("Acme").id)
    answer = momor.post("/models", DUO, headers={**momor.headers(), "Authorization": f"Bearer {other}"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["model"]["provider"] == "flaky"
    attempts = momor.get(f"/generations/{answer.headers['x-momor-request-id']}", api_key=other).json()["attempts"]
    assert DEFERRED not in str(attempts) and attempts[0]["keySource"] == "saved"


@pytest.mark.timeout(120)
def test_the_deployments_own_key_still_opens_the_circuit(momor, fake):
    """The rule above is about whose key failed: the same 429s on the deployment's key open the circuit."""
    for _ in range(2):
        fake.script("flaky", *[fail(429)] * 3)
        assert momor.post("/models", DUO).json()["model"]["provider"] == "backup"
    answer = momor.post("/models", DUO)
    assert answer.json()["model"]["provider"] == "backup"
    assert DEFERRED in str(momor.record(answer.headers["x-momor-request-id"])["attempts"])
