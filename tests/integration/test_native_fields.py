"""POST /models (seed 000), the body's fields as a careful reader of the seed reads them (issue 34):
null where a field is optional, file addresses, and several selectors of which one names nothing."""

from __future__ import annotations

import pytest

from .test_native_route import body, problem

pytestmark = pytest.mark.emulators


def _image(value, name="a.png"):
    return {"type": "user", "value": "What is in it?",
            "files": [{"type": "url", "value": value, "name": name, "contentType": "image/png"}]}


# --- null means "not given" ----------------------------------------------------------------------


OPTIONAL_NULLS = {
    "keys": None, "parameters": None, "tools": None, "streaming": None, "streamFailureBehavior": None,
    "fileProcessing": None, "prioritization": None, "responseSchema": None, "models": None,
}


def test_null_in_every_optional_field_means_not_given(momor, fake):
    """`keys`, `parameters`, `tools`, `streaming`, `streamFailureBehavior` and `fileProcessing` were
    refused as null (400 "Input should be a valid dictionary"); null now reads as leaving them out,
    at the top level and inside Momor's own objects (a message's files, a tool result's fields, the
    prioritization's and a selector object's fields)."""
    messages = [
        {"type": "user", "value": "please call get_weather", "files": None},
        {"type": "toolCall", "call": {"id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}',
                                      "data": None}},
        {"type": "toolResult", "result": {"id": "c1", "name": None, "content": "Sunny", "documents": None,
                                          "failure": None}},
    ]
    response = momor.post("/models", {
        "systemPrompt": "Be brief.", "messages": messages, **OPTIONAL_NULLS,
        "model": {"name": "gpt-5-mini", "tier": None, "publisher": None, "provider": None, "except": None},
    })
    assert response.status_code == 200, response.text
    assert response.json()["messages"][-1]["value"] == "Tool get_weather said: Sunny"
    sent = fake.requests("openai")[-1].json
    assert sent["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "Sunny"}
    nested = momor.post("/models", body(prioritization={"order": None, "ignore": None, "zdr": None, "sort": None,
                                                        "deprecated": None, "maxAge": None, "hedge": None},
                                        parameters={"maxTokens": None, "temperature": None}))
    assert nested.status_code == 200, nested.text
    # `model: null` beside `models` is "model not given", not "both sent".
    both = momor.post("/models", {**body(), "model": None, "models": ["gpt-5-mini"]})
    assert both.status_code == 200, both.text


def test_null_where_a_field_is_required_is_still_a_400_naming_it(momor):
    doc = problem(momor.post("/models", {**body(), "systemPrompt": None}), 400)
    assert doc["detail"] == "systemPrompt: is required"
    tool = {"name": "f", "description": None, "parameters": {"type": "object"}}
    doc = problem(momor.post("/models", body(tools=[tool])), 400)
    assert "tools[0].description is required" in doc["detail"]


def test_null_inside_a_schema_or_provider_state_is_kept_as_written(momor, fake):
    """Only Momor's own objects lose their nulls: a JSON Schema's `default: null` is the caller's."""
    schema = {"type": "object", "properties": {"city": {"type": ["string", "null"], "default": None}}}
    tool = {"name": "get_weather", "description": "The weather.", "parameters": schema}
    response = momor.post("/models", body(text="please call get_weather", tools=[tool]))
    assert response.status_code == 200, response.text
    sent = fake.requests("openai")[-1].json
    assert sent["tools"][0]["function"]["parameters"]["properties"]["city"]["default"] is None


# --- file addresses ------------------------------------------------------------------------------------


def test_a_url_scheme_is_case_insensitive(momor, fake):
    """RFC 3986: the scheme is case-insensitive. `HTTP://EXAMPLE.COM/a.png` was refused as a handle."""
    response = momor.post("/models", body(messages=[_image("HTTP://EXAMPLE.COM/a.png")]))
    assert response.status_code == 200, response.text
    parts = fake.requests("openai")[-1].json["messages"][-1]["content"]
    assert {"type": "image_url", "image_url": {"url": "HTTP://EXAMPLE.COM/a.png"}} in parts


@pytest.mark.parametrize("address", ["http:///a.png", "https://:443/a.png", "HTTPS://"])
def test_a_url_with_no_host_is_a_400_naming_the_file(momor, fake, address):
    doc = problem(momor.post("/models", body(messages=[_image(address, name="holiday.png")])), 400)
    assert doc["detail"].startswith("messages.0.files.0:")
    assert "'holiday.png'" in doc["detail"] and "no host" in doc["detail"]
    assert fake.requests() == []


def test_a_handle_is_still_refused(momor):
    doc = problem(momor.post("/models", body(messages=[_image("file-abc123")])), 400)
    assert "handles are refused" in doc["detail"]


# --- several selectors ---------------------------------------------------------------------------------


def test_an_unknown_selector_among_several_is_skipped_with_a_note_and_the_next_serves(momor, fake):
    response = momor.post("/models", {**body(model=None), "models": ["no-such", "gpt-5-mini"]})
    assert response.status_code == 200, response.text
    assert response.json()["model"]["name"] == "gpt-5-mini"
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["plan"]["notes"] == ["selector 'no-such' skipped: model 'no-such' is not in the catalog"]
    explained = momor.post("/models", {**body(model=None), "models": ["no-such", "gpt-5-mini"]},
                           headers=momor.headers(**{"X-Momor-Explain": "1"}))
    assert explained.json()["notes"] == record["plan"]["notes"]
    assert [c["model"] for c in explained.json()["candidates"]] == ["gpt-5-mini"]


def test_one_unknown_exact_selector_alone_stays_a_400(momor, fake):
    doc = problem(momor.post("/models", body(model="no-such")), 400)
    assert doc["detail"] == "model 'no-such' is not in the catalog"
    doc = problem(momor.post("/models", {**body(model=None), "models": ["no-such"]}), 400)
    assert doc["detail"] == "model 'no-such' is not in the catalog"
    everyone = problem(momor.post("/models", {**body(model=None), "models": ["no-such", "nor-this"]}), 400)
    assert everyone["detail"] == "model 'no-such' is not in the catalog"
    assert fake.requests() == []


def test_a_model_named_under_another_publisher_says_so(momor):
    """`anthropic/gpt-5-mini` said the model "is not classified yet": it is, but OpenAI made it."""
    doc = problem(momor.post("/models", body(model="anthropic/gpt-5-mini")), 400)
    assert doc["detail"] == "model 'gpt-5-mini' is not published by anthropic (its publisher is openai)"
    doc = problem(momor.post("/models", body(model={"name": "gpt-5-mini", "tier": "high"})), 400)
    assert doc["detail"] == "model 'gpt-5-mini' is not in tier high (its tier is medium)"
    served = momor.post("/models", {**body(model=None), "models": ["anthropic/gpt-5-mini", "openai/gpt-5-mini"]})
    assert served.status_code == 200 and served.json()["model"]["publisher"] == "openai"


def test_a_selector_naming_an_unknown_provider_is_a_400_even_among_several(momor, fake):
    """Seed 001: a routing field that names a provider this deployment does not serve is refused."""
    doc = problem(momor.post("/models", {**body(model=None), "models": [{"provider": "nowhere"}, "gpt-5-mini"]}),
                  400)
    assert "nowhere" in doc["detail"]


# --- where the seeds read two ways (README "Where the seeds read two ways") --------------------------


def test_the_cutoff_applies_when_max_age_is_left_out_and_a_max_age_replaces_it(momor):
    """gpt-4.1-mini was released on 2024-12-01, before the example catalog's cutoff (2025-01-01)."""
    def planned(**prioritization):
        explained = momor.post("/models", body(model="tier/low", prioritization=prioritization or None),
                               headers=momor.headers(**{"X-Momor-Explain": "1"}))
        return {c["model"] for c in explained.json()["candidates"]}

    assert "gpt-4.1-mini" not in planned()
    assert "gpt-4.1-mini" in planned(maxAge="P100Y")


def test_accept_is_a_gate_never_a_choice_of_answer(momor, fake):
    """`streaming` alone decides the kind: a stream asked with `Accept: application/json` (the
    OpenAI SDK's header) is a stream, a whole answer asked with `text/event-stream` a whole answer."""
    streamed = momor.post("/models", body(streaming=True), headers=momor.headers(Accept="application/json"))
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert "event: end" in streamed.text
    whole = momor.post("/models", body(), headers=momor.headers(Accept="text/event-stream"))
    assert whole.headers["content-type"].startswith("application/json") and whole.json()["type"] == "monolith"
