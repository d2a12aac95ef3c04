"""File conversions are inside the budget (issue 33): a key with a tiny daily limit was admitted for a
one-token call that then paid for 20 image descriptions. The conversions' most possible cost is held
with the call's (a 402 before any provider is called when it does not fit), the router's classifier
call likewise, and a call converts at most MOMOR_MAX_CONVERTED_FILES files (more: a 400)."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from momor.routing import conversion
from momor.store import apikeys, budgets
from tests.integration.test_office_and_images import PNG

pytestmark = pytest.mark.emulators


def image(i: int) -> dict:
    return {"type": "bytes", "value": base64.b64encode(PNG).decode(), "name": f"dot-{i}.png",
            "contentType": "image/png"}


def text_file(i: int) -> dict:
    return {"type": "bytes", "value": base64.b64encode(b"note %d" % i).decode(), "name": f"note-{i}.txt",
            "contentType": "text/plain"}


def native(files: list[dict], model: str = "llama-3.3-70b") -> dict:
    """A text-only model: every image is described by a vision model first (fileProcessing auto)."""
    return {"systemPrompt": "", "model": model, "parameters": {"maxTokens": 20}, "fileProcessing": {"type": "auto"},
            "messages": [{"type": "user", "value": "What do these show?", "files": files}]}


def budgeted(daily: str) -> str:
    key, _ = apikeys.create_api_key("budgeted")
    budgets.set_limits(apikeys.key_hash(key), daily=Decimal(daily), monthly=None)
    return key


def post(momor, key: str, body: dict, path: str = "/models"):
    return momor.post(path, body, headers={**momor.headers(), "Authorization": f"Bearer {key}"})


@pytest.mark.timeout(60)
def test_conversions_that_do_not_fit_the_budget_are_refused_before_any_is_made(momor, fake):
    # Each description is held at the dearest model that may make it (failover may reach any vision model),
    # at a description's output ceiling (conversion.DESCRIBE_MAX_TOKENS): about $0.031 here; one fits under
    # $0.05 with the call's own small hold, three do not.
    key = budgeted("0.05")
    refused = post(momor, key, native([image(i) for i in range(3)]))
    assert refused.status_code == 402, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert fake.requests() == []  # no description was made, nor the answer
    served = post(momor, key, native([image(0)]))
    assert served.status_code == 200, served.text
    assert len(fake.requests("openai")) == 1  # the one description
    sent = fake.requests("openai")[0].json  # asked for no more than the hold counted
    assert conversion.DESCRIBE_MAX_TOKENS in (sent.get("max_completion_tokens"), sent.get("max_tokens")), sent


@pytest.mark.timeout(60)
def test_the_hold_counts_the_conversions(momor, fake):
    key = budgeted("10")
    plain = post(momor, key, native([]))
    described = post(momor, key, native([image(0)]))
    assert plain.status_code == described.status_code == 200
    # What each call's answer says remains (its own hold taken, the earlier call's cost counted): the
    # description's ceiling is held beside the answer's, at a description's output ceiling
    # (DESCRIBE_MAX_TOKENS), not the describing model's whole output maximum (about $0.96 here).
    left_plain = Decimal(plain.headers[budgets.REMAINING_HEADER])
    left_described = Decimal(described.headers[budgets.REMAINING_HEADER])
    assert Decimal("0.02") < left_plain - left_described < Decimal("0.05")


@pytest.mark.timeout(60)
def test_a_call_converts_at_most_the_deployments_number_of_files(momor, fake):
    refused = momor.post("/models", native([text_file(i) for i in range(11)]))
    assert refused.status_code == 400, refused.text
    assert "MOMOR_MAX_CONVERTED_FILES" in refused.json()["detail"] and "fileProcessing" in refused.json()["detail"]
    assert fake.requests() == []
    assert momor.post("/models", native([text_file(i) for i in range(10)])).status_code == 200


@pytest.mark.timeout(60)
def test_the_routers_classifier_is_held_with_the_call(momor, fake):
    """A classified router call holds the classifier's call beside its answer's: the same call on a
    catalog without a classifier (served by the default tier, nothing classified) holds less."""
    body = {"model": "auto", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 20}
    with_classifier = post(momor, budgeted("10"), body, "/router/v1/chat/completions")
    assert with_classifier.status_code == 200, with_classifier.text
    catalog = json.loads(json.dumps(momor.catalog))
    catalog["router"].pop("classifier")
    momor.write_catalog(catalog)
    without = post(momor, budgeted("10"), body, "/router/v1/chat/completions")
    assert without.status_code == 200, without.text
    left = [Decimal(answer.headers[budgets.REMAINING_HEADER]) for answer in (without, with_classifier)]
    held = left[0] - left[1]
    # The classifier (llama-3.3-70b, 16 tokens out) on the prompt and its instructions: a few millionths.
    assert Decimal("0.000002") <= held < Decimal("0.001"), held
