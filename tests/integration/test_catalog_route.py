"""GET /models (and /v1/models): the catalog as a caller may use it, read by both official SDKs."""

from __future__ import annotations

import anthropic
import httpx2
import openai
import pytest

pytestmark = pytest.mark.emulators


def test_anthropic_sdk_lists_models(momor, fake):
    client = anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)
    models = list(client.models.list())
    ids = [m.id for m in models]
    assert "anthropic/claude-sonnet-4-5" in ids and "openai/gpt-5-mini" in ids and "momor/duo" in ids
    claude = next(m for m in models if m.id == "anthropic/claude-sonnet-4-5")
    assert claude.type == "model" and claude.display_name == "claude-sonnet-4-5"
    assert claude.created_at.date().isoformat() == "2025-09-29"


def test_openai_sdk_lists_models(momor, fake):
    client = openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0)
    models = list(client.models.list())
    gpt = next(m for m in models if m.id == "openai/gpt-5-mini")
    assert gpt.object == "model" and gpt.owned_by == "openai" and gpt.created > 0


def test_momor_fields(momor, fake):
    response = momor.get("/models")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["has_more"] is False and body["first_id"] == body["data"][0]["id"]
    duo = next(m for m in body["data"] if m["name"] == "duo")
    assert duo["tier"] == "medium" and duo["publisher"] == "momor" and duo["released"] == "2025-10-01"
    assert duo["deprecated"] is False and duo["capabilities"]["maxOutputTokens"] == 8192
    assert duo["offerings"] == [
        {"provider": "flaky", "prices": {"input": 1.0, "output": 2.0}},
        {"provider": "backup", "prices": {"input": 2.0, "output": 4.0}},
    ]
    assert "id" not in duo["offerings"][0]  # the provider's own model id is not the caller's business


def test_only_servable_models_are_listed(momor, fake):
    catalog = dict(momor.catalog)
    catalog["models"] = [*catalog["models"], {
        "name": "unclassified", "publisher": "acme", "offerings": [
            {"provider": "openai", "id": "acme-1", "prices": {"input": 1, "output": 1}}]}]
    momor.write_catalog(catalog)
    ids = [m["id"] for m in momor.get("/v1/models").json()["data"]]
    assert "acme/unclassified" not in ids and "momor/duo" in ids


def test_key_required(momor, fake):
    assert momor.get("/models", api_key="wrong").status_code == 401
    assert httpx2.get(momor.url + "/v1/models", timeout=30).status_code == 401
    ok = httpx2.get(momor.url + "/v1/models", headers={"x-api-key": momor.api_key}, timeout=30)
    assert ok.status_code == 200 and ok.headers["x-momor-request-id"]


# --- models.retrieve and unknown paths (issue 10: 11) ---------------------------------------------


def test_both_sdks_retrieve_a_model_by_its_id(momor, fake):
    claude = anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)
    info = claude.models.retrieve("anthropic/claude-sonnet-4-5")
    assert info.id == "anthropic/claude-sonnet-4-5" and info.type == "model"
    assert info.display_name == "claude-sonnet-4-5" and info.created_at.date().isoformat() == "2025-09-29"
    gpt = openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0)
    model = gpt.models.retrieve("openai/gpt-5-mini")
    assert model.id == "openai/gpt-5-mini" and model.object == "model" and model.owned_by == "openai"
    assert momor.get("/models/momor/duo").json()["offerings"][0]["provider"] == "flaky"


def test_an_unknown_model_is_a_404_in_each_sdks_shape(momor, fake):
    claude = anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)
    with pytest.raises(anthropic.NotFoundError) as caught:
        claude.models.retrieve("acme/nothing")
    assert caught.value.body["error"]["type"] == "not_found_error" and "acme/nothing" in caught.value.message
    assert caught.value.request_id == caught.value.response.headers["x-momor-request-id"]
    gpt = openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0)
    with pytest.raises(openai.NotFoundError) as raised:
        gpt.models.retrieve("acme/nothing")
    assert raised.value.type == "invalid_request_error" and "acme/nothing" in raised.value.message
    assert raised.value.response.headers["x-should-retry"] == "false"
    problem = momor.get("/models/acme/nothing")
    assert problem.status_code == 404 and problem.headers["content-type"] == "application/problem+json"


def test_unknown_paths_answer_in_each_routes_error_shape(momor, fake):
    gpt = openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0)
    with pytest.raises(openai.NotFoundError) as raised:
        gpt.completions.create(model="openai/gpt-5-mini", prompt="hi")  # the legacy completions API: not served
    assert raised.value.type == "invalid_request_error" and "/v1/completions" in raised.value.message
    claude = anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0)
    with pytest.raises(anthropic.NotFoundError) as caught:
        claude.messages.batches.list()
    assert caught.value.body["type"] == "error" and caught.value.body["error"]["type"] == "not_found_error"
    wrong_method = httpx2.get(momor.url + "/v1/messages", headers={"anthropic-version": "2023-06-01"}, timeout=30)
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]["type"] == "invalid_request_error"
    native = httpx2.get(momor.url + "/nowhere", timeout=30)
    assert native.status_code == 404 and native.json()["status"] == 404
