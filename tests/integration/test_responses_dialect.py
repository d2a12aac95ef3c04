"""POST /v1/responses end to end, driven by the official openai SDK (issue 24).

The SDK against a translated wire (Anthropic) and against OpenAI's own Responses wire (the test
catalog's `openai` provider switched to `openai_responses`, where the caller's body passes through),
buffered and streamed; the stored responses (previous_response_id, retrieve, delete, input_items)
per API key, and a conversation whose turns run on different wires with their reasoning state intact.
"""

from __future__ import annotations

import json
import time

import openai
import pytest
from openai.types.responses import Response, ResponseItemList
from pydantic import BaseModel

from momor.store import apikeys
from tests.fakes.script import cut, fail

pytestmark = pytest.mark.emulators

GPT, CLAUDE = "gpt-5-mini", "claude-sonnet-4-5"
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
RETRIED_503 = (fail(503), fail(503), fail(503))


@pytest.fixture
def client(momor):
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


@pytest.fixture
def responses_wire(momor):
    """The `openai` provider listed on the Responses wire, as a deployment lists OpenAI."""
    catalog = json.loads(json.dumps(momor.catalog))
    provider = next(p for p in catalog["providers"] if p["name"] == "openai")
    provider["wire"] = "openai_responses"
    provider["options"] = {"store": False}
    momor.write_catalog(catalog)
    return momor


def record_of(momor, request_id):
    deadline = time.monotonic() + 5
    while momor.get(f"/generations/{request_id}").status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    record = momor.record(request_id)
    assert record["dialect"] == "responses"
    return record


def sent_to(fake, provider, path_end):
    return [r.json for r in fake.requests(provider) if r.path.endswith(path_end)]


# --- whole answers and streams -----------------------------------------------------------------------


def test_text_on_a_translated_wire(momor, fake, client):
    raw = client.responses.with_raw_response.create(model=CLAUDE, instructions="Be brief.", input="Hello there",
                                                    max_output_tokens=64, metadata={"team": "a"})
    answer = raw.parse()
    request_id = raw.headers["x-momor-request-id"]
    Response.model_validate(raw.http_response.json())  # strictly as the SDK types it, not only leniently read
    assert answer.id == f"resp_{request_id}" and answer.object == "response"
    assert answer.status == "completed" and answer.model == "anthropic/claude-sonnet-4-5"
    assert answer.output_text == "Echo: Hello there"
    assert answer.metadata == {"team": "a"} and answer.max_output_tokens == 64 and answer.store is True
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    assert answer.usage.total_tokens == answer.usage.input_tokens + answer.usage.output_tokens
    sent = sent_to(fake, "anthropic", "/v1/messages")[-1]
    assert "Be brief." in json.dumps(sent["system"])
    assert sent["max_tokens"] == 64
    record = record_of(momor, request_id)
    assert record["served"]["provider"] == "anthropic"


def test_stream_on_a_translated_wire_is_the_responses_event_sequence(momor, fake, client):
    with client.responses.stream(model=CLAUDE, input="Hello there") as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    for kind in ("response.output_item.added", "response.content_part.added", "response.output_text.delta",
                 "response.output_text.done", "response.content_part.done", "response.output_item.done"):
        assert kind in kinds, kind
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "Echo: Hello there"
    assert final.output_text == "Echo: Hello there" and final.usage.output_tokens > 0
    assert client.responses.retrieve(final.id).output_text == "Echo: Hello there"


def test_bad_input_is_a_400_in_openais_error_shape(momor, fake, client):
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=CLAUDE, input=[{"type": "message", "role": "robot", "content": "hi"}])
    assert caught.value.status_code == 400
    assert caught.value.body["param"] == "input[0].role" and "robot" in caught.value.body["message"]
    response = momor.post("/v1/responses", {"model": CLAUDE, "input": "hi", "stream": "yes"})
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error" and response.json()["error"]["param"] == "stream"
    for name, value in (("background", True), ("conversation", "conv_1"), ("prompt", {"id": "pmpt_1"})):
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(model=CLAUDE, input="hi", extra_body={name: value})
        assert caught.value.body["param"] == name  # refused, never quietly ignored
    assert fake.requests("anthropic") == []


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_a_tool_round_trip(momor, fake, client, stream):
    ask = {"model": CLAUDE, "tools": [WEATHER], "input": "call get_weather for Oslo"}
    if stream:
        with client.responses.stream(**ask) as events:
            kinds = [e.type for e in events]
            first = events.get_final_response()
        assert "response.function_call_arguments.delta" in kinds and "response.function_call_arguments.done" in kinds
    else:
        first = client.responses.create(**ask)
    call = next(i for i in first.output if i.type == "function_call")
    assert call.name == "get_weather" and json.loads(call.arguments) == {"query": "call get_weather for Oslo"}
    second = client.responses.create(
        model=CLAUDE, tools=[WEATHER], previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "Cold"}])
    assert second.output_text == "Tool get_weather said: Cold"
    sent = sent_to(fake, "anthropic", "/v1/messages")[-1]
    assert sent["tools"][0]["name"] == "get_weather"
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]  # the stored turn, expanded
    assert sent["messages"][1]["content"][-1]["id"] == call.call_id


class Weather(BaseModel):
    city: str
    degrees: int


def test_structured_output(momor, fake, client):
    # gpt-5-mini is on the Chat Completions wire in the test catalog: translated both ways.
    answer = client.responses.parse(model=GPT, input="Weather in Oslo", text_format=Weather)
    assert isinstance(answer.output_parsed, Weather)
    sent = sent_to(fake, "openai", "/chat/completions")[-1]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["city", "degrees"]


def test_a_conversation_continues_on_another_wire_with_its_reasoning_intact(responses_wire, fake, client):
    first = client.responses.create(model=CLAUDE, tools=[WEATHER], reasoning={"effort": "low"},
                                    input="call get_weather for Oslo")
    thinking = next(i for i in first.output if i.type == "reasoning")
    call = next(i for i in first.output if i.type == "function_call")
    assert thinking.summary[0].text == "Thinking about: call get_weather for Oslo" and thinking.encrypted_content
    signature = sent = None
    # Turn 2 on OpenAI's Responses wire: it gets the whole conversation, the tool call and its output.
    second = client.responses.create(
        model=GPT, tools=[WEATHER], previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "Cold"}])
    assert second.output_text == "Tool get_weather said: Cold"
    assert second.model == "openai/gpt-5-mini" and second.previous_response_id == first.id
    sent = sent_to(fake, "openai", "/v1/responses")[-1]
    kinds = [i.get("type", "message") for i in sent["input"]]
    assert kinds == ["message", "function_call", "function_call_output"]  # Anthropic's reasoning is not OpenAI's
    assert sent["input"][1]["call_id"] == call.call_id
    # Turn 3 back on Anthropic: its signed thinking block from turn 1 goes back as it was (the fake checks it).
    third = client.responses.create(model=CLAUDE, tools=[WEATHER], reasoning={"effort": "low"},
                                    previous_response_id=second.id, input="Thanks")
    assert third.status == "completed"
    sent = sent_to(fake, "anthropic", "/v1/messages")[-1]
    replayed = sent["messages"][1]["content"][0]
    signature = replayed.get("signature")
    assert replayed["type"] == "thinking" and replayed["thinking"] == thinking.summary[0].text and signature
    first_sent = fake.requests("anthropic")[0]
    assert first_sent.json["messages"][0]["content"] in ("call get_weather for Oslo",
                                                         [{"type": "text", "text": "call get_weather for Oslo"}])


def test_retrieve_delete_and_input_items_belong_to_the_key_that_made_them(momor, fake, client):
    made = client.responses.create(model=CLAUDE, input=[
        {"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hello there"}])
    assert client.responses.retrieve(made.id).output_text == "Echo: Hello there"
    raw_list = momor.get(f"/v1/responses/{made.id}/input_items").json()
    ResponseItemList.model_validate(raw_list)  # strictly as the SDK types it
    listed = client.responses.input_items.list(made.id, order="asc")
    assert [i.role for i in listed.data] == ["developer", "user"]
    assert listed.data[1].content[0].text == "Hello there" and listed.data[1].id
    other_key, _ = apikeys.create_api_key("someone else")
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=other_key, max_retries=0) as other:
        for attempt in (lambda: other.responses.retrieve(made.id), lambda: other.responses.delete(made.id),
                        lambda: other.responses.input_items.list(made.id)):
            with pytest.raises(openai.NotFoundError):
                attempt()
        with pytest.raises(openai.BadRequestError):
            other.responses.create(model=CLAUDE, input="Go on", previous_response_id=made.id)
    client.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)


def test_store_false_keeps_nothing(momor, fake, client):
    made = client.responses.create(model=CLAUDE, input="Hello there", store=False)
    assert made.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model=CLAUDE, input="Go on", previous_response_id=made.id)


def test_failover_and_the_record(momor, fake, client):
    fake.script("flaky", *RETRIED_503)
    raw = client.responses.with_raw_response.create(model="duo", input="Hello there")
    answer = raw.parse()
    assert answer.output_text == "Echo: Hello there" and answer.model == "momor/duo"
    assert raw.headers["x-momor-provider"] == "backup" and raw.headers["x-momor-model"] == "momor/duo"
    record = record_of(momor, raw.headers["x-momor-request-id"])
    assert [a["provider"] for a in record["attempts"]][-1] == "backup"
    assert record["served"]["provider"] == "backup" and record["finishReason"] is not None


# --- passthrough: an offering on OpenAI's own Responses wire ------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_passthrough_sends_the_callers_body_and_answers_in_openais_words(responses_wire, fake, client, stream):
    ask = {"model": GPT, "input": "Hello there", "reasoning": {"effort": "low", "summary": "auto"},
           "prompt_cache_key": "team-a", "extra_body": {"provider": {"order": ["openai"]}}}
    if stream:
        with client.responses.stream(**ask) as events:
            seen = list(events)
            answer = events.get_final_response()
        assert [e.type for e in seen][:2] == ["response.created", "response.in_progress"]
        assert "response.reasoning_summary_text.delta" in [e.type for e in seen]
    else:
        answer = client.responses.create(**ask)
    assert answer.output_text == "Echo: Hello there" and answer.model == "openai/gpt-5-mini"
    assert answer.id.startswith("resp_") and len(answer.id) == 37  # Momor's id over OpenAI's
    reasoning = next(i for i in answer.output if i.type == "reasoning")
    assert reasoning.id.startswith("rs_") and not reasoning.encrypted_content.startswith("momor1.")  # OpenAI's own
    sent = sent_to(fake, "openai", "/v1/responses")[-1]
    assert sent["prompt_cache_key"] == "team-a" and "provider" not in sent  # as written, Momor's fields off
    assert sent["model"] == "gpt-5-mini-2025-08-07" and sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"] and sent["input"] == "Hello there"
    # The next turn by previous_response_id goes to OpenAI translated, its reasoning replayed (the fake
    # refuses reasoning whose encrypted content is missing or altered under store false).
    second = client.responses.create(model=GPT, input="And again", previous_response_id=answer.id,
                                     reasoning={"effort": "low"})
    assert second.output_text == "Echo: And again"
    replayed = sent_to(fake, "openai", "/v1/responses")[-1]["input"]
    assert replayed[1]["type"] == "reasoning" and replayed[1]["encrypted_content"] == reasoning.encrypted_content


def test_a_built_in_tool_is_refused_where_no_offering_runs_it(momor, fake, client):
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=CLAUDE, input="Search the news", tools=[{"type": "web_search"}])
    assert "web_search" in caught.value.body["message"] and caught.value.body["param"] == "tools"
    assert fake.requests("anthropic") == []


def test_a_built_in_tool_is_planned_and_explained_on_the_responses_wire_only(responses_wire, fake, client):
    """The planner leaves every offering that cannot run a built-in tool out (rule `capability`), so
    the explanation is the route the call then takes, and the record says the same."""
    asked = {"model": GPT, "input": "Search the news", "tools": [{"type": "web_search"}],
             "extra_body": {"models": [GPT, CLAUDE]}}
    explained = client.responses.with_raw_response.create(
        **asked, extra_headers={"X-Momor-Explain": "1"}).http_response.json()
    assert [(c["model"], c["provider"]) for c in explained["candidates"]] == [(GPT, "openai")]
    left = {(o["model"], o["provider"]): o for o in explained["leftOut"]}
    assert left[(CLAUDE, "anthropic")]["rule"] == "capability"
    assert "web_search" in left[(CLAUDE, "anthropic")]["why"]
    assert fake.requests() == []
    # The real call takes that route: the Responses offering is sent the tool in the caller's words,
    # runs it, and Claude is never asked.
    raw = client.responses.with_raw_response.create(**asked)
    assert [i.type for i in raw.parse().output] == ["web_search_call", "message"]
    assert sent_to(fake, "openai", "/v1/responses")[-1]["tools"] == [{"type": "web_search"}]
    assert fake.requests("anthropic") == []
    record = record_of(responses_wire, raw.headers["x-momor-request-id"])
    assert record["plan"]["candidates"] == [f"{GPT}@openai"] and record["plan"]["leftOut"]["capability"] >= 1
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("openai", "ok")]


# --- web search on OpenAI's Responses wire: the call, the citations, the next turn -------------------

ASKED = "What happened in Oslo today"
SEARCH = {"model": GPT, "input": ASKED, "tools": [{"type": "web_search"}], "reasoning": {"effort": "low"},
          "include": ["web_search_call.action.sources"]}


def _searched_and_cited(answer):
    """The answer's search call and its cited text, as the SDK reads them."""
    assert [i.type for i in answer.output] == ["reasoning", "web_search_call", "message"]
    search, message = answer.output[1], answer.output[2]
    assert search.id.startswith("ws_") and search.status == "completed"
    assert search.action.type == "search" and search.action.query == ASKED
    assert [s.type for s in search.action.sources] == ["url", "url"]
    text = answer.output_text
    assert text.startswith(f"Echo: {ASKED} ") and message.content[0].text == text
    [note] = message.content[0].annotations
    assert note.type == "url_citation" and note.title == f"{ASKED} - Example News"
    assert 0 <= note.start_index < note.end_index <= len(text) and note.url in text[note.start_index:note.end_index]
    return search, note


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_web_search_answers_with_its_call_and_citations_and_the_next_turn_replays_them(
        responses_wire, fake, client, stream):
    if stream:
        with client.responses.with_streaming_response.create(**SEARCH, stream=True) as response:
            request_id = response.headers["x-momor-request-id"]
            events = list(response.parse())
        kinds = [e.type for e in events]
        assert [e.sequence_number for e in events] == list(range(len(events)))
        searched = kinds.index("response.web_search_call.in_progress")
        assert kinds[searched - 1:searched + 4] == [
            "response.output_item.added", "response.web_search_call.in_progress",
            "response.web_search_call.searching", "response.web_search_call.completed", "response.output_item.done"]
        noted = kinds.index("response.output_text.annotation.added")
        assert kinds[noted - 1] == "response.output_text.delta" and kinds[noted + 1] == "response.output_text.done"
        assert kinds[-1] == "response.completed"
        answer = events[-1].response
        search, note = _searched_and_cited(answer)
        assert events[searched].item_id == search.id and events[noted].annotation.url == note.url
        assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == answer.output_text
    else:
        raw = client.responses.with_raw_response.create(**SEARCH)
        Response.model_validate(raw.http_response.json())  # strictly as the SDK types it
        request_id, answer = raw.headers["x-momor-request-id"], raw.parse()
        search, note = _searched_and_cited(answer)
    assert answer.id == f"resp_{request_id}" and answer.model == "openai/gpt-5-mini"
    record = record_of(responses_wire, request_id)
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("openai", "ok")]
    assert record["served"]["provider"] == "openai"
    stored = client.responses.retrieve(answer.id)
    assert stored.output[1].id == search.id and stored.output[2].content[0].annotations[0].url == note.url
    # The next turn by previous_response_id: the stored search call goes back to OpenAI right after the
    # reasoning whose encrypted content names it (the fake refuses the reasoning without it), and the
    # answer's citation with its text.
    second = client.responses.create(model=GPT, input="And tomorrow", previous_response_id=answer.id,
                                     reasoning={"effort": "low"})
    assert second.output_text == "Echo: And tomorrow" and second.previous_response_id == answer.id
    replayed = sent_to(fake, "openai", "/v1/responses")[-1]["input"]
    assert [i.get("type", "message") for i in replayed] == ["message", "reasoning", "web_search_call", "message",
                                                           "message"]
    assert replayed[2] == search.model_dump(exclude_none=True)
    assert replayed[3]["content"][0]["annotations"] == [note.model_dump()]
    assert replayed[3]["content"][0]["text"] == answer.output_text
    # A third turn searches again, the tool as the caller wrote it, the stored turns as OpenAI wrote them.
    third = client.responses.create(model=GPT, input="And next week", previous_response_id=second.id,
                                    tools=[{"type": "web_search", "search_context_size": "low"}],
                                    instructions="Cite.", reasoning={"effort": "low"})
    assert [i.type for i in third.output] == ["reasoning", "web_search_call", "message"]
    assert third.output[1].action.query == "And next week" and third.previous_response_id == second.id
    assert third.output[2].content[0].annotations[0].type == "url_citation"
    sent = sent_to(fake, "openai", "/v1/responses")[-1]
    assert sent["tools"] == [{"type": "web_search", "search_context_size": "low"}]
    assert sent["instructions"] == "Cite." and "previous_response_id" not in sent
    assert [i.get("type", "message") for i in sent["input"]] == [
        "message", "reasoning", "web_search_call", "message", "message", "reasoning", "message", "message"]
    assert sent["input"][2] == search.model_dump(exclude_none=True) and sent["input"][-1]["content"] == "And next week"
    assert client.responses.retrieve(third.id).output[1].id == third.output[1].id
    # And on to Claude: the searches stay OpenAI's (no tool runs there), the cited text goes as said.
    fourth = client.responses.create(model=CLAUDE, input="Thanks", previous_response_id=third.id)
    assert fourth.output_text == "Echo: Thanks"
    said = [m for m in sent_to(fake, "anthropic", "/v1/messages")[-1]["messages"] if m["role"] == "assistant"]
    assert third.output_text in json.dumps([m["content"] for m in said])


def test_a_built_in_tools_item_written_in_the_input_is_refused_with_previous_response_id(responses_wire, fake,
                                                                                         client):
    first = client.responses.create(model=GPT, input=ASKED, tools=[{"type": "web_search"}])
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=GPT, previous_response_id=first.id, tools=[{"type": "web_search"}], input=[
            first.output[0].model_dump(exclude_none=True), {"role": "user", "content": "And tomorrow"}])
    assert "web_search_call" in caught.value.body["message"] and caught.value.body["param"] == "input"
    assert len(sent_to(fake, "openai", "/v1/responses")) == 1


# --- streams that fail, fail over, and items replayed by hand -------------------------------------------


def test_a_stream_that_fails_after_output_ends_failed_and_is_not_stored(momor, fake, client):
    fake.script("anthropic", cut(after=4))
    response, frames = momor.stream("/v1/responses", {"model": CLAUDE, "input": "say a few words please",
                                                      "stream": True})
    assert response.status_code == 200
    events = [d for _, d in frames]
    assert [e["type"] for e in events][:2] == ["response.created", "response.in_progress"]
    assert events[-1]["type"] == "response.failed" and events[-1]["response"]["status"] == "failed"
    assert events[-1]["response"]["error"]["message"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [name for name, _ in frames] == [e["type"] for e in events]  # each event named as OpenAI names it
    assert not any(e["type"] == "response.completed" for e in events)
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert record["attempts"][-1]["status"] == "failed"
    assert len(fake.requests()) == 1  # never moved to another provider once output began
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(events[0]["response"]["id"])


def test_a_stream_fails_over_before_output(momor, fake, client):
    fake.script("flaky", *RETRIED_503)
    with client.responses.with_streaming_response.create(model="duo", input="hi", stream=True) as response:
        assert response.headers["x-momor-provider"] == "backup"
        events = list(response.parse())
    assert events[-1].type == "response.completed" and events[-1].response.output_text == "Echo: hi"
    record = record_of(momor, response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("flaky", "failed")] * 3 + [("backup", "ok")]


def test_reasoning_replayed_by_hand_with_store_false_keeps_its_state(momor, fake, client):
    """The Agents SDK's way: every output item sent back as input; the state rides in encrypted_content."""
    first = client.responses.create(model=CLAUDE, tools=[WEATHER], reasoning={"effort": "low"}, store=False,
                                    input="call get_weather for Oslo")
    call = next(i for i in first.output if i.type == "function_call")
    replay = [{"role": "user", "content": "call get_weather for Oslo"},
              *[i.model_dump(exclude_none=True) for i in first.output],
              {"type": "function_call_output", "call_id": call.call_id, "output": "Cold"}]
    second = client.responses.create(model=CLAUDE, tools=[WEATHER], reasoning={"effort": "low"}, store=False,
                                     input=replay)
    assert second.output_text == "Tool get_weather said: Cold"  # the fake refuses a thinking block it did not sign
    _, second_sent = sent_to(fake, "anthropic", "/v1/messages")
    replayed = second_sent["messages"][1]["content"]
    assert [b["type"] for b in replayed] == ["thinking", "tool_use"] and replayed[0]["signature"]


def test_an_item_reference_and_a_reasoning_item_without_its_state_are_found_in_the_store(momor, fake, client):
    first = client.responses.create(model=CLAUDE, tools=[WEATHER], reasoning={"effort": "low"},
                                    input="call get_weather for Oslo")
    thinking = next(i for i in first.output if i.type == "reasoning")
    call = next(i for i in first.output if i.type == "function_call")
    asked = client.responses.input_items.list(first.id).data[0]
    second = client.responses.create(model=CLAUDE, tools=[WEATHER], reasoning={"effort": "low"}, input=[
        {"type": "item_reference", "id": asked.id},
        {"type": "reasoning", "id": thinking.id, "summary": []},  # sent back without include's state
        {"type": "item_reference", "id": call.id},
        {"type": "function_call_output", "call_id": call.call_id, "output": "Cold"}])
    assert second.output_text == "Tool get_weather said: Cold"
    sent = sent_to(fake, "anthropic", "/v1/messages")[-1]["messages"]
    assert sent[0]["content"] in ("call get_weather for Oslo", [{"type": "text", "text": "call get_weather for Oslo"}])
    assert [b["type"] for b in sent[1]["content"]] == ["thinking", "tool_use"] and sent[1]["content"][0]["signature"]
    listed = client.responses.input_items.list(second.id, order="asc").data
    assert [i.type for i in listed] == ["message", "reasoning", "function_call", "function_call_output"]
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=CLAUDE, input=[{"type": "item_reference", "id": "msg_" + "0" * 32 + "_i0"}])
    assert "not found" in caught.value.body["message"]


def test_input_items_pages_and_a_read_needs_a_key(momor, fake, client):
    made = client.responses.create(model=CLAUDE, input=[{"role": "user", "content": f"part {n}"} for n in range(5)])
    page = client.responses.input_items.list(made.id, limit=2)
    assert [i.content[0].text for i in page.data] == ["part 4", "part 3"] and page.has_more
    assert [i.content[0].text for i in page.iter_pages().__next__().data] == ["part 4", "part 3"]
    every = [i.content[0].text for i in client.responses.input_items.list(made.id, limit=2, order="asc")]
    assert every == [f"part {n}" for n in range(5)]  # the SDK follows `after` through the pages
    assert momor.get(f"/v1/responses/{made.id}", api_key="wrong").status_code == 401
    assert momor.get(f"/v1/responses/{made.id}", api_key="wrong").json()["error"]["type"]
    assert momor.get(f"/v1/responses/{made.id}/input_items?limit=0").status_code == 400
