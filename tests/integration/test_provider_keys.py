"""Several saved keys for one provider (issue 38), over HTTP against the running app and the fake
OpenAI, which tells the keys apart by their Authorization header: calls spread by weight, a key the
provider answers 429 for is passed over on the same offering (whose circuit stays closed), the
record names the key by its label and never by its value, and a bad weight is refused, named."""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any

import pytest

from momor.routing.circuits import process_breakers
from momor.store import keys
from tests.integration.conftest import SAVED_KEYS

CHAT = {"model": "openai/gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}
OFFERING = "openai/gpt-5-mini-2025-08-07"
EAST, WEST = "sk-saved-openai-east-0101", "sk-saved-openai-west-0102"


def save_keys(momor_aws: Any, openai: Any) -> None:
    """The test's saved keys, with `openai` given as `openai`'s value."""
    momor_aws.client("secretsmanager").put_secret_value(
        SecretId=momor_aws.keys_secret, SecretString=json.dumps({**SAVED_KEYS, "openai": openai}))
    keys.reset_saved_keys()


def keys_sent(fake: Any) -> Counter[str]:
    return Counter(r.headers["authorization"].removeprefix("Bearer ") for r in fake.requests("openai"))


@pytest.mark.timeout(120)
def test_two_saved_keys_weighted_3_to_1_serve_about_3_to_1(momor, momor_aws, fake):
    save_keys(momor_aws, [{"key": EAST, "label": "east", "weight": 3, "rpm": 5000, "tpm": 10_000_000},
                          {"key": WEST, "label": "west", "weight": 1}])
    for _ in range(200):
        answer = momor.post("/v1/chat/completions", CHAT)
        assert answer.status_code == 200, answer.text
    sent = keys_sent(fake)
    assert sum(sent.values()) == 200 and set(sent) == {EAST, WEST}
    assert 130 <= sent[EAST] <= 170, sent  # 3:1 is 150:50; a band, not the exact split
    served = momor.record(answer.headers["x-momor-request-id"])["attempts"]
    assert [a["keyLabel"] for a in served] in (["east"], ["west"])


@pytest.mark.timeout(120)
def test_a_key_answering_429_is_passed_over_and_the_offerings_circuit_stays_closed(momor, momor_aws, fake, caplog):
    caplog.set_level(logging.DEBUG)
    save_keys(momor_aws, [{"key": EAST, "label": "east", "weight": 3}, {"key": WEST, "label": "west"}])
    fake.refuse_key(EAST, 429)
    ids = []
    for _ in range(12):
        answer = momor.post("/v1/chat/completions", CHAT)
        assert answer.status_code == 200, answer.text
        ids.append(answer.headers["x-momor-request-id"])
    # The first call met east's 429 and went on at once on west, at the same offering.
    first = momor.record(ids[0])
    assert [(a["provider"], a["keyLabel"], a["httpStatus"], a["status"]) for a in first["attempts"]] == [
        ("openai", "east", 429, "failed"), ("openai", "west", 200, "ok")]
    assert first["served"]["provider"] == "openai"
    # Cooling down, east is passed over: every later call goes straight to west.
    for request_id in ids[1:]:
        assert [(a["keyLabel"], a["status"]) for a in momor.record(request_id)["attempts"]] == [("west", "ok")]
    assert keys_sent(fake) == Counter({EAST: 1, WEST: 12})
    breakers = process_breakers()
    assert breakers.state(OFFERING) == "closed" and breakers.allows(OFFERING)
    # The labels are on the records; the keys themselves nowhere, nor in the logs.
    momor.settle()
    texts = [json.dumps(momor.record(i)) for i in ids] + [caplog.text]
    assert not any(secret in text for text in texts for secret in (EAST, WEST))


@pytest.mark.timeout(60)
def test_a_key_failing_over_and_over_opens_its_own_circuit_not_the_offerings(momor, momor_aws, fake):
    save_keys(momor_aws, [{"key": EAST, "label": "east"}, {"key": WEST, "label": "west"}])
    fake.refuse_key(WEST, 503)  # west's deployment is down; east is well
    for _ in range(30):
        answer = momor.post("/v1/chat/completions", CHAT)
        assert answer.status_code == 200, answer.text
    breakers = process_breakers()
    assert breakers.state(OFFERING + "#west") == "open"
    assert breakers.state(OFFERING) == "closed" and breakers.state(OFFERING + "#east") == "closed"
    # Once west's circuit opened, it was passed over: the last calls went to east alone.
    last = momor.record(answer.headers["x-momor-request-id"])["attempts"]
    assert [(a["keyLabel"], a["status"]) for a in last] == [("east", "ok")]


@pytest.mark.timeout(60)
def test_a_single_saved_key_records_no_label(momor, fake):
    answer = momor.post("/v1/chat/completions", CHAT)
    assert answer.status_code == 200, answer.text
    assert "keyLabel" not in momor.record(answer.headers["x-momor-request-id"])["attempts"][0]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("weight", [0, -2, "3", None, True])
def test_a_weight_that_is_not_a_positive_number_is_refused_naming_it(momor, momor_aws, fake, weight):
    save_keys(momor_aws, [{"key": EAST, "label": "east", "weight": 3},
                          {"key": WEST, "label": "west", "weight": weight}])
    answer = momor.post("/v1/chat/completions", CHAT)
    assert answer.status_code == 500, answer.text
    message = answer.json()["error"]["message"]
    assert "entry 'openai': key 2 (west): weight must be a positive number" in message, message
    assert EAST not in answer.text and WEST not in answer.text
    assert fake.requests("openai") == []


@pytest.mark.timeout(60)
def test_an_azure_provider_spreads_over_two_deployments_each_with_its_key(momor, momor_aws, fake):
    momor_aws.client("secretsmanager").put_secret_value(SecretId=momor_aws.keys_secret, SecretString=json.dumps({
        **SAVED_KEYS, "azure@eu": [
            {"key": "az-saved-a-0201", "label": "a", "resource": "momor-eu", "deployment": "gpt41mini-eu", "weight": 2},
            {"key": "az-saved-b-0202", "label": "b", "resource": "momor-eu", "deployment": "gpt41mini-eu-b"}]}))
    keys.reset_saved_keys()
    body = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "Hello"}], "model": "gpt-4.1-mini",
            "prioritization": {"order": ["azure@eu"], "ignore": ["azure@us"]}}
    labels = []
    for _ in range(6):
        answer = momor.post("/models", body)
        assert answer.status_code == 200, answer.text
        labels += [a["keyLabel"] for a in momor.record(answer.headers["x-momor-request-id"])["attempts"]]
    assert Counter(labels) == Counter({"a": 4, "b": 2})
    route = "/azure-eu/momor-eu/openai/deployments/{}/chat/completions"
    sent = Counter((r.path, r.headers["api-key"]) for r in fake.requests("azure-eu"))
    assert sent == Counter({(route.format("gpt41mini-eu"), "az-saved-a-0201"): 4,
                            (route.format("gpt41mini-eu-b"), "az-saved-b-0202"): 2})


@pytest.mark.timeout(60)
def test_explaining_a_call_takes_none_of_the_saved_keys(momor, momor_aws, fake):
    save_keys(momor_aws, [{"key": EAST, "label": "east", "weight": 3}, {"key": WEST, "label": "west"}])
    for _ in range(3):
        explained = momor.post("/v1/chat/completions", CHAT, headers=momor.headers(**{"X-Momor-Explain": "1"}))
        assert explained.status_code == 200, explained.text
    labels = []
    for _ in range(4):
        answer = momor.post("/v1/chat/completions", CHAT)
        labels += [a["keyLabel"] for a in momor.record(answer.headers["x-momor-request-id"])["attempts"]]
    assert labels == ["east", "east", "west", "east"]  # the spread from its start: 3:1, interleaved


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("quota", "east_calls"), [({"rpm": 2}, 2), ({"tpm": 1}, 1)], ids=["rpm", "tpm"])
def test_a_key_at_its_per_minute_quota_is_passed_over(momor, momor_aws, fake, quota, east_calls):
    save_keys(momor_aws, [{"key": EAST, "label": "east", "weight": 3, **quota}, {"key": WEST, "label": "west"}])
    labels = []
    for _ in range(6):
        answer = momor.post("/v1/chat/completions", CHAT)
        assert answer.status_code == 200, answer.text
        labels += [a["keyLabel"] for a in momor.record(answer.headers["x-momor-request-id"])["attempts"]]
    # east would serve 3 calls in 4; once its minute's requests (or tokens: any answer uses one) are
    # used, west serves, without a refusal asked of the provider.
    assert labels == ["east"] * east_calls + ["west"] * (6 - east_calls)
    assert keys_sent(fake) == Counter({EAST: east_calls, WEST: 6 - east_calls})


# --- The whole-answer routes (embeddings, transcription) follow the same rule as chat ---------------

EMBED = {"model": "openai/text-embedding-3-small", "input": ["first text", "second text"]}
EMBED_OFFERING = "openai/text-embedding-3-small"


@pytest.mark.timeout(120)
def test_an_embedding_key_answering_429_moves_to_the_other_key_at_once_and_the_offering_stays_closed(
        momor, momor_aws, fake):
    save_keys(momor_aws, [{"key": EAST, "label": "east", "weight": 3}, {"key": WEST, "label": "west"}])
    fake.refuse_key(EAST, 429)
    ids = []
    for _ in range(8):
        answer = momor.post("/v1/embeddings", EMBED)
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["data"]) == 2
        ids.append(answer.headers["x-momor-request-id"])
    first = momor.record(ids[0])["attempts"]
    assert [(a["provider"], a["keyLabel"], a["httpStatus"], a["status"]) for a in first] == [
        ("openai", "east", 429, "failed"), ("openai", "west", 200, "ok")]  # the same offering, no failover
    for request_id in ids[1:]:  # east cools down: passed over
        assert [(a["keyLabel"], a["status"]) for a in momor.record(request_id)["attempts"]] == [("west", "ok")]
    assert process_breakers().state(EMBED_OFFERING) == "closed"


@pytest.mark.timeout(120)
def test_an_embedding_key_failing_over_and_over_opens_its_own_circuit_not_the_offerings(momor, momor_aws, fake):
    save_keys(momor_aws, [{"key": EAST, "label": "east"}, {"key": WEST, "label": "west"}])
    fake.refuse_key(WEST, 503)
    for _ in range(20):
        answer = momor.post("/v1/embeddings", EMBED)
        assert answer.status_code == 200, answer.text
        served = momor.record(answer.headers["x-momor-request-id"])["served"]
        assert served["provider"] == "openai"  # west's failures never sent a call to another offering
    breakers = process_breakers()
    assert breakers.state(EMBED_OFFERING + "#west") == "open"
    assert breakers.state(EMBED_OFFERING) == "closed" and breakers.state(EMBED_OFFERING + "#east") == "closed"


@pytest.mark.timeout(120)
def test_a_transcription_key_answering_429_moves_to_the_other_key_at_once(momor, momor_aws, fake):
    import base64

    from tests.media import tiny_wav

    save_keys(momor_aws, [{"key": EAST, "label": "east", "weight": 3}, {"key": WEST, "label": "west"}])
    fake.refuse_key(EAST, 429)
    audio = {"type": "bytes", "value": base64.b64encode(tiny_wav(1.0)).decode(), "name": "memo.wav",
             "contentType": "audio/wav"}
    answer = momor.post("/models/transcribe", {"file": audio, "model": "whisper-1"})
    assert answer.status_code == 200, answer.text
    attempts = momor.record(answer.headers["x-momor-request-id"])["attempts"]
    assert [(a["keyLabel"], a["httpStatus"], a["status"]) for a in attempts] == [
        ("east", 429, "failed"), ("west", 200, "ok")]
    assert process_breakers().state("openai/whisper-1") == "closed"
