"""The response cache (issue 36) end to end: the official SDKs over HTTP against Momor, whose cache is a
DynamoDB Local table, in front of the strict fakes.

For each dialect, buffered and streamed: a first call misses, the same call again hits and the fake
receives nothing; an answer first stored by a stream is the same answer whole (and the reverse); a
changed parameter misses, another organization misses, a zdr call never reads or writes; the record
of a hit costs nothing and says what it saved.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from momor.guardrails.policy import parse as parse_policy
from momor.store import apikeys, organizations
from momor.store.organizations import Defaults
from tests.conftest import reset_momor_caches
from tests.fakes.script import fail, reply

pytestmark = [pytest.mark.emulators, pytest.mark.timeout(120)]

GPT = "gpt-5-mini"
CLAUDE = "claude-sonnet-4-5"
USE = {"X-Momor-Cache": "use"}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


@pytest.fixture
def cache_table(momor: Any, momor_aws: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A cache table of the test's own (the shared harness makes none, so the cache is off elsewhere)."""
    name = f"cache-{momor.caller_id}"
    ddb = momor_aws.client("dynamodb")
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "cacheKey", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "cacheKey", "KeyType": "HASH"}])
    monkeypatch.setenv("MOMOR_CACHE_TABLE", name)
    # The deployment's 150 ms bound on a look-up is a miss on a loaded CI machine (DynamoDB Local's
    # BatchGetItem took longer under a full run), which these tests would read as a wrong answer;
    # a cache that is down is tested below with a table that does not exist.
    monkeypatch.setenv("MOMOR_CACHE_WAIT_MS", "3000")
    reset_momor_caches()
    return name


@pytest.fixture
def oai(momor: Any, cache_table: str) -> Any:
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


@pytest.fixture
def claude(momor: Any, cache_table: str) -> Any:
    with anthropic.Anthropic(base_url=momor.url, api_key=momor.api_key, max_retries=0) as sdk:
        yield sdk


def sent(fake: Any) -> int:
    """Requests the fake providers have received (every label)."""
    return len(fake.requests())


def record_of(momor: Any, request_id: str) -> dict[str, Any]:
    momor.settle()
    deadline = time.monotonic() + 5
    while momor.get(f"/generations/{request_id}").status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.05)
    return momor.record(request_id)


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


# --- Chat Completions ---------------------------------------------------------------------------------


def test_chat_completions_whole_then_streamed_then_whole_are_one_answer_paid_once(momor, fake, oai):
    ask = {"model": GPT, "messages": [user("Hello cache")], "extra_headers": USE}
    first = oai.chat.completions.with_raw_response.create(**ask)
    assert first.headers["x-momor-cache"] == "miss"
    momor.settle()  # the answer is kept after it has gone, with the record
    assert sent(fake) == 1
    second = oai.chat.completions.with_raw_response.create(**ask)
    assert second.headers["x-momor-cache"] == "hit"
    assert sent(fake) == 1  # the fake was not asked again
    a, b = first.parse(), second.parse()
    assert b.choices[0].message.content == a.choices[0].message.content == "Echo: Hello cache"
    assert b.id == second.headers["x-momor-request-id"] != a.id  # a new call, with its own id
    assert b.usage.prompt_tokens == a.usage.prompt_tokens and b.choices[0].finish_reason == "stop"
    with oai.chat.completions.with_streaming_response.create(**ask, stream=True,
                                                             stream_options={"include_usage": True}) as streamed:
        assert streamed.headers["x-momor-cache"] == "hit"
        chunks = list(streamed.parse())
    assert sent(fake) == 1
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Echo: Hello cache"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == a.usage.completion_tokens

    original, hit = record_of(momor, a.id), record_of(momor, b.id)
    assert original["cache"] == {"status": "miss"} and original["cost"] > 0
    assert hit["cache"]["status"] == "hit" and hit["cache"]["from"] == a.id
    assert hit["cost"] == 0 and hit["cache"]["savedUsd"] == pytest.approx(original["cost"])
    assert hit["served"]["model"] == GPT and [x["keySource"] for x in hit["attempts"]] == ["cache"]
    assert hit["usage"]["outputTokens"] == original["usage"]["outputTokens"]
    assert hit["served"]["cached"] is True and "cached" not in original["served"]

    # /usage counts the hits and what they saved, per model and key (the streamed replay is a hit too).
    usage = momor.get("/usage").json()
    assert usage["totals"]["calls"] == 3 and usage["totals"]["cacheHits"] == 2
    assert usage["totals"]["cacheHitRate"] == pytest.approx(2 / 3, abs=1e-4)
    assert usage["totals"]["cacheSavedUsd"] == pytest.approx(2 * original["cost"])
    assert usage["totals"]["costUsd"] == pytest.approx(original["cost"])
    [by_model] = [g for g in usage["groups"]["model"] if g["name"] == GPT]
    assert by_model["cacheHits"] == 2 and by_model["cacheSavedUsd"] == pytest.approx(2 * original["cost"])
    [by_key] = usage["groups"]["key"]
    assert by_key["cacheHits"] == 2


def test_chat_completions_streamed_first_then_a_tool_call_whole(momor, fake, oai, cache_table):
    calls = [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_1"}]
    fake.script("openai", reply(tool_calls=calls))
    ask = {"model": GPT, "messages": [user("Weather in Paris?")], "tools": [WEATHER], "extra_headers": USE}
    with oai.chat.completions.with_streaming_response.create(**ask, stream=True) as streamed:
        assert streamed.headers["x-momor-cache"] == "miss"
        list(streamed.parse())
    settled_with_entries(momor, cache_table, 1)
    whole = oai.chat.completions.with_raw_response.create(**ask)
    assert whole.headers["x-momor-cache"] == "hit" and sent(fake) == 1
    message = whole.parse().choices[0]
    assert message.finish_reason == "tool_calls"
    assert message.message.tool_calls[0].function.name == "get_weather"
    assert json.loads(message.message.tool_calls[0].function.arguments) == {"city": "Paris"}


def test_a_changed_parameter_another_organization_and_off_each_miss(momor, fake, oai):
    ask = {"model": GPT, "messages": [user("Same words")], "extra_headers": USE}
    oai.chat.completions.create(**ask)
    momor.settle()
    warmer = oai.chat.completions.with_raw_response.create(**ask, temperature=0.5)
    assert warmer.headers["x-momor-cache"] == "miss" and sent(fake) == 2
    other_tools = oai.chat.completions.with_raw_response.create(**ask, tools=[WEATHER])
    assert other_tools.headers["x-momor-cache"] == "miss" and sent(fake) == 3
    off = oai.chat.completions.with_raw_response.create(**{**ask, "extra_headers": {"X-Momor-Cache": "off"}})
    assert off.headers["x-momor-cache"] == "miss" and sent(fake) == 4
    default = oai.chat.completions.with_raw_response.create(**{**ask, "extra_headers": {}})
    assert default.headers["x-momor-cache"] == "miss" and sent(fake) == 5  # off unless asked

    acme = organizations.create("Acme")
    plaintext, _ = apikeys.create_api_key("acme", org=acme.id)
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=plaintext, max_retries=0) as theirs:
        foreign = theirs.chat.completions.with_raw_response.create(**ask)
    assert foreign.headers["x-momor-cache"] == "miss" and sent(fake) == 6  # never across organizations
    again = oai.chat.completions.with_raw_response.create(**ask)
    assert again.headers["x-momor-cache"] == "hit" and sent(fake) == 6


def test_refresh_asks_the_provider_and_keeps_its_new_answer(momor, fake, oai):
    ask = {"model": GPT, "messages": [user("Refresh me")]}
    fake.script("openai", reply("old"), reply("new"))
    oai.chat.completions.create(**ask, extra_headers=USE)
    momor.settle()
    refreshed = oai.chat.completions.with_raw_response.create(**ask, extra_headers={"X-Momor-Cache": "refresh"})
    assert refreshed.headers["x-momor-cache"] == "miss" and refreshed.parse().choices[0].message.content == "new"
    momor.settle()
    hit = oai.chat.completions.with_raw_response.create(**ask, extra_headers=USE)
    assert hit.headers["x-momor-cache"] == "hit" and hit.parse().choices[0].message.content == "new"
    assert sent(fake) == 2


def test_failed_and_cut_answers_are_never_kept(momor, fake, oai):
    ask = {"model": GPT, "messages": [user("Fail first")], "extra_headers": USE}
    fake.script("openai", fail(400))
    with pytest.raises(openai.APIStatusError):
        oai.chat.completions.create(**ask)
    fake.script("openai", reply("cut short", finish="length"))
    assert oai.chat.completions.create(**ask).choices[0].finish_reason == "length"
    momor.settle()
    fresh = oai.chat.completions.with_raw_response.create(**ask)
    assert fresh.headers["x-momor-cache"] == "miss" and fresh.parse().choices[0].message.content == "Echo: Fail first"


def test_bad_cache_headers_are_400s_in_the_routes_shape(momor, fake, oai, claude):
    with pytest.raises(openai.BadRequestError) as bad:
        oai.chat.completions.create(model=GPT, messages=[user("x")], extra_headers={"X-Momor-Cache": "maybe"})
    assert "X-Momor-Cache" in bad.value.message
    for ttl in ("0", "-5", "1.5", "soon", "999999999"):
        with pytest.raises(anthropic.BadRequestError) as refused:
            claude.messages.create(model=CLAUDE, max_tokens=64, messages=[user("x")],
                                   extra_headers={**USE, "X-Momor-Cache-TTL": ttl})
        assert refused.value.body["type"] == "error" and "X-Momor-Cache-TTL" in refused.value.body["error"]["message"]
    assert sent(fake) == 0


def test_a_zdr_call_never_reads_or_writes(momor, fake, claude):
    zdr = {"model": CLAUDE, "max_tokens": 64, "messages": [user("Private words")], "extra_headers": USE,
           "extra_body": {"provider": {"zdr": True}}}
    claude.messages.create(**zdr)
    momor.settle()
    again = claude.messages.with_raw_response.create(**zdr)
    assert again.headers["x-momor-cache"] == "miss" and sent(fake) == 2
    plain = {**zdr, "extra_body": {}}
    claude.messages.create(**plain)
    momor.settle()
    assert sent(fake) == 3  # the zdr calls kept nothing
    assert claude.messages.with_raw_response.create(**plain).headers["x-momor-cache"] == "hit"
    assert claude.messages.with_raw_response.create(**zdr).headers["x-momor-cache"] == "miss"  # nor read
    assert sent(fake) == 4


def test_an_organization_default_turns_it_on_and_a_cache_that_is_down_only_misses(momor, fake, monkeypatch,
                                                                                  cache_table):
    cached_org = organizations.create("Cached", defaults=Defaults(cache=True, cache_ttl=60))
    plaintext, _ = apikeys.create_api_key("cached", org=cached_org.id)
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=plaintext, max_retries=0) as sdk:
        ask = {"model": GPT, "messages": [user("Org default")]}
        sdk.chat.completions.create(**ask)
        momor.settle()
        assert sdk.chat.completions.with_raw_response.create(**ask).headers["x-momor-cache"] == "hit"
        assert sent(fake) == 1
        monkeypatch.setenv("MOMOR_CACHE_TABLE", "no-such-table")
        reset_momor_caches()
        down = sdk.chat.completions.with_raw_response.create(**ask)
    assert down.headers["x-momor-cache"] == "miss" and down.parse().choices[0].message.content == "Echo: Org default"
    assert sent(fake) == 2
    momor.settle()
    record = momor.get(f"/generations/{down.headers['x-momor-request-id']}", api_key=plaintext).json()
    assert record["cache"] == {"status": "unavailable"} and record["cost"] > 0


def test_a_key_turned_on_over_the_key_api_caches_its_calls_and_a_call_may_still_say_off(momor, fake, cache_table):
    from tests.integration.test_tenant_keys import api, made, role_key

    admin = role_key("default", "admin")
    key = made(api(momor, admin, "POST", body={"name": "evals", "limits": {"cache": True, "cacheTtlS": 120}}))
    assert key["limits"]["cache"] is True and key["limits"]["cacheTtlS"] == 120
    bad = api(momor, admin, "PATCH", f"/{key['id']}", {"limits": {"cacheTtlS": 10**9}})
    assert bad.status_code == 400 and "limits.cacheTtlS" in bad.text
    with openai.OpenAI(base_url=momor.url + "/v1", api_key=key["key"], max_retries=0) as sdk:
        ask = {"model": GPT, "messages": [user("Key default")]}
        first = sdk.chat.completions.with_raw_response.create(**ask)
        momor.settle()
        assert sdk.chat.completions.with_raw_response.create(**ask).headers["x-momor-cache"] == "hit"
        off = sdk.chat.completions.with_raw_response.create(**ask, extra_headers={"X-Momor-Cache": "off"})
        assert off.headers["x-momor-cache"] == "miss" and sent(fake) == 2
    kept = momor_ddb_item(cache_table)
    assert 110 <= int(kept["expiresAt"]["N"]) - time.time() <= 120  # the key's TTL
    assert first.headers["x-momor-cache"] == "miss"
    changed = api(momor, admin, "PATCH", f"/{key['id']}", {"limits": {"cache": None}})
    assert changed.status_code == 200 and changed.json()["limits"]["cache"] is None


def settled_with_entries(momor: Any, table: str, count: int) -> None:
    """Wait for `count` kept answers: a stream's answer is kept once its stream has ended on the
    server (FrameStream's `ended`), which may come after the client has read the last frame and asked
    to settle; on a loaded machine that order is not given."""
    from momor.store import aws

    deadline = time.monotonic() + 10
    while True:
        momor.settle()
        if aws.client("dynamodb").scan(TableName=table, Select="COUNT")["Count"] >= count:
            return
        assert time.monotonic() < deadline, f"the cache kept fewer than {count} answers"
        time.sleep(0.05)


def momor_ddb_item(table: str) -> dict[str, Any]:
    from momor.store import aws

    [item] = aws.client("dynamodb").scan(TableName=table)["Items"]
    return item


# --- Anthropic Messages -------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [CLAUDE, GPT], ids=["passthrough", "translated"])
def test_messages_streamed_then_whole_then_streamed_with_thinking(momor, fake, claude, cache_table, model):
    ask = {"model": model, "max_tokens": 2048, "messages": [user("Think, then answer")], "extra_headers": USE,
           "thinking": {"type": "enabled", "budget_tokens": 1024}}
    with claude.messages.stream(**ask) as live:
        assert live.response.headers["x-momor-cache"] == "miss"
        first = live.get_final_message()
    settled_with_entries(momor, cache_table, 1)
    whole = claude.messages.with_raw_response.create(**ask)
    assert whole.headers["x-momor-cache"] == "hit"
    again = whole.parse()
    with claude.messages.stream(**ask) as replay:
        assert replay.response.headers["x-momor-cache"] == "hit"
        events = [e.type for e in replay]
        streamed = replay.get_final_message()
    assert sent(fake) == 1
    for answer in (again, streamed):
        assert [b.type for b in answer.content] == [b.type for b in first.content]
        assert answer.content[-1].text == first.content[-1].text
        assert answer.stop_reason == first.stop_reason == "end_turn"
        assert answer.usage.output_tokens == first.usage.output_tokens
    thinking = [b for b in first.content if b.type == "thinking"]
    assert thinking and thinking[0].signature  # the fakes reason when asked to
    for answer in (again, streamed):  # reasoning with its replay state survives the round trip
        kept = [b for b in answer.content if b.type == "thinking"]
        assert [(b.thinking, b.signature) for b in kept] == [(thinking[0].thinking, thinking[0].signature)]
    assert events[0] == "message_start" and events[-1] == "message_stop"


# --- Responses ----------------------------------------------------------------------------------------


def test_responses_whole_then_streamed(momor, fake, oai):
    ask = {"model": GPT, "input": "Respond from the cache", "extra_headers": USE}
    first = oai.responses.with_raw_response.create(**ask)
    assert first.headers["x-momor-cache"] == "miss"
    momor.settle()
    hit = oai.responses.with_raw_response.create(**ask)
    assert hit.headers["x-momor-cache"] == "hit"
    assert hit.parse().output_text == first.parse().output_text == "Echo: Respond from the cache"
    with oai.responses.with_streaming_response.create(**ask, stream=True) as streamed:
        assert streamed.headers["x-momor-cache"] == "hit"
        events = list(streamed.parse())
    assert sent(fake) == 1
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert events[-1].response.output_text == "Echo: Respond from the cache"
    # A stored hit is a response of its own: previous_response_id continues it.
    follow = oai.responses.create(model=GPT, input="And then?", previous_response_id=hit.parse().id)
    assert follow.output_text.startswith("Echo:") and sent(fake) == 2


# --- native -------------------------------------------------------------------------------------------


def _native(text: str, **extra: Any) -> dict[str, Any]:
    return {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": text}], "model": CLAUDE, **extra}


def _native_stream(momor: Any, body: dict[str, Any]) -> tuple[httpx2.Response, list[Any]]:
    frames = []
    with httpx2.stream("POST", momor.url + "/models", json=body, headers=momor.headers(**USE), timeout=30) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line[6:]))
    return resp, frames


def test_native_streamed_then_whole(momor, fake, cache_table):
    resp, frames = _native_stream(momor, _native("Native cache", streaming=True))
    assert resp.headers["x-momor-cache"] == "miss"
    settled_with_entries(momor, cache_table, 1)
    whole = momor.post("/models", _native("Native cache"), headers=momor.headers(**USE))
    assert whole.headers["x-momor-cache"] == "hit", whole.text
    assert whole.json()["messages"] == [{"type": "content", "value": "Echo: Native cache"}]
    again, replayed = _native_stream(momor, _native("Native cache", streaming=True))
    assert again.headers["x-momor-cache"] == "hit" and sent(fake) == 1
    # The same frames, the text in one delta rather than the provider's several.
    def collapsed(fs: list[Any]) -> list[Any]:
        kinds = [f.get("type") for f in fs]
        return [k for n, k in enumerate(kinds) if n == 0 or k != kinds[n - 1]]

    def text(fs: list[Any]) -> str:
        return "".join(f.get("value", "") for f in fs if f.get("type") == "delta")

    assert collapsed(replayed) == collapsed(frames) and text(replayed) == text(frames) == "Echo: Native cache"
    assert replayed[-1] == {**frames[-1], **{k: replayed[-1][k] for k in ("id",) if k in replayed[-1]}}


# --- embeddings, input by input -----------------------------------------------------------------------


def test_embeddings_reask_only_the_changed_inputs_and_answer_in_order(momor, fake, oai):
    from tests.fakes.vectors import vector

    model = "text-embedding-3-small"
    corpus = ["alpha chunk", "beta chunk", "gamma chunk"]
    first = oai.embeddings.with_raw_response.create(model=model, input=corpus, extra_headers=USE)
    assert first.headers["x-momor-cache"] == "miss" and first.headers["x-momor-cache-hits"] == "0/3"
    momor.settle()
    changed = ["alpha chunk", "beta chunk, edited", "gamma chunk", "delta chunk"]
    second = oai.embeddings.with_raw_response.create(model=model, input=changed, extra_headers=USE)
    assert second.headers["x-momor-cache"] == "miss" and second.headers["x-momor-cache-hits"] == "2/4"
    assert fake.requests("openai")[-1].json["input"] == ["beta chunk, edited", "delta chunk"]  # the misses only
    assert [d.embedding for d in second.parse().data] == [vector(model, t, 1536, 1536) for t in changed]
    momor.settle()
    third = oai.embeddings.with_raw_response.create(model=model, input=changed, extra_headers=USE)
    assert third.headers["x-momor-cache"] == "hit" and sent(fake) == 2
    assert [d.embedding for d in third.parse().data] == [vector(model, t, 1536, 1536) for t in changed]
    floats = oai.embeddings.create(model=model, input="gamma chunk", encoding_format="float", extra_headers=USE)
    assert floats.data[0].embedding == vector(model, "gamma chunk", 1536, 1536) and sent(fake) == 2
    other = oai.embeddings.with_raw_response.create(model=model, input=["alpha chunk"], dimensions=256,
                                                    extra_headers=USE)
    assert other.headers["x-momor-cache"] == "miss" and sent(fake) == 3  # another dimension, another vector

    partial, hit = record_of(momor, second.headers["x-momor-request-id"]), record_of(
        momor, third.headers["x-momor-request-id"])
    assert partial["cache"]["status"] == "partial" and partial["cache"]["hits"] == 2
    assert partial["served"]["provider"] == "openai" and [a["keySource"] for a in partial["attempts"]] == [
        "cache", "saved"]
    assert hit["cache"]["status"] == "hit" and hit["cost"] == 0 and hit["cache"]["savedUsd"] > 0

    native = momor.post("/models/embed", {"model": model, "input": changed}, headers=momor.headers(**USE))
    assert native.status_code == 200, native.text
    assert native.headers["x-momor-cache"] == "hit" and sent(fake) == 3  # both routes share the inputs' vectors


def test_calls_their_guardrails_mask_neither_read_nor_fill_the_cache(momor, fake, oai):
    # Two e-mails become the same placeholder ([EMAIL_1]), so a kept answer would hand one caller's
    # restored value to the other, and a hit would skip the restore: masked calls stay out of the cache.
    organizations.ensure_default()
    organizations.set_guardrails(organizations.DEFAULT_ORG, parse_policy(
        {"input": [{"check": "pii", "action": "mask", "restore": True, "entities": ["email"]}]},
        origin="organization"))
    answers = []
    for mail in ("ann@example.com", "bob@example.com"):
        answer = oai.chat.completions.with_raw_response.create(
            model=GPT, messages=[user(f"Write to {mail}.")], extra_headers=USE)
        momor.settle()
        answers.append(answer.parse().choices[0].message.content)
        assert answer.headers.get("x-momor-cache") != "hit"
    assert sent(fake) == 2
    assert answers == ["Echo: Write to ann@example.com.", "Echo: Write to bob@example.com."]
