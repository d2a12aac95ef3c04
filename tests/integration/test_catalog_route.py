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
