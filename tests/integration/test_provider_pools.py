"""Several Azure resources and Bedrock regions for one provider (issue 38), over HTTP against the running
app and the strict fakes: a saved key in a provider's list names its own `baseUrl` (and the deployment
each offering has there) or its own `region`, calls spread over them by weight, a resource answering 429
is passed over without opening the offering's circuit, a caller's own key never goes to a saved key's
endpoint, and a bad entry is refused when the keys are loaded, naming the field.

On the fake, each Azure resource is a path of its own on 127.0.0.1 (the fake has one host; its first
path segment stands for the host, tests/fakes/dialects.py), and each Bedrock region is the region's
name as the base URL's path segment (`http://127.0.0.1:port/us-east-1`), which a region swaps as it
swaps the host label of `https://bedrock-runtime.us-east-1.amazonaws.com`."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from momor.routing.circuits import process_breakers
from momor.store import keys

from .conftest import SAVED_KEYS, with_providers

pytestmark = pytest.mark.emulators

AZURE_BODY = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "Hello"}], "model": "gpt-4.1-mini",
              "prioritization": {"order": ["azure@eu"], "ignore": ["azure@us"]}}
EAST_KEY, WEST_KEY = "az-pool-east-0301", "az-pool-west-0302"
VIRGINIA_KEY, OREGON_KEY = "ABSKpool-virginia-0303", "ABSKpool-oregon-0304"
ROUTE = "/openai/deployments/{}/chat/completions"


def save(momor_aws: Any, **entries: Any) -> None:
    momor_aws.client("secretsmanager").put_secret_value(
        SecretId=momor_aws.keys_secret, SecretString=json.dumps({**SAVED_KEYS, **entries}))
    keys.reset_saved_keys()


def two_resources(fake: Any, east_weight: int = 3) -> list[dict[str, Any]]:
    """azure@eu's keys: two resources of their own, each with its deployment of the offering gpt-4.1-mini."""
    return [
        {"key": EAST_KEY, "label": "east", "weight": east_weight, "baseUrl": f"{fake.url}/azure-east/contoso-east",
         "deployments": {"gpt-4.1-mini": "gpt41mini-east"}},
        {"key": WEST_KEY, "label": "west", "weight": 1, "baseUrl": f"{fake.url}/azure-west/contoso-west/",
         "deployments": {"gpt-4.1-mini": "mini-west"}},
    ]


def azure_sent(fake: Any) -> Counter[tuple[str, str, str]]:
    """(resource label, path, api-key) of every request the fake's Azure resources received."""
    return Counter((r.label, r.path, r.headers["api-key"]) for r in fake.requests() if r.label.startswith("azure"))


@pytest.mark.timeout(120)
def test_two_azure_resources_weighted_3_to_1_serve_about_3_to_1_each_on_its_deployment(momor, momor_aws, fake):
    save(momor_aws, **{"azure@eu": two_resources(fake)})
    labels: list[str] = []
    for _ in range(40):
        answer = momor.post("/models", AZURE_BODY)
        assert answer.status_code == 200, answer.text
        attempts = momor.record(answer.headers["x-momor-request-id"])["attempts"]
        assert [(a["provider"], a["status"], a["serverAddress"]) for a in attempts] == [("azure@eu", "ok", "127.0.0.1")]
        labels += [a["keyLabel"] for a in attempts]
    assert 27 <= Counter(labels)["east"] <= 33 and len(labels) == 40, Counter(labels)  # 3:1 is 30:10
    sent = azure_sent(fake)
    # Each resource received its own deployment in its own path with its own key, and the catalog's
    # resource (azure-eu/momor-eu) none.
    assert set(sent) == {("azure-east", "/azure-east/contoso-east" + ROUTE.format("gpt41mini-east"), EAST_KEY),
                         ("azure-west", "/azure-west/contoso-west" + ROUTE.format("mini-west"), WEST_KEY)}
    assert sum(sent.values()) == 40
    assert {r.query for r in fake.requests() if r.label.startswith("azure")} == {"api-version=2024-10-21"}


@pytest.mark.timeout(60)
def test_a_resource_answering_429_is_passed_over_and_the_offerings_circuit_stays_closed(momor, momor_aws, fake):
    save(momor_aws, **{"azure@eu": two_resources(fake)})
    fake.refuse_key(EAST_KEY, 429)  # east's quota is used up; west is well
    ids = []
    for _ in range(8):
        answer = momor.post("/models", AZURE_BODY)
        assert answer.status_code == 200, answer.text
        ids.append(answer.headers["x-momor-request-id"])
    first = momor.record(ids[0])["attempts"]
    assert [(a["keyLabel"], a["httpStatus"], a["status"]) for a in first] == [
        ("east", 429, "failed"), ("west", 200, "ok")]
    for request_id in ids[1:]:  # east cools down: every later call goes straight to west
        assert [a["keyLabel"] for a in momor.record(request_id)["attempts"]] == ["west"]
    assert Counter(label for label, _, _ in azure_sent(fake).elements()) == Counter({"azure-east": 1, "azure-west": 8})
    breakers = process_breakers()
    assert breakers.state("azure@eu/gpt-4.1-mini") == "closed" and breakers.allows("azure@eu/gpt-4.1-mini")


@pytest.mark.timeout(60)
def test_a_callers_own_key_never_goes_to_a_saved_keys_endpoint(momor, momor_aws, fake):
    save(momor_aws, **{"azure@eu": two_resources(fake)})
    caller_key = "az-caller-own-0305"
    body = {**AZURE_BODY, "keys": {"azure@eu": {"key": caller_key, "resource": "momor-eu",
                                                "deployment": "gpt41mini-eu", "baseUrl": f"{fake.url}/azure-east/x",
                                                "region": "us-west-2"}}}
    answer = momor.post("/models", body)
    assert answer.status_code == 200, answer.text
    # The catalog's endpoint, filled from the caller's own values; its baseUrl is no setting of a call.
    catalogs = "/azure-eu/momor-eu" + ROUTE.format("gpt41mini-eu")
    assert azure_sent(fake) == Counter({("azure-eu", catalogs, caller_key): 1})
    attempt = momor.record(answer.headers["x-momor-request-id"])["attempts"][0]
    assert attempt["keySource"] == "call" and "serverAddress" not in attempt and "keyLabel" not in attempt


@pytest.fixture
def bedrock(momor: Any, fake: Any) -> str:
    """A Bedrock provider whose catalog baseUrl names us-east-1, and a model served by it; its name."""
    catalog = json.loads(json.dumps(momor.catalog))
    with_providers(catalog, [{"name": "bedrock@us-east-1", "wire": "bedrock_converse",
                              "baseUrl": f"{fake.url}/us-east-1", "parameters": ["maxTokens", "temperature"]}])
    catalog["models"].append({
        "name": "nova-lite-pooled", "publisher": "amazon", "tier": "low", "released": "2024-12-03",
        "capabilities": {"maxOutputTokens": 5000},
        "offerings": [{"provider": "bedrock@us-east-1", "id": "us.amazon.nova-lite-v1:0",
                       "prices": {"input": 0.06, "output": 0.24}}]})
    momor.write_catalog(catalog)
    return "nova-lite-pooled"


@pytest.mark.timeout(120)
def test_two_bedrock_regions_spread_by_weight_each_to_its_regions_endpoint(momor, momor_aws, fake, bedrock):
    # The first key has no region: the catalog's (us-east-1). The second is sent to us-west-2.
    save(momor_aws, bedrock=[{"key": VIRGINIA_KEY, "label": "virginia", "weight": 3},
                             {"key": OREGON_KEY, "label": "oregon", "region": "us-west-2"}])
    body = {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": "Hello"}], "model": bedrock}
    records = []
    for _ in range(20):
        answer = momor.post("/models", body)
        assert answer.status_code == 200, answer.text
        records.append(momor.record(answer.headers["x-momor-request-id"])["attempts"])
    assert Counter(a["keyLabel"] for attempts in records for a in attempts) == Counter({"virginia": 15, "oregon": 5})
    path = "/model/us.amazon.nova-lite-v1:0/converse"  # as the fake reads it, decoded
    sent = Counter((r.label, r.path, r.headers["authorization"]) for r in fake.requests() if r.label.startswith("us-"))
    assert sent == Counter({("us-east-1", "/us-east-1" + path, f"Bearer {VIRGINIA_KEY}"): 15,
                            ("us-west-2", "/us-west-2" + path, f"Bearer {OREGON_KEY}"): 5})
    # Only the key with a region of its own names where it went; the provider stays the catalog's.
    by_label = {a["keyLabel"]: a for attempts in records for a in attempts}
    assert "serverAddress" not in by_label["virginia"] and by_label["oregon"]["serverAddress"] == "127.0.0.1"
    assert {a["provider"] for a in by_label.values()} == {"bedrock@us-east-1"}


@pytest.mark.timeout(60)
def test_a_region_the_providers_base_url_cannot_take_passes_the_key_over_saying_so(momor, momor_aws, fake):
    # azure@eu's baseUrl names no AWS region to replace: the key cannot be sent, and the record says why.
    save(momor_aws, **{"azure@eu": [{"key": EAST_KEY, "label": "east", "region": "us-west-2"}]})
    answer = momor.post("/models", AZURE_BODY)
    assert answer.status_code == 503, answer.text
    assert azure_sent(fake) == Counter()
    assert "names no single AWS region to replace" in answer.text and EAST_KEY not in answer.text


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("entry", "message"), [
    ({"baseUrl": "http://azure.example.com/x"}, "baseUrl must be https (plain http only to 127.0.0.1 or localhost)"),
    ({"baseUrl": "ftp://127.0.0.1/x"}, "baseUrl must be an absolute https URL"),
    ({"baseUrl": "https://user:pw@contoso.openai.azure.com"}, "baseUrl must not hold credentials"),
    ({"baseUrl": "https://{resource}.openai.azure.com"}, "baseUrl must not hold a query, a fragment or a template"),
    ({"baseUrl": 7}, "baseUrl must be a URL"),
    ({"region": "US-WEST-2"}, "region must be an AWS region's name such as us-west-2"),
    ({"region": "us-west-2.evil.example"}, "region must be an AWS region's name"),
    ({"region": "us-west-2", "baseUrl": "https://contoso.openai.azure.com"}, "baseUrl and region: name one"),
    ({"deployments": {"gpt-4.1-mini": "a/b"}}, "deployments must map offering ids to deployment names"),
    ({"deployments": ["gpt41mini"]}, "deployments must map offering ids to deployment names"),
], ids=["http", "scheme", "credentials", "template", "number", "region-case", "region-host", "both",
        "deployment-path", "deployments-list"])
def test_a_bad_place_is_refused_when_the_keys_load_naming_the_field(momor, momor_aws, fake, entry, message):
    save(momor_aws, **{"azure@eu": [{"key": EAST_KEY, "label": "east"}, {"key": WEST_KEY, "label": "west", **entry}]})
    answer = momor.post("/models", AZURE_BODY)
    assert answer.status_code == 500, answer.text
    text = answer.json()["detail"]
    assert f"entry 'azure@eu': key 2 (west): {message}" in text, text
    assert EAST_KEY not in answer.text and WEST_KEY not in answer.text and "pw@" not in answer.text
    assert fake.requests() == []


@pytest.mark.timeout(60)
def test_a_place_on_a_single_key_is_refused_pointing_at_the_list(momor, momor_aws, fake):
    save(momor_aws, **{"azure@eu": {"key": EAST_KEY, "baseUrl": f"{fake.url}/azure-east/contoso-east"}})
    answer = momor.post("/models", AZURE_BODY)
    assert answer.status_code == 500, answer.text
    assert "entry 'azure@eu': baseUrl is taken on a key in a list" in answer.json()["detail"]
    assert fake.requests() == []


@pytest.mark.timeout(60)
def test_a_streamed_call_goes_to_the_chosen_resource_too(momor, momor_aws, fake):
    save(momor_aws, **{"azure@eu": two_resources(fake, east_weight=1)})
    labels = []
    for _ in range(2):  # 1:1 from a fresh spread: east, then west
        response, frames = momor.stream("/models", {**AZURE_BODY, "streaming": True})
        assert response.status_code == 200 and frames[-1][0] == "end", frames
        labels += [a["keyLabel"] for a in momor.record(response.headers["x-momor-request-id"])["attempts"]]
    assert labels == ["east", "west"]
    sent = [(r.label, r.json["stream"]) for r in fake.requests() if r.label.startswith("azure")]
    assert sent == [("azure-east", True), ("azure-west", True)]
