"""routing/resources.py: which passthrough fields name the provider account's own resources (issue 33)."""

from __future__ import annotations

import pytest

from momor.routing.resources import refusal


@pytest.mark.parametrize(("wire", "body", "field"), [
    ("openai_chat", {"data_sources": []}, "data_sources"),
    ("anthropic", {"container": {"id": "c1", "skills": []}}, "container"),
    ("anthropic", {"mcp_servers": [{"type": "url", "url": "https://x.example"}]}, "mcp_servers"),
    ("openai_responses", {"tools": [{"type": "file_search", "vector_store_ids": ["vs_1"]}]},
     "tools[0].vector_store_ids"),
    ("openai_responses", {"tools": [{"type": "code_interpreter", "container": "cntr_1"}]}, "tools[0].container"),
])
def test_named_resources_are_refused_unless_allowed(wire, body, field):
    refused = refusal(body, wire, ())
    assert refused is not None and refused.status == 400 and refused.param == field
    resource = field.split(".")[0] if not field.startswith("tools") else body["tools"][0]["type"]
    assert refusal(body, wire, (resource,)) is None


@pytest.mark.parametrize(("wire", "body"), [
    ("openai_responses", {"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]}),  # made afresh
    ("openai_responses", {"tools": [{"type": "web_search"}, "not a tool"]}),
    ("anthropic", {"mcp_servers": [], "container": None}),
    ("openai_chat", {"container": "c1"}),  # another wire's field: not this wire's resource
])
def test_what_names_no_existing_resource_passes(wire, body):
    assert refusal(body, wire, ()) is None
