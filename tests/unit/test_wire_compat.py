"""OpenAI-compatible providers as catalog options of the openai_chat wire: the exact request each one
is sent (URL, headers, body), from the real example catalog's own provider entries, with no network."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from momor.call import Call, Parameters
from momor.catalog import Catalog, load_catalog_file
from momor.errors import ProviderError
from momor.messages import ContentMessage, ThinkingMessage, UserMessage
from momor.providers.base import Target
from momor.providers.openai_chat import WIRE, map_error, parse_response
from momor.routing.policy import classify

ROOT = Path(__file__).resolve().parents[2]
KEY = "compat-secret-key-0123"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog_file(ROOT / "infra" / "example-catalog.real.json")


def target(catalog: Catalog, provider: str, model: str, extra: dict[str, Any] | None = None,
           source: str = "saved") -> Target:
    found = next(m for m in catalog.models if m.name == model)
    offering = next(o for o in found.offerings if o.provider == provider)
    return Target(catalog.provider(provider), offering, found, KEY, extra or {}, source)


def url_of(t: Target, call: Call | dict[str, Any], stream: bool = False) -> tuple[str, dict[str, str], dict[str, Any]]:
    if isinstance(call, dict):  # the caller's own body: a passthrough attempt, as routing/passthrough.py hands it
        t, call = dataclasses.replace(t, passthrough_body=call), Call(system="", messages=[UserMessage(value="Hi")])
    request = WIRE.build_request(call, t, stream)
    url = request.url or t.provider.base_url.rstrip("/") + request.path
    return url, request.headers, request.body


def hi(**params: Any) -> Call:
    return Call(system="Be brief.", messages=[UserMessage(value="Hi")], params=Parameters(**params))


def raw(body: dict[str, Any]) -> dict[str, Any]:
    return body


# --- Azure ------------------------------------------------------------------------------------------


def test_azure_deployment_route_with_api_key_header_and_api_version(catalog):
    t = target(catalog, "azure@eu", "gpt-4.1-mini", {"resource": "contoso-eu"})
    url, headers, body = url_of(t, hi(max_tokens=10))
    assert url == ("https://contoso-eu.openai.azure.com/openai/deployments/gpt-4.1-mini/chat/completions"
                   "?api-version=2024-10-21")
    assert headers == {"api-key": KEY}  # and no Authorization header
    assert body["max_completion_tokens"] == 10 and body["model"] == "gpt-4.1-mini"


def test_azure_key_values_name_the_deployment_and_version(catalog):
    t = target(catalog, "azure@eu", "gpt-4.1-mini",
               {"resource": "contoso-eu", "deployment": "my-mini", "apiVersion": "2025-04-01-preview"}, "call")
    url, _, _ = url_of(t, raw({"messages": [{"role": "user", "content": "Hi"}]}))
    assert url == ("https://contoso-eu.openai.azure.com/openai/deployments/my-mini/chat/completions"
                   "?api-version=2025-04-01-preview")


def test_azure_v1_api_takes_the_deployment_as_model_and_no_version(catalog):
    t = target(catalog, "azure@us", "gpt-4.1-mini", {"resource": "contoso-us"})
    url, headers, body = url_of(t, hi(), stream=True)
    assert url == "https://contoso-us.openai.azure.com/openai/v1/chat/completions"
    assert headers == {"api-key": KEY}
    assert body["model"] == "gpt-4.1-mini" and body["stream_options"] == {"include_usage": True}


def test_azure_without_its_resource_fails_that_offering_naming_the_value(catalog):
    with pytest.raises(ProviderError) as failed:
        url_of(target(catalog, "azure@eu", "gpt-4.1-mini"), hi())
    assert failed.value.kind == "unsupported" and "'resource'" in failed.value.detail


@pytest.mark.parametrize("value", ["evil.example/x?", "a#b", "..", "user@host", "a/../b", ""])
def test_a_key_value_cannot_point_the_request_elsewhere(catalog, value):
    t = target(catalog, "azure@eu", "gpt-4.1-mini", {"resource": "contoso", "deployment": value}, "call")
    with pytest.raises(ProviderError) as failed:
        url_of(t, hi())
    assert failed.value.kind == "unsupported" and "'deployment'" in failed.value.detail
    assert not value or value not in failed.value.detail  # the detail names the value, never its content


def test_azure_content_filter_error_is_a_final_refusal():
    body = {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content "
                                 "management policy.", "type": None, "param": "prompt", "code": "content_filter",
                      "status": 400, "innererror": {"code": "ResponsibleAIPolicyViolation",
                                                    "content_filter_result": {"violence": {"filtered": True,
                                                                                           "severity": "medium"}}}}}
    error = map_error(400, json.dumps(body).encode(), {})
    assert error.kind == "refused" and classify(error) == "final"
    assert "content management policy" in error.detail


def test_azure_finish_reason_content_filter_is_the_content_filter_stop(catalog):
    answer = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1-mini",
              "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
              "choices": [{"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant",
                                                                                      "content": "Part"},
                           "content_filter_results": {"violence": {"filtered": True, "severity": "high"}}}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
    finish = parse_response(json.dumps(answer).encode(), target(catalog, "azure@us", "gpt-4.1-mini"))[-1]
    assert (finish.reason, finish.stop) == ("content_filter", "content_filter")


# --- NVIDIA, DeepInfra, Mistral, Zen --------------------------------------------------------------------


@pytest.mark.parametrize(("asked", "sent"), [(0, 0.01), (0.005, 0.01), (0.7, 0.7)])
def test_nvidia_temperature_is_raised_to_its_floor(catalog, asked, sent):
    t = target(catalog, "nvidia", "nemotron-super-49b")
    url, headers, body = url_of(t, hi(temperature=asked, max_tokens=5))
    assert url == "https://integrate.api.nvidia.com/v1/chat/completions"
    assert headers == {"Authorization": f"Bearer {KEY}"}
    assert body["temperature"] == sent and body["max_tokens"] == 5 and "max_completion_tokens" not in body
    passthrough = url_of(t, raw({"messages": [], "temperature": asked}))[2]
    assert passthrough["temperature"] == sent


def test_deepinfra_reads_max_tokens(catalog):
    t = target(catalog, "deepinfra", "llama-3.3-70b")
    url, _, body = url_of(t, hi(max_tokens=7, top_k=5))
    assert url == "https://api.deepinfra.com/v1/openai/chat/completions"
    assert body["max_tokens"] == 7 and body["top_k"] == 5 and "max_completion_tokens" not in body


def test_mistral_random_seed_max_tokens_and_no_stream_options(catalog):
    t = target(catalog, "mistral", "mistral-small")
    url, _, body = url_of(t, hi(max_tokens=7, seed=3), stream=True)
    assert url == "https://api.mistral.ai/v1/chat/completions"
    assert body["random_seed"] == 3 and body["max_tokens"] == 7 and body["stream"] is True
    assert not {"seed", "max_completion_tokens", "stream_options"} & set(body)
    written = {"messages": [], "seed": 3, "max_completion_tokens": 9, "stream_options": {"include_usage": True}}
    passthrough = url_of(t, raw(written), stream=True)[2]
    assert passthrough["random_seed"] == 3 and passthrough["max_tokens"] == 9
    assert not {"seed", "max_completion_tokens", "stream_options"} & set(passthrough)


@pytest.mark.parametrize(("model", "effort", "sent"), [
    ("deepseek-v4-flash", "low", "low"), ("deepseek-v4-flash", "high", "high"),
    ("north-mini-code", "low", "high"), ("north-mini-code", "none", "none"),
    # No "off" variant: not reasoning is asked as its lowest depth (seed 000; issue 10, item 33).
    ("deepseek-v4-flash", "none", "low"),
])
def test_zen_variants_are_reasoning_depths(catalog, model, effort, sent):
    t = target(catalog, "zen", model)
    url, _, body = url_of(t, hi(reasoning_effort=effort, max_tokens=9))
    assert url == "https://opencode.ai/zen/v1/chat/completions"
    assert body.get("reasoning_effort") == sent and body["max_tokens"] == 9


def test_zen_replays_reasoning_in_reasoning_content(catalog):
    call = Call(system="", messages=[UserMessage(value="Hi"), ThinkingMessage(value="hmm"),
                                     ContentMessage(value="Hello"), UserMessage(value="Again")])
    _, _, body = url_of(target(catalog, "zen", "deepseek-v4-flash"), call)
    assert body["messages"][1] == {"role": "assistant", "content": "Hello", "reasoning_content": "hmm"}
