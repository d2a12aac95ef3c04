"""Passthrough does not hand provider-side resources to callers (issue 33): on the deployment's own
saved keys, Azure `data_sources`, a Responses `file_search` tool (vector store ids) or `code_interpreter`
on an existing container, and Anthropic `container` and `mcp_servers` are refused with a 400 naming the
field, before any provider is called, unless the provider's catalog entry lists them in
`callerResources`; with a key the caller sent they pass as written (routing/resources.py)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.emulators

CLAUDE = {"model": "claude-sonnet-4-5", "max_tokens": 32, "messages": [{"role": "user", "content": "Hello"}]}
CONTAINER = "container_011CPR5CNjB747bTd36fQLFk"
MCP = [{"type": "url", "url": "https://mcp.example.com/sse", "name": "owner-tools"}]


def anthropic(momor, body):
    return momor.post("/messages", body, headers={"x-api-key": momor.api_key, "Content-Type": "application/json",
                                                  "anthropic-version": "2023-06-01"})


def allow(momor, provider: str, resources: list[str]) -> None:
    catalog = json.loads(json.dumps(momor.catalog))
    next(p for p in catalog["providers"] if p["name"] == provider)["callerResources"] = resources
    momor.write_catalog(catalog)


@pytest.mark.timeout(60)
def test_azure_data_sources_are_refused_on_the_deployments_key(momor, fake):
    body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "What is in our index?"}],
            "data_sources": [{"type": "azure_search", "parameters": {
                "endpoint": "https://owner.search.windows.net", "index_name": "contracts",
                "authentication": {"type": "system_assigned_managed_identity"}}}]}
    answer = momor.post("/v1/chat/completions", body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"].startswith("data_sources: ")
    assert fake.requests() == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("tool", "field"), [
    ({"type": "file_search", "vector_store_ids": ["vs_owner_contracts"]}, "tools[1].vector_store_ids"),
    ({"type": "code_interpreter", "container": "cntr_owner_0001"}, "tools[1].container"),
    ({"type": "code_interpreter", "container": {"type": "auto", "file_ids": ["file-owner-01"]}}, "tools[1].container"),
])
def test_responses_tools_on_the_accounts_stores_are_refused(momor, fake, tool, field):
    catalog = json.loads(json.dumps(momor.catalog))
    provider = next(p for p in catalog["providers"] if p["name"] == "openai")
    provider["wire"], provider["options"] = "openai_responses", {"store": False}
    momor.write_catalog(catalog)
    weather = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    answer = momor.post("/v1/responses", {"model": "gpt-5-mini", "input": "What do our files say?",
                                          "tools": [weather, tool]})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith(f"{field}: "), answer.text
    assert fake.requests("openai") == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("field", "value"), [("container", CONTAINER), ("mcp_servers", MCP)])
def test_anthropic_container_and_mcp_servers_are_refused_on_the_deployments_key(momor, fake, field, value):
    answer = anthropic(momor, {**CLAUDE, field: value})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"].startswith(f"{field}: ")
    assert fake.requests("anthropic") == []


@pytest.mark.timeout(60)
def test_with_the_callers_own_key_they_pass(momor, fake):
    answer = anthropic(momor, {**CLAUDE, "container": CONTAINER, "keys": {"anthropic": "sk-ant-callers-own-0001"}})
    assert answer.status_code == 200, answer.text
    sent = fake.requests("anthropic")[-1]
    assert sent.json["container"] == CONTAINER and sent.headers["x-api-key"] == "sk-ant-callers-own-0001"


@pytest.mark.timeout(60)
def test_a_provider_may_allow_them_in_the_catalog(momor, fake):
    allow(momor, "anthropic", ["container"])
    answer = anthropic(momor, {**CLAUDE, "container": CONTAINER})
    assert answer.status_code == 200, answer.text
    assert fake.requests("anthropic")[-1].json["container"] == CONTAINER
    assert anthropic(momor, {**CLAUDE, "mcp_servers": MCP}).status_code == 400  # only what it lists
