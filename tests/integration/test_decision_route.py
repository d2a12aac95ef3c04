"""POST /models/decision end to end: the choice is always one of the options, whatever the model says."""

from __future__ import annotations

import json

import pytest

from tests.fakes.script import fail, reply

pytestmark = pytest.mark.emulators

OPTIONS = ["approve", "reject", "escalate"]


def body(model="gpt-5-nano-decide", options=OPTIONS, **extra):
    written = {"systemPrompt": "Decide on the refund.", "messages": [{"type": "user", "value": "Refund 20 EUR?"}],
               "model": model, "options": options, **extra}
    return {k: v for k, v in written.items() if not (k == "model" and v is None)}


def problem(response, status, field):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc = response.json()
    assert doc["status"] == status and field in doc["detail"], doc
    return doc


def decision_model(name, provider, model_id, **caps):
    return {"name": name, "publisher": "momor", "kind": "decision", "tier": "low", "released": "2025-10-01",
            "capabilities": caps,
            "offerings": [{"provider": provider, "id": model_id, "prices": {"input": 1.0, "output": 2.0}}]}


def with_models(momor, *models):
    catalog = json.loads(json.dumps(momor.catalog))
    catalog["models"] += list(models)
    momor.write_catalog(catalog)


def test_structured_output_holds_the_answer_to_an_enum_of_the_options(momor, fake):
    response = momor.post("/models/decision", body())
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["type"] == "decision" and answer["choice"] in OPTIONS
    assert answer["model"] == {"name": "gpt-5-nano-decide", "tier": "low", "publisher": "openai",
                               "provider": "openai"}
    assert answer["usage"]["provider"] == "openai" and answer["usage"]["inputTokens"] > 0
    sent = fake.requests("openai")[-1].json
    schema = sent["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["choice"]["enum"] == OPTIONS
    assert "tools" not in sent and sent.get("stream") in (None, False)


def test_the_models_choice_is_what_comes_back(momor, fake):
    fake.script("openai", reply(text=json.dumps({"choice": "escalate"})))
    assert momor.post("/models/decision", body()).json()["choice"] == "escalate"


def test_a_model_with_tools_but_no_structured_output_is_forced_to_call_choose(momor, fake):
    with_models(momor, decision_model("tool-decider", "deepinfra", "td-1", tools=True))
    fake.script("deepinfra", reply(tool_calls=[{"name": "choose", "arguments": {"choice": "reject"}}]))
    response = momor.post("/models/decision", body(model="tool-decider"))
    assert response.status_code == 200, response.text
    assert response.json()["choice"] == "reject"
    sent = fake.requests("deepinfra")[-1].json
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "choose"}}
    assert sent["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"] == OPTIONS


def test_a_text_answer_outside_the_options_is_asked_again_once(momor, fake):
    fake.script("mistral", reply(text="I would probably approve it, honestly."), reply(text="Reject."))
    response = momor.post("/models/decision", body(model="mistral-small-decide"))
    assert response.status_code == 200, response.text
    assert response.json()["choice"] == "reject"
    first, second = fake.requests("mistral")
    assert "approve" in first.json["messages"][0]["content"] and "escalate" in first.json["messages"][0]["content"]
    assert second.json["messages"][-1]["role"] == "user" and "not one of the options" in \
        second.json["messages"][-1]["content"]
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["status"], a.get("error")) for a in record["attempts"]] == [
        ("failed", "invalid: the answer was not one of the options"), ("ok", None)]
    assert record["attempts"][0]["cost"] > 0  # the provider billed the rejected answer
    assert record["served"]["model"] == "mistral-small-decide" and record["outcome"] == "complete"


def test_two_misses_fail_over_to_the_next_candidate(momor, fake):
    fake.script("mistral", reply(text="maybe"), reply(text="perhaps"))
    response = momor.post("/models/decision", body(model=None, models=["mistral-small-decide", "gpt-5-nano-decide"]))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["choice"] in OPTIONS and answer["model"]["name"] == "gpt-5-nano-decide"
    assert len(fake.requests("mistral")) == 2


def test_every_candidate_missing_is_a_502_never_an_answer_outside_the_options(momor, fake):
    fake.script("mistral", reply(text="maybe"), reply(text="perhaps"))
    response = momor.post("/models/decision", body(model="mistral-small-decide"))
    doc = problem(response, 502, "not one of the options")
    assert "mistral-small-decide" in doc["detail"]
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["outcome"] == "failed" and record["served"] is None


def test_provider_failures_fail_over_like_any_call(momor, fake):
    fake.script("mistral", fail(500), fail(500), fail(500))
    response = momor.post("/models/decision", body(model=None, models=["mistral-small-decide", "gpt-5-nano-decide"]))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] == "openai"


def test_chat_routes_never_serve_a_decision_model_and_the_decision_route_no_chat_model(momor):
    chat = {"systemPrompt": "", "messages": [{"type": "user", "value": "hi"}], "model": "gpt-5-nano-decide"}
    doc = problem(momor.post("/models", chat), 400, "gpt-5-nano-decide")
    assert "decision model" in doc["detail"]
    problem(momor.post("/models/decision", body(model="gpt-5-mini")), 400, "chat model")
    answer = momor.post("/models/decision", body(model="tier/low"))
    assert answer.json()["model"]["name"] in ("gpt-5-nano-decide", "mistral-small-decide")


@pytest.mark.parametrize(("options", "field"), [
    (None, "options"),
    (["only"], "options"),
    (["a", "b", "a"], "options[2]"),
    (["a", ""], "options[1]"),
    ("approve", "options"),
    ([f"o{i}" for i in range(257)], "options"),
])
def test_bad_options_are_problems_naming_the_field(momor, options, field):
    payload = body(options=options)
    if options is None:
        del payload["options"]
    problem(momor.post("/models/decision", payload), 400, field)


@pytest.mark.parametrize(("extra", "field"), [
    ({"streaming": True}, "streaming"),
    ({"tools": []}, "tools"),
    ({"fileProcessing": {"type": "auto"}}, "fileProcessing"),
])
def test_streaming_and_chat_only_fields_are_refused_by_name(momor, extra, field):
    problem(momor.post("/models/decision", body(**extra)), 400, field)


def test_the_decision_call_is_recorded(momor, fake):
    response = momor.post("/models/decision", body())
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["route"] == "/models/decision" and record["status"] == 200
    assert record["served"]["model"] == "gpt-5-nano-decide"


def test_get_models_shows_each_models_kind(momor):
    entries = {e["name"]: e for e in momor.get("/models").json()["data"]}
    assert entries["gpt-5-mini"]["kind"] == "chat"
    assert entries["gpt-5-nano-decide"]["kind"] == "decision"
    assert entries["whisper-1"]["kind"] == "transcription"


def test_a_content_policy_refusal_is_final_here_too(momor, fake):
    from tests.fakes.dialects import azure_content_filter_error

    fake.script("mistral", fail(400, azure_content_filter_error()))
    response = momor.post("/models/decision", body(model=None, models=["mistral-small-decide", "gpt-5-nano-decide"]))
    assert response.status_code == 400, response.text
    assert "content management policy" in response.json()["detail"]
    assert not fake.requests("openai")
