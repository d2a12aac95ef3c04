"""POST /models end to end: Momor over HTTP, fake providers on their real wires, records in DynamoDB Local."""

from __future__ import annotations

import json

import pytest

from momor.config import reset_config
from tests.fakes.script import cut, fail, hang, reply, stall

from .conftest import SAVED_KEYS

pytestmark = pytest.mark.emulators

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def _with_file(file):
    return {"type": "user", "value": "see", "files": [file]}


def body(text="Hello there", model="gpt-5-mini", **extra):
    return {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": text}], "model": model, **extra}


def problem(response, status):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert len(response.headers["x-momor-request-id"]) == 32
    doc = response.json()
    assert doc["status"] == status and doc["detail"]
    return doc


# --- answers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "provider"), [("gpt-5-mini", "openai"), ("claude-sonnet-4-5", "anthropic")])
def test_buffered_answer_in_monolith_shape(momor, fake, model, provider):
    response = momor.post("/models", body(model=model))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["type"] == "monolith"
    assert answer["model"]["name"] == model and answer["model"]["provider"] == provider
    assert answer["messages"] == [{"type": "content", "value": "Echo: Hello there"}]
    assert answer["usage"]["provider"] == provider and answer["usage"]["outputTokens"] > 0
    assert answer["finishReason"] in ("stop", "end_turn")
    sent = fake.requests(provider)[-1].json
    assert sent["model"] == next(
        o["id"] for m in momor.catalog["models"] if m["name"] == model for o in m["offerings"])
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["served"]["model"] == model and record["status"] == 200
    assert [a["status"] for a in record["attempts"]] == ["ok"]
    assert record["cost"] > 0


@pytest.mark.parametrize("model", ["gpt-5-mini", "claude-sonnet-4-5"])
def test_streamed_answer_frames(momor, fake, model):
    fake.script("openai" if model == "gpt-5-mini" else "anthropic", reply(text="one two three", chunks=3))
    response, frames = momor.stream("/models", body(model=model, streaming=True))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    kinds = [event for event, _ in frames]
    assert kinds[0] == "start" and kinds[-1] == "end"
    deltas = [d["value"] for e, d in frames if e == "delta"]
    assert len(deltas) == 3 and "".join(deltas) == "one two three"
    messages = [d["message"] for e, d in frames if e == "message"]
    assert messages == [{"type": "content", "value": "one two three"}]
    assert frames[0][1]["model"]["name"] == model
    assert frames[-1][1]["usage"]["outputTokens"] > 0
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["streaming"] is True and record["finishReason"]


def _round_trip(momor, model, conversation):
    """user asks -> toolCall -> toolResult -> content, returning the conversation so far."""
    first = momor.post("/models", {"systemPrompt": "Use tools.", "messages": conversation, "model": model,
                                   "tools": [WEATHER]})
    assert first.status_code == 200, first.text
    calls = [m for m in first.json()["messages"] if m["type"] == "toolCall"]
    assert calls and calls[0]["call"]["name"] == "get_weather"
    assert json.loads(calls[0]["call"]["arguments"])
    conversation = conversation + first.json()["messages"]
    conversation.append({"type": "toolResult", "result": {"id": calls[0]["call"]["id"], "name": "get_weather",
                                                          "content": "Sunny, 21C"}})
    second = momor.post("/models", {"systemPrompt": "Use tools.", "messages": conversation, "model": model,
                                    "tools": [WEATHER]})
    assert second.status_code == 200, second.text
    assert second.json()["messages"][-1] == {"type": "content", "value": "Tool get_weather said: Sunny, 21C"}
    return conversation + second.json()["messages"]


def test_tool_round_trip_on_each_wire_and_continued_across_them(momor, fake):
    start = [{"type": "user", "value": "call get_weather for Paris"}]
    on_openai = _round_trip(momor, "gpt-5-mini", start)
    # The same conversation, continued on the other wire: its tool call and result must translate.
    continued = _round_trip(momor, "claude-sonnet-4-5",
                            [*on_openai, {"type": "user", "value": "call get_weather for Rome"}])
    sent = fake.requests("anthropic")[-1].json
    kinds = [[b["type"] for b in m["content"]] if isinstance(m["content"], list) else ["text"]
             for m in sent["messages"]]
    assert ["tool_use"] in kinds and ["tool_result"] in kinds
    assert continued[-1]["type"] == "content"


def test_thinking_replayed_with_signature_across_turns(momor, fake):
    conversation = [{"type": "user", "value": "call get_weather for Oslo"}]
    params = {"reasoningEffort": "low", "maxTokens": 4000}
    first = momor.post("/models", {"systemPrompt": "", "messages": conversation, "model": "claude-sonnet-4-5",
                                   "tools": [WEATHER], "parameters": params})
    assert first.status_code == 200, first.text
    out = first.json()["messages"]
    assert out[0]["type"] == "thinking" and out[0]["data"]["signature"]
    call = next(m for m in out if m["type"] == "toolCall")
    conversation += [*out, {"type": "toolResult", "result": {"id": call["call"]["id"], "content": "Cold"}}]
    second = momor.post("/models", {"systemPrompt": "", "messages": conversation, "model": "claude-sonnet-4-5",
                                    "tools": [WEATHER], "parameters": params})
    # The strict fake refuses a dropped or altered thinking block: a 200 proves it went back intact.
    assert second.status_code == 200, second.text
    replayed = fake.requests("anthropic")[-1].json["messages"][1]["content"][0]
    assert replayed["type"] == "thinking" and replayed["signature"] == out[0]["data"]["signature"]


# --- failover and keys ------------------------------------------------------------------------------


def test_a_passing_503_is_retried_on_the_same_offering(momor, fake):
    fake.script("flaky", fail(503))
    response = momor.post("/models", body(model="duo"))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] == "flaky"
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"], a["httpStatus"]) for a in record["attempts"]] == [
        ("flaky", "failed", 503), ("flaky", "ok", 200)]


def test_503_before_output_fails_over_and_every_attempt_is_recorded(momor, fake):
    fake.script("flaky", fail(503), fail(503), fail(503))
    response = momor.post("/models", body(model="duo"))
    assert response.status_code == 200, response.text
    assert response.json()["model"]["provider"] == "backup"
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"], a["httpStatus"]) for a in record["attempts"]] == [
        ("flaky", "failed", 503), ("flaky", "failed", 503), ("flaky", "failed", 503), ("backup", "ok", 200)]
    assert record["served"]["provider"] == "backup"
    assert record["attempts"][0]["cost"] == 0
    assert len(fake.requests("flaky")) == 3 and len(fake.requests("backup")) == 1


def test_a_refused_request_fails_over_without_retrying(momor, fake):
    fake.script("flaky", fail(400))
    response = momor.post("/models", body(model="duo"))
    assert response.json()["model"]["provider"] == "backup"
    assert len(fake.requests("flaky")) == 1


def test_streamed_503_before_output_fails_over(momor, fake):
    fake.script("flaky", fail(503), fail(503), fail(503))
    _, frames = momor.stream("/models", body(model="duo", streaming=True))
    assert frames[0][1]["model"]["provider"] == "backup"
    assert frames[-1][0] == "end"


def test_every_candidate_failing_is_a_problem_saying_why(momor, fake):
    fake.script("flaky", fail(503), fail(503), fail(503))
    fake.script("backup", fail(429, headers={"retry-after": "70"}))  # longer than Momor waits: fail over
    response = momor.post("/models", body(model="duo"))
    doc = problem(response, 502)
    assert "flaky" in doc["detail"] and "backup" in doc["detail"] and "429" in doc["detail"]


def test_failed_call_leaves_a_record(momor, fake):
    fake.script("flaky", *[fail(500)] * 3)
    fake.script("backup", *[fail(500)] * 3)
    response = momor.post("/models", body(model="duo"))
    assert response.status_code == 502
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["status"] == 502 and record["served"] is None
    assert [a["status"] for a in record["attempts"]] == ["failed"] * 6


def test_per_call_key_overrides_the_saved_key_and_is_never_recorded(momor, fake):
    per_call = "sk-per-call-secret-9999"
    response = momor.post("/models", body(keys={"openai": per_call}))
    assert response.status_code == 200
    assert fake.requests("openai")[-1].headers["authorization"] == f"Bearer {per_call}"
    record_text = json.dumps(momor.record(response.headers["x-momor-request-id"]))
    assert per_call not in record_text and SAVED_KEYS["openai"] not in record_text
    assert '"keySource": "call"' in record_text


def test_saved_key_is_used_when_none_is_sent(momor, fake):
    momor.post("/models", body())
    assert fake.requests("openai")[-1].headers["authorization"] == f"Bearer {SAVED_KEYS['openai']}"


def test_zdr_serves_only_on_covered_keys(momor, fake):
    # anthropic's saved key is marked zdr; openai's is not, and per-call keys never count.
    doc = problem(momor.post("/models", body(prioritization={"zdr": True})), 503)
    assert "zero data retention" in doc["detail"]
    ok = momor.post("/models", body(model="claude-sonnet-4-5", prioritization={"zdr": True},
                                    keys={"anthropic": "sk-per-call"}))
    assert ok.status_code == 200
    assert fake.requests("anthropic")[-1].headers["x-api-key"] == SAVED_KEYS["anthropic"]["key"]


def test_records_are_readable_only_by_the_key_that_made_the_call(momor):
    from momor.store import apikeys

    response = momor.post("/models", body())
    request_id = response.headers["x-momor-request-id"]
    other, _ = apikeys.create_api_key("someone else")
    assert momor.get(f"/generations/{request_id}", api_key=other).status_code == 404
    assert momor.get("/generations/does-not-exist").status_code == 404
    assert momor.get(f"/generations/{request_id}", api_key="momor-wrong").status_code == 401


# --- refusals ---------------------------------------------------------------------------------------


def test_401_without_or_with_a_wrong_key(momor):
    problem(momor.post("/models", body(), headers={"Content-Type": "application/json"}), 401)
    problem(momor.post("/models", body(), headers={"Authorization": "Bearer nope",
                                                    "Content-Type": "application/json"}), 401)


def test_415_for_another_content_type(momor):
    problem(momor.post("/models", content=b"hello", headers=momor.headers(**{"Content-Type": "text/plain"})), 415)


def test_406_when_accept_allows_neither_json_nor_sse(momor):
    problem(momor.post("/models", body(), headers=momor.headers(Accept="text/html")), 406)
    assert momor.post("/models", body(), headers=momor.headers(Accept="text/event-stream")).status_code == 200


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({"systemPrompt": "", "messages": []}).encode(), "at least one message"),
        (json.dumps({"systemPrompt": "", "messages": [{"type": "user", "value": "x"}] * 257}).encode(),
         "at most 256"),
        (json.dumps({**body(), "models": ["gpt-5-mini"]}).encode(), "model or models"),
        (json.dumps(body(prioritization={"order": ["nowhere"]})).encode(), "nowhere"),
        (json.dumps({"messages": [{"type": "user", "value": "x"}]}).encode(), "systemPrompt"),
        (json.dumps(body(messages=[{"type": "robot"}])).encode(), "messages"),
        (json.dumps(body(model="no-such-model")).encode(), "no-such-model"),
        (json.dumps(body(tools=[WEATHER, WEATHER])).encode(), "unique"),
        # Seed 000: responseSchema needs a model whose structuredOutput is jsonSchema (issue 10: 34).
        (json.dumps(body(model="duo", responseSchema={"type": "object"})).encode(), "structuredOutput"),
        # Seed 000: a tool's description and parameters are required (issue 10: 35).
        (json.dumps(body(tools=[{"name": "f", "parameters": {"type": "object"}}])).encode(),
         "tools[0].description is required"),
        (json.dumps(body(tools=[WEATHER, {"name": "g", "description": "G."}])).encode(),
         "tools[1].parameters is required"),
        (json.dumps(body(parameters={"temprature": 0.5})).encode(), "parameters.temprature"),
        (json.dumps(body(parameters={"networkTimeout": "soon"})).encode(), "parameters.networkTimeout"),
        # Longer than any date Python holds: a 400 naming the field, not a 500 (issue 10: 23).
        (json.dumps(body(prioritization={"maxAge": "P9999999999Y"})).encode(), "prioritization.maxAge"),
        (json.dumps(body(parameters={"networkTimeout": "PT99999999999999999999S"})).encode(),
         "parameters.networkTimeout"),
        (json.dumps(body(parameters={"networkTimeout": "9999999999.00:00:00"})).encode(),
         "parameters.networkTimeout"),
        # Issue 22, rows without a test: networkTimeout's bounds (longer than zero, at most 100 s, in
        # either notation), a handle where an address belongs, a file without its name or media
        # type, and more than 128 tools.
        (json.dumps(body(parameters={"networkTimeout": "PT0S"})).encode(), "longer than zero"),
        (json.dumps(body(parameters={"networkTimeout": "PT100.5S"})).encode(), "at most 100 seconds"),
        (json.dumps(body(parameters={"networkTimeout": "00:01:41"})).encode(), "at most 100 seconds"),
        (json.dumps(body(messages=[_with_file({"type": "url", "value": "file-abc123", "name": "a.pdf",
                                                "contentType": "application/pdf"})])).encode(), "handles are refused"),
        (json.dumps(body(messages=[_with_file({"type": "bytes", "value": "aGk=",
                                                "contentType": "text/plain"})])).encode(), "files.0.name"),
        (json.dumps(body(messages=[_with_file({"type": "bytes", "value": "aGk=", "name": "a.txt"})])).encode(),
         "files.0.contentType"),
        (json.dumps(body(tools=[{**WEATHER, "name": f"tool_{i}"} for i in range(129)])).encode(), "at most 128"),
    ],
)
def test_400s_are_problem_documents(momor, payload, fragment):
    doc = problem(momor.post("/models", content=payload), 400)
    assert fragment in doc["detail"]


def test_parameter_values_are_not_checked(momor, fake):
    """Seed 000: values are not checked, they reach the provider as written (issue 22): `max` on a
    model that lists it goes as `max`, not as the nearest depth Momor knows. serviceTier takes
    Momor's words only: any other is left off everywhere."""
    response = momor.post("/models", body(model="deepseek-v4-flash", parameters={
        "serviceTier": "ultra", "reasoningEffort": "max", "maxTokens": 40}))
    assert response.status_code == 200, response.text
    sent = fake.requests("zen")[-1].json
    assert sent["reasoning_effort"] == "max" and sent["max_tokens"] == 40 and "service_tier" not in sent


def test_a_value_momor_cannot_read_reaches_the_provider_whose_refusal_moves_the_call_on(momor, fake):
    """maxTokens 0 is not "no ceiling": the provider gets it, and refuses it (a 400, as written)."""
    doc = problem(momor.post("/models", body(parameters={"maxTokens": 0})), 400)
    assert fake.requests("openai")[-1].json["max_completion_tokens"] == 0 and "max_completion_tokens" in doc["detail"]
    # A value of a type no canonical field holds goes as written too; refused, the next candidate serves.
    two = {k: v for k, v in body(parameters={"logprobs": "sometimes"}).items() if k != "model"}
    response = momor.post("/models", {**two, "models": ["gpt-5-mini", "llama-3.3-70b"]})
    assert response.status_code == 200, response.text
    assert fake.requests("openai")[-1].json["logprobs"] == "sometimes"
    assert response.json()["model"]["provider"] == "deepinfra"  # it does not honour logprobs: left off there
    assert "logprobs" not in fake.requests("deepinfra")[-1].json
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("openai", "failed"), ("deepinfra", "ok")]


def _tokens(logprobs):
    return "".join(t["token"] for t in logprobs)


def test_logprobs_come_back_in_the_answer_and_the_stream_frames(momor, fake):
    """Seed 000 `logprobs`/`topLogprobs`: sent, and each answer token's log probability returned."""
    asked = {"logprobs": True, "topLogprobs": 2}
    answer = momor.post("/models", body(parameters=asked)).json()
    sent = fake.requests("openai")[-1].json
    assert sent["logprobs"] is True and sent["top_logprobs"] == 2
    assert _tokens(answer["logprobs"]) == "Echo: Hello there"
    first = answer["logprobs"][0]
    assert first["logprob"] < 0 and first["bytes"] == list(first["token"].encode())
    assert first["topLogprobs"][0]["token"] == first["token"] and len(first["topLogprobs"]) == 2
    _, frames = momor.stream("/models", body("one two", parameters=asked, streaming=True))
    streamed = [t for e, d in frames if e == "logprobs" for t in d["logprobs"]]
    assert _tokens(streamed) == "Echo: one two" and all(len(t["topLogprobs"]) == 2 for t in streamed)
    # Not asked, none come back.
    assert "logprobs" not in momor.post("/models", body()).json()


def test_refusals_leave_a_record(momor):
    response = momor.post("/models", content=b"{not json")
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["status"] == 400 and record["attempts"] == []


def test_oversized_inline_file_is_413(momor):
    import base64

    big = base64.b64encode(b"x" * (10 * 1024 * 1024 + 1)).decode()
    message = {"type": "user", "value": "see", "files": [
        {"type": "bytes", "value": big, "name": "a.pdf", "contentType": "application/pdf"}]}
    doc = problem(momor.post("/models", {"systemPrompt": "", "messages": [message]}), 413)
    assert "10 MiB" in doc["detail"]


def test_inline_files_may_be_at_most_20_mib_together(momor):
    """Seed 000: 10 MiB each and 20 MiB together (issue 22: the total had no test)."""
    import base64

    seven = base64.b64encode(b"x" * (7 * 1024 * 1024)).decode()
    files = [{"type": "bytes", "value": seven, "name": f"{n}.pdf", "contentType": "application/pdf"} for n in range(3)]
    doc = problem(momor.post("/models", body(messages=[{"type": "user", "value": "see", "files": files}])), 413)
    assert "20 MiB together" in doc["detail"]


def test_the_schemas_may_be_at_most_256_kib_together(momor, fake):
    """Seed 000: the serialized schemas, tools' and responseSchema together, at most 256 KiB."""
    wide = {"type": "object", "properties": {f"field_{n:05d}": {"type": "string"} for n in range(5000)}}
    assert 130 * 1024 < len(json.dumps(wide, separators=(",", ":"))) < 256 * 1024  # as Momor measures it
    tool = {**WEATHER, "parameters": wide}
    assert momor.post("/models", body(tools=[tool])).status_code == 200  # one is within the limit
    doc = problem(momor.post("/models", body(tools=[tool, {**tool, "name": "other"}])), 413)
    assert "256 KiB" in doc["detail"]
    doc = problem(momor.post("/models", body(model="gpt-4.1-mini", tools=[tool], responseSchema=wide)), 413)
    assert "256 KiB" in doc["detail"]


def test_network_timeout_only_shortens_the_wait(momor, fake):
    """Seed 000: networkTimeout bounds each network operation (here the wait for a buffered answer)
    and only ever shortens it: a provider silent past it fails over; within it, it serves."""
    fake.script("flaky", hang(3))
    response = momor.post("/models", body(model="duo", parameters={"networkTimeout": "PT0.5S"}))
    assert response.status_code == 200 and response.json()["model"]["provider"] == "backup"
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("flaky", "failed"), ("backup", "ok")]
    assert record["attempts"][0]["latencyMs"] < 2500
    fake.script("flaky", hang(0.3))
    response = momor.post("/models", body(model="duo", parameters={"networkTimeout": "00:00:05"}))
    assert response.status_code == 200 and response.json()["model"]["provider"] == "flaky"


def test_network_timeout_on_anthropic_bounds_the_wait_for_the_reply_to_begin(momor, fake):
    """Seed 000: "on Anthropic it bounds the wait for the reply to begin". An Anthropic offering
    silent past it before its reply begins fails over; a silence mid-stream, once the reply has
    begun, is the idle timeout's to judge (60 s here), not networkTimeout's."""
    timeout = {"networkTimeout": "PT1S"}
    fake.script("anthropic", stall(after=3, seconds=2))
    response, frames = momor.stream("/models", body(model="claude-sonnet-4-5", streaming=True, parameters=timeout))
    assert response.status_code == 200
    assert frames[-1][0] == "end", frames[-1]
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("anthropic", "ok")]
    # Before the reply begins: the wait is bounded (backup is duo's Anthropic offering, asked first).
    fake.script("backup", hang(3))
    first = {"order": ["backup"], "hedge": False}
    response = momor.post("/models", body(model="duo", parameters=timeout, prioritization=first))
    assert response.status_code == 200 and response.json()["model"]["provider"] == "flaky"
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("backup", "failed"), ("flaky", "ok")]
    assert record["attempts"][0]["error"] == "timeout: The provider did not begin its answer within 1 s."


def test_network_timeout_elsewhere_bounds_each_read_of_a_stream(momor, fake):
    """Any other wire: "the longest one network operation of the call may take", a read included."""
    fake.script("openai", stall(after=3, seconds=2))
    response, frames = momor.stream("/models", body(streaming=True, parameters={"networkTimeout": "PT0.5S"}))
    assert response.status_code == 200 and frames[-1][0] == "error", frames[-1]


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "stream"])
def test_cache_writes_are_priced_by_the_lifetime_anthropic_reported(momor, fake, streaming):
    """Seed 000's Prompt caching: a five-minute write is billed at 1.25 times the input price and an
    hour's at twice it. Anthropic reports the two apart (`usage.cache_creation`); the record keeps
    the hour-long part (`cacheWrite1hTokens`) and prices each at the catalog's price for it."""
    usage = {"input_tokens": 5_000, "output_tokens": 100, "cache_write_tokens": 4_000, "cache_write_1h_tokens": 3_000}
    fake.script("anthropic", reply(text="Cached.", usage=usage))
    request = body(model="claude-sonnet-4-5", streaming=streaming)
    if streaming:
        response, frames = momor.stream("/models", request)
        assert frames[-1][0] == "end", frames
    else:
        response = momor.post("/models", request)
        assert response.status_code == 200, response.text
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["usage"]["cacheWriteTokens"] == 4_000 and record["usage"]["cacheWrite1hTokens"] == 3_000
    # 1,000 fresh input at 3, 1,000 five-minute writes at 3.75, 3,000 hour-long ones at 6, 100 output at 15
    assert record["cost"] == pytest.approx((1_000 * 3 + 1_000 * 3.75 + 3_000 * 6 + 100 * 15) / 1e6)


def test_aliases_answer_the_same(momor):
    for path in ("/models/chat", "/models/two"):
        assert momor.post(path, body()).json()["messages"][0]["value"] == "Echo: Hello there"


# --- streams that fail after output -----------------------------------------------------------------


def test_a_stream_cut_after_output_ends_with_an_error_frame_by_default(momor, fake):
    fake.script("flaky", cut(after=4))
    response, frames = momor.stream("/models", body(model="duo", streaming=True))
    assert response.status_code == 200
    kinds = [e for e, _ in frames]
    assert "delta" in kinds and kinds[-1] == "error" and "end" not in kinds
    assert frames[-1][1]["status"] == 502
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["attempts"][0]["status"] == "failed" and record["attempts"][0]["delivered"] is True
    assert record["served"]["provider"] == "flaky"  # who delivered what the caller got
    assert record["outcome"] == "failed" and "closed the connection" in record["error"]


def _without_reasoning_depths(momor, model):
    """The model takes `none`, so the call (no reasoningEffort: none) streams text, not reasoning."""
    catalog = dict(momor.catalog)
    catalog["models"] = [{**m, "capabilities": {**m["capabilities"], "reasoning": ["none", "low"]}}
                         if m["name"] == model else m for m in catalog["models"]]
    momor.write_catalog(catalog)


def test_rollover_lets_the_next_candidate_finish_the_answer(momor, fake):
    fake.script("flaky", cut(after=4))
    response, frames = momor.stream(
        "/models", body("one two three four", model="duo", streaming=True, streamFailureBehavior="rollover"))
    kinds = [e for e, _ in frames]
    assert "rollover" in kinds and kinds[-1] == "end", kinds
    switched = dict(frames)["rollover"]
    assert switched["model"]["provider"] == "backup" and switched["reason"]
    before = "".join(d["value"] for e, d in frames[: kinds.index("rollover")] if e == "delta")
    after = "".join(d["value"] for e, d in frames[kinds.index("rollover"):] if e == "delta")
    assert before and after
    # The continuing offering was sent what the caller already had, as a prefill to continue.
    prefill = fake.requests("backup")[-1].json["messages"][-1]
    assert prefill["role"] == "assistant"
    sent_text = prefill["content"] if isinstance(prefill["content"], str) else prefill["content"][0]["text"]
    assert sent_text == before.rstrip()
    # One message, continued: the caller's conversation gets the whole text once.
    messages = [d["message"] for e, d in frames if e == "message"]
    assert messages == [{"type": "content", "value": before + after}]
    assert before + after == "Echo: one two three four"  # joined as one provider would have sent it
    record = momor.record(response.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("flaky", "failed"), ("backup", "ok")]
    assert record["served"]["provider"] == "backup"


def test_after_a_rollover_the_end_frame_reports_the_served_providers_own_usage(momor, fake):
    """Issue 22: the end frame added Momor's estimate for the cut attempt, unmarked, under the last
    provider's name. It is the serving provider's own count; the estimate stays on the record, marked."""
    fake.script("flaky", cut(after=4))  # cut before its usage chunk: Momor estimates what it billed
    response, frames = momor.stream(
        "/models", body("one two three four", model="duo", streaming=True, streamFailureBehavior="rollover"))
    assert frames[-1][0] == "end", frames[-1]
    end = frames[-1][1]["usage"]
    record = momor.record(response.headers["x-momor-request-id"])
    cut_off, served = record["attempts"]
    assert cut_off["usage"]["estimated"] is True and "estimated" not in served["usage"]
    assert end["provider"] == "backup" and "estimated" not in end
    own = served["usage"]
    assert (end["inputTokens"], end["outputTokens"]) == (own["inputTokens"], own["outputTokens"])
    assert record["usage"]["estimated"] is True  # the call's usage sums both, the estimate included


def test_leaving_reasoning_effort_out_asks_each_provider_not_to_reason(momor, fake):
    """Seed 000: none, also what leaving it out sends, asks the model not to reason (issue 10: 33)."""
    assert momor.post("/models", body()).status_code == 200
    assert fake.requests("openai")[-1].json["reasoning_effort"] == "minimal"  # gpt-5-mini has no off
    assert momor.post("/models", body(parameters={"reasoningEffort": "none"})).status_code == 200
    assert fake.requests("openai")[-1].json["reasoning_effort"] == "minimal"
    _without_reasoning_depths(momor, "gpt-5-mini")
    assert momor.post("/models", body()).status_code == 200
    assert fake.requests("openai")[-1].json["reasoning_effort"] == "none"
    assert momor.post("/models", body(model="claude-sonnet-4-5")).status_code == 200
    assert "thinking" not in fake.requests("anthropic")[-1].json


def test_rollover_without_a_candidate_that_takes_a_prefill_ends_with_an_error(momor, fake):
    fake.script("openai", cut(after=4))
    _, frames = momor.stream("/models", body(streaming=True, streamFailureBehavior="rollover"))
    assert frames[-1][0] == "error"


# --- rate limits ------------------------------------------------------------------------------------


def test_rate_limit_headers_on_every_answer_and_429_past_the_limit(momor, fake, monkeypatch):
    monkeypatch.setenv("MOMOR_RATE_LIMIT", "3")
    monkeypatch.setenv("MOMOR_RATE_WINDOW_S", "3600")  # one window for the whole test
    reset_config()  # the configuration is read once per process, as on Lambda
    ok = momor.post("/models", body())
    refused = momor.post("/models", content=b"{not json")  # a refusal counts and is told too
    assert (ok.status_code, refused.status_code) == (200, 400)
    for response, remaining in ((ok, "2"), (refused, "1")):
        assert response.headers["x-ratelimit-limit"] == "3"
        assert response.headers["x-ratelimit-remaining"] == remaining
        assert 0 < int(response.headers["x-ratelimit-reset"]) <= 3600
    streamed, frames = momor.stream("/models", body(streaming=True))
    assert frames[-1][0] == "end" and streamed.headers["x-ratelimit-remaining"] == "0"
    over = momor.post("/models", body())
    doc = problem(over, 429)
    assert "Rate limit" in doc["detail"] and int(over.headers["retry-after"]) > 0
    assert over.headers["x-ratelimit-remaining"] == "0"
    assert len(fake.requests("openai")) == 2  # the refused call never reached a provider
    record = momor.record(over.headers["x-momor-request-id"])
    assert record["status"] == 429 and record["attempts"] == []


# --- found by fuzzing -------------------------------------------------------------------------------


def test_a_huge_selector_is_refused_and_still_recorded(momor):
    response = momor.post("/models", body(model="m" * 300_000))
    problem(response, 400)
    record = momor.record(response.headers["x-momor-request-id"])  # DynamoDB items hold 400 KB at most
    assert record["status"] == 400 and record["selectors"].endswith("... (cut)")
    assert len(record["selectors"]) < 5000


def test_an_unexpected_failure_answers_in_shape_with_a_record(momor, monkeypatch):
    from momor.api import flow

    def broken(*args, **kwargs):
        raise RuntimeError("a bug with a secret-looking detail sk-never-shown")

    monkeypatch.setattr(flow, "plan", broken)
    response = momor.post("/models", body())
    problem(response, 500)
    assert "sk-never-shown" not in response.text and "Traceback" not in response.text
    assert momor.record(response.headers["x-momor-request-id"])["status"] == 500


# --- rules no test held before (issue 10: tests that cannot fail) ---------------------------------


def test_a_zdr_api_key_holds_every_call_to_zdr(momor, fake):
    """An organization whose key is marked zdr is held to it even when the call says false."""
    from momor.store import apikeys

    plaintext, _ = apikeys.create_api_key("zdr org", zdr=True)
    headers = {"Authorization": f"Bearer {plaintext}", "Content-Type": "application/json"}
    refused = momor.post("/models", body(prioritization={"zdr": False}), headers=headers)
    doc = problem(refused, 503)  # gpt-5-mini's only offering is on openai, whose saved key is not zdr
    assert "zero data retention" in doc["detail"] and fake.requests("openai") == []
    ok = momor.post("/models", body(model="claude-sonnet-4-5", keys={"anthropic": "sk-per-call"}), headers=headers)
    assert ok.status_code == 200  # on the saved zdr key, never the one sent with the call
    assert fake.requests("anthropic")[-1].headers["x-api-key"] == SAVED_KEYS["anthropic"]["key"]
    assert momor.post("/models", body()).status_code == 200  # the same call on a key that is not zdr


def test_a_parameter_reaches_only_providers_whose_catalog_entry_lists_it(momor, fake):
    """Seed 000: an optional parameter goes only to an offering whose catalog entry honours it."""
    params = {"frequencyPenalty": 0.5, "presencePenalty": 0.25, "topK": 5, "temperature": 0.5, "maxTokens": 40}
    response = momor.post("/models", body(model="mistral-small", parameters=params))
    assert response.status_code == 200, response.text
    sent = fake.requests("mistral")[-1].json
    assert sent["max_tokens"] == 40 and sent["temperature"] == 0.5  # mistral lists these
    assert not {"frequency_penalty", "presence_penalty", "top_k"} & set(sent)  # and not these
    del params["topK"]  # deepinfra lists it, but the fake (OpenAI's strictness) refuses top_k
    assert momor.post("/models", body(model="llama-3.3-70b", parameters=params)).status_code == 200
    sent = fake.requests("deepinfra")[-1].json
    assert (sent["frequency_penalty"], sent["presence_penalty"]) == (0.5, 0.25)


def test_the_body_cap_holds_without_a_content_length(momor):
    """A chunked body declares no size: the cap is counted as it arrives."""
    chunk = b" " * (1024 * 1024)

    def chunks():
        yield b'{"systemPrompt": "", "messages": [{"type": "user", "value": "x"}], "pad": "'
        for _ in range(31):
            yield chunk
        yield b'"}'

    import httpx2

    response = httpx2.post(momor.url + "/models", content=chunks(), headers=momor.headers(), timeout=60)
    assert "content-length" not in {k.lower() for k in response.request.headers}
    problem(response, 413)


@pytest.mark.parametrize("accept", ["application/json;q=0", "application/json; q=0, text/event-stream;q=0.0",
                                    "*/*;q=0"])
def test_accept_with_q_zero_refuses_the_type(momor, accept):
    problem(momor.post("/models", body(), headers=momor.headers(Accept=accept)), 406)
    assert momor.post("/models", body(), headers=momor.headers(Accept=accept + ", */*;q=0.1")).status_code == 200
