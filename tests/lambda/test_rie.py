"""The built functions, run under SAM CLI's Runtime Interface Emulator on this host (no Docker).

What `sam build` made (function folder + both layers) runs under the stock Python runtime client,
its environment the template's own plus local emulators: DynamoDB Local and moto_server (the
session fixture `aws`), the catalog in the emulated bucket, saved keys in the emulated secret, and
the fake providers. Events are SAM CLI's own samples (REST API and HTTP API shapes) edited per test.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from infra.emulators import Endpoints, provision
from momor import invocation
from momor.store import apikeys
from tests.fakes import FakeProviders
from tests.fakes.script import reply, stall
from tests.media import pdf_with_text, tiny_wav

from . import rie

pytestmark = [pytest.mark.sam, pytest.mark.emulators]

KINDS = ["rest", "http"]
SAVED_KEYS = {"openai": "sk-saved-openai-rie", "anthropic": {"key": "sk-ant-saved-rie", "zdr": True}}


@dataclass(frozen=True, slots=True)
class Stack:
    """The local stand-ins for what template.yaml deploys, and one valid Momor API key."""

    endpoints: Endpoints
    names: dict[str, str]
    """MOMOR_* variables naming this module's tables, bucket and secret."""
    fake: FakeProviders
    api_key: str
    caller_id: str

    def env(self, logical_id: str) -> dict[str, str]:
        return rie.function_env(logical_id) | self.endpoints.env() | self.names


def _catalog(fake_url: str) -> dict[str, Any]:
    catalog = json.loads((rie.ROOT / "infra" / "example-catalog.json").read_text())
    for provider in catalog["providers"]:
        provider["baseUrl"] = provider["baseUrl"].replace("http://127.0.0.1:8788", fake_url)
    return catalog


def _create_api_key(endpoints: Endpoints, table: str) -> tuple[str, str]:
    """A key stored as apikeys.py reads it (hash only), written with the test's own client."""
    plaintext = apikeys.KEY_PREFIX + uuid.uuid4().hex
    digest = apikeys.key_hash(plaintext)
    caller_id = digest[:16]
    endpoints.client("dynamodb").put_item(
        TableName=table,
        Item={"keyHash": {"S": digest}, "id": {"S": caller_id}, "name": {"S": "rie test"},
              "created": {"S": "2026-01-01T00:00:00+00:00"}, "disabled": {"BOOL": False}, "zdr": {"BOOL": False}},
    )
    return plaintext, caller_id


@pytest.fixture(scope="module")
def build() -> rie.Build:
    try:
        return rie.sam_build()
    except rie.HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def stack(aws: Endpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tag = uuid.uuid4().hex[:10]
    with FakeProviders() as fake:
        catalog_file = tmp_path_factory.mktemp("rie") / "catalog.json"
        catalog_file.write_text(json.dumps(_catalog(fake.url)))
        names = provision(
            aws,
            records_table=f"rie-records-{tag}",
            api_keys_table=f"rie-api-keys-{tag}",
            catalog_bucket=f"rie-catalog-{tag}",
            catalog_file=catalog_file,
            keys_secret=f"momor/rie-keys-{tag}",
            memory_table=f"rie-memory-{tag}",
            responses_table=f"rie-responses-{tag}",
            keys=SAVED_KEYS,
        )
        key, caller_id = _create_api_key(aws, names["MOMOR_API_KEYS_TABLE"])
        yield Stack(aws, names, fake, key, caller_id)


@pytest.fixture(scope="module")
def models_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    with rie.LambdaFunction.from_build(build, "ModelsFunction", stack.env("ModelsFunction")) as fn:
        yield fn


@pytest.fixture(scope="module")
def models_stream_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    """ModelsFunction as the exec wrapper starts it on Lambda: the streaming bridge, not awslambdaric."""
    env = stack.env("ModelsFunction")
    with rie.LambdaFunction.from_build(build, "ModelsFunction", env, streaming=True) as fn:
        yield fn


@pytest.fixture(scope="module")
def generations_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    with rie.LambdaFunction.from_build(build, "GenerationsFunction", stack.env("GenerationsFunction")) as fn:
        yield fn


def native_body(text: str = "Hello there", model: str = "gpt-5-mini", **extra: Any) -> dict[str, Any]:
    return {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": text}], "model": model, **extra}


def assert_problem(answer: rie.Answer, status: int) -> dict[str, Any]:
    assert answer.status == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json"), answer.headers
    request_id = answer.headers["x-momor-request-id"]
    assert len(request_id) == 32 and int(request_id, 16) >= 0
    doc = answer.json()
    assert doc["status"] == status and doc["detail"], doc
    return doc


# --- refusals: no provider is reached --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_models_without_a_key_is_401_problem(models_fn, stack, kind):
    before = len(stack.fake.requests())
    event = rie.api_event(kind, "POST", "/models", headers={"Content-Type": "application/json"},
                          body=native_body())
    answer = models_fn.invoke(event)
    doc = assert_problem(answer, 401)
    assert "key" in doc["detail"].lower()
    assert len(stack.fake.requests()) == before


@pytest.mark.parametrize("kind", KINDS)
def test_models_with_an_unknown_key_is_401(models_fn, kind):
    event = rie.api_event(kind, "POST", "/models", body=native_body(),
                          headers={"Content-Type": "application/json", "Authorization": "Bearer momor-nope"})
    assert_problem(models_fn.invoke(event), 401)


@pytest.mark.parametrize("kind", KINDS)
def test_models_with_a_non_json_content_type_is_415(models_fn, stack, kind):
    event = rie.api_event(kind, "POST", "/models", body="hello",
                          headers={"Content-Type": "text/plain", "Authorization": f"Bearer {stack.api_key}"})
    assert_problem(models_fn.invoke(event), 415)


@pytest.mark.parametrize("kind", KINDS)
def test_models_accepting_only_html_is_406(models_fn, stack, kind):
    event = rie.api_event(kind, "POST", "/models", body=native_body(),
                          headers={"Content-Type": "application/json", "Accept": "text/html",
                                   "Authorization": f"Bearer {stack.api_key}"})
    assert_problem(models_fn.invoke(event), 406)


@pytest.mark.parametrize("kind", KINDS)
def test_generations_without_a_key_is_401(generations_fn, kind):
    event = rie.api_event(kind, "GET", "/generations/0123456789abcdef0123456789abcdef",
                          resource="/generations/{id}", path_parameters={"id": "0123456789abcdef0123456789abcdef"})
    answer = generations_fn.invoke(event)
    assert answer.status == 401, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")


# --- a whole answer: key in DynamoDB, catalog from S3, saved key from Secrets Manager, fake provider --


@pytest.mark.parametrize("kind", KINDS)
def test_models_full_answer_and_its_record(models_fn, generations_fn, stack, kind):
    stack.fake.reset()
    event = rie.api_event(kind, "POST", "/models", body=native_body(),
                          headers={"Content-Type": "application/json", "Authorization": f"Bearer {stack.api_key}"})
    answer = models_fn.invoke(event)
    assert answer.status == 200, f"{answer.text}\n{models_fn.log()}"
    assert answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert body["type"] == "monolith"
    assert body["model"]["name"] == "gpt-5-mini" and body["model"]["provider"] == "openai"
    assert body["messages"] == [{"type": "content", "value": "Echo: Hello there"}]
    assert body["usage"]["outputTokens"] > 0

    sent = stack.fake.requests("openai")
    assert len(sent) == 1
    assert sent[0].json["model"] == "gpt-5-mini-2025-08-07"
    assert sent[0].headers["authorization"] == f"Bearer {SAVED_KEYS['openai']}"  # from the secret

    request_id = answer.headers["x-momor-request-id"]
    read = rie.api_event(kind, "GET", f"/generations/{request_id}", resource="/generations/{id}",
                         path_parameters={"id": request_id}, headers={"Authorization": f"Bearer {stack.api_key}"})
    record = generations_fn.invoke(read)
    assert record.status == 200, f"{record.text}\n{generations_fn.log()}"
    doc = record.json()
    assert doc["served"]["model"] == "gpt-5-mini" and doc["status"] == 200
    assert [a["status"] for a in doc["attempts"]] == ["ok"]
    # The call's JSON log line carries API Gateway's request id as the correlation id.
    call_lines = [json.loads(line) for line in models_fn.log(tail=200_000).splitlines()
                  if line.startswith("{") and '"message":"call"' in line.replace(" ", "")]
    mine = [line for line in call_lines if line.get("request_id") == request_id]
    assert mine and mine[0]["correlation_id"] == event["requestContext"]["requestId"], call_lines[-3:]


def test_a_record_is_only_for_the_key_that_made_it(generations_fn, stack):
    other_key, _ = _create_api_key(stack.endpoints, stack.names["MOMOR_API_KEYS_TABLE"])
    missing = uuid.uuid4().hex
    event = rie.api_event("rest", "GET", f"/generations/{missing}", resource="/generations/{id}",
                          path_parameters={"id": missing}, headers={"Authorization": f"Bearer {other_key}"})
    answer = generations_fn.invoke(event)
    assert answer.status == 404, answer.text


# --- the streaming bridge (what AWS_LAMBDA_EXEC_WRAPPER starts), under the same emulator -------------


def sse_frames(text: str) -> list[tuple[str, Any]]:
    frames, event = [], ""
    for line in text.splitlines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            frames.append((event, json.loads(line[6:])))
            event = ""
    return frames


@pytest.mark.parametrize("kind", KINDS)
def test_bridge_without_a_key_is_401_problem(models_stream_fn, kind):
    event = rie.api_event(kind, "POST", "/models", headers={"Content-Type": "application/json"},
                          body=native_body())
    assert_problem(models_stream_fn.invoke(event), 401)


@pytest.mark.parametrize("kind", KINDS)
def test_bridge_streams_an_sse_answer(models_stream_fn, stack, kind):
    stack.fake.reset()
    stack.fake.script("openai", reply(text="one two three", chunks=3))
    event = rie.api_event(kind, "POST", "/models", body=native_body(streaming=True),
                          headers={"Content-Type": "application/json", "Authorization": f"Bearer {stack.api_key}"})
    answer = models_stream_fn.invoke(event)
    assert answer.status == 200, f"{answer.text}\n{models_stream_fn.log()}"
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert len(answer.headers["x-momor-request-id"]) == 32
    frames = sse_frames(answer.text)
    kinds = [name for name, _ in frames]
    assert kinds[0] == "start" and kinds[-1] == "end", kinds
    assert "".join(d["value"] for name, d in frames if name == "delta") == "one two three"
    assert frames[-1][1]["usage"]["outputTokens"] > 0


def test_bridge_buffered_answer(models_stream_fn, stack):
    stack.fake.reset()
    event = rie.api_event("rest", "POST", "/models", body=native_body(),
                          headers={"Content-Type": "application/json", "Authorization": f"Bearer {stack.api_key}"})
    answer = models_stream_fn.invoke(event)
    assert answer.status == 200, answer.text
    assert answer.json()["messages"] == [{"type": "content", "value": "Echo: Hello there"}]


@pytest.mark.parametrize("function", ["ModelsFunction", "ChatCompletionsFunction", "MessagesFunction",
                                      "DecisionFunction", "TranscribeFunction", "ResponsesFunction"])
def test_a_streaming_function_without_its_exec_wrapper_fails_its_init(build, stack, function):
    """The template's own Handler under the stock runtime client: before, a buffered JSON answer
    (status 200) that API Gateway's STREAM integration cannot read; now an init failure that says why."""
    handler = rie.load_template()["Resources"][function]["Properties"]["Handler"]
    event = rie.api_event("rest", "POST", "/models", body=native_body(),
                          headers={"Content-Type": "application/json", "Authorization": f"Bearer {stack.api_key}"})
    fn = rie.LambdaFunction.from_build(build, function, stack.env(function), handler=handler)
    # The emulator answers 502 when the init fails.
    with fn, pytest.raises(rie.HarnessError) as failed:
        answer = fn.invoke_raw(event)
        pytest.fail(f"answered instead of failing its init: {answer[:300]!r}")
    assert '"errorType": "ExecWrapperMissing"' in str(failed.value)
    assert "AWS_LAMBDA_EXEC_WRAPPER" in str(failed.value)


# --- the other dialects' functions, each invoked once through the emulator ------------------------


@pytest.fixture(scope="module")
def chat_completions_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    env = stack.env("ChatCompletionsFunction")
    with rie.LambdaFunction.from_build(build, "ChatCompletionsFunction", env) as fn:
        yield fn


@pytest.fixture(scope="module")
def messages_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    with rie.LambdaFunction.from_build(build, "MessagesFunction", stack.env("MessagesFunction")) as fn:
        yield fn


@pytest.fixture(scope="module")
def catalog_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    with rie.LambdaFunction.from_build(build, "CatalogFunction", stack.env("CatalogFunction")) as fn:
        yield fn


def test_responses_function_answers_and_another_instance_reads_what_it_stored(build, stack):
    """The built ResponsesFunction answers POST /v1/responses and keeps the response in its table: a
    second function process (another Lambda instance) reads it back for the same key (issue 24)."""
    stack.fake.reset()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {stack.api_key}"}
    body = {"model": "claude-sonnet-4-5", "input": "Hello"}
    env = stack.env("ResponsesFunction")
    with rie.LambdaFunction.from_build(build, "ResponsesFunction", env) as fn:
        answer = fn.invoke(rie.api_event("rest", "POST", "/v1/responses", body=body, headers=headers))
        assert answer.status == 200, f"{answer.text}\n{fn.log()}"
    made = answer.json()
    assert made["object"] == "response" and made["output"][0]["content"][0]["text"] == "Echo: Hello"
    with rie.LambdaFunction.from_build(build, "ResponsesFunction", env) as other:
        read = other.invoke(rie.api_event("rest", "GET", f"/v1/responses/{made['id']}", headers=headers))
        assert read.status == 200, f"{read.text}\n{other.log()}"
    assert read.json()["id"] == made["id"] and read.json()["output"] == made["output"]


@pytest.mark.parametrize("kind", KINDS)
def test_chat_completions_function_answers_in_openai_shape(chat_completions_fn, stack, kind):
    stack.fake.reset()
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "Hello"}]}
    event = rie.api_event(kind, "POST", "/v1/chat/completions", body=body,
                          headers={"Content-Type": "application/json", "Authorization": f"Bearer {stack.api_key}"})
    answer = chat_completions_fn.invoke(event)
    assert answer.status == 200, f"{answer.text}\n{chat_completions_fn.log()}"
    doc = answer.json()
    assert doc["object"] == "chat.completion" and doc["id"] == answer.headers["x-momor-request-id"]
    assert doc["choices"][0]["message"]["content"] == "Echo: Hello"
    assert doc["model"] == "anthropic/claude-sonnet-4-5"
    assert stack.fake.requests("anthropic")[-1].json["model"] == "claude-sonnet-4-5-20250929"
    refused = chat_completions_fn.invoke(rie.api_event(kind, "POST", "/v1/chat/completions", body=body,
                                                       headers={"Content-Type": "application/json"}))
    assert refused.status == 401 and refused.json()["error"]["message"]


def test_router_alias_on_the_chat_completions_function_remembers_across_instances(chat_completions_fn, build,
                                                                                   stack):
    """The built function serves the router alias, and its thread lives in the memory table: a second
    function process (another Lambda instance) continues it."""
    stack.fake.reset()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {stack.api_key}"}

    def turn(fn: rie.LambdaFunction, text: str) -> rie.Answer:
        body = {"model": "gpt-5-mini", "chat_id": "rie-thread", "messages": [{"role": "user", "content": text}]}
        answer = fn.invoke(rie.api_event("rest", "POST", "/router/v1/chat/completions", body=body, headers=headers))
        assert answer.status == 200, f"{answer.text}\n{fn.log()}"
        assert answer.json()["chat_id"] == "rie-thread" and answer.headers["x-momor-chat-id"] == "rie-thread"
        return answer

    turn(chat_completions_fn, "First instance.")
    with rie.LambdaFunction.from_build(build, "ChatCompletionsFunction", stack.env("ChatCompletionsFunction")) as other:
        turn(other, "Second instance.")
    assert stack.fake.requests("openai")[-1].json["messages"] == [
        {"role": "user", "content": "First instance."}, {"role": "assistant", "content": "Echo: First instance."},
        {"role": "user", "content": "Second instance."},
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_messages_function_answers_in_anthropic_shape(messages_fn, stack, kind):
    stack.fake.reset()
    body = {"model": "gpt-5-mini", "max_tokens": 64, "messages": [{"role": "user", "content": "Hello"}]}
    event = rie.api_event(kind, "POST", "/v1/messages", body=body,
                          headers={"Content-Type": "application/json", "X-API-Key": stack.api_key})
    answer = messages_fn.invoke(event)
    assert answer.status == 200, f"{answer.text}\n{messages_fn.log()}"
    doc = answer.json()
    assert doc["type"] == "message" and doc["content"] == [{"type": "text", "text": "Echo: Hello"}]
    assert doc["stop_reason"] == "end_turn"
    assert stack.fake.requests("openai")[-1].json["model"] == "gpt-5-mini-2025-08-07"
    missing = messages_fn.invoke(rie.api_event(kind, "POST", "/v1/messages", body={**body, "max_tokens": None},
                                               headers={"Content-Type": "application/json",
                                                        "X-API-Key": stack.api_key}))
    assert missing.status == 400 and missing.json()["type"] == "error"


@pytest.mark.parametrize("kind", KINDS)
def test_catalog_function_lists_the_models(catalog_fn, stack, kind):
    event = rie.api_event(kind, "GET", "/v1/models", headers={"Authorization": f"Bearer {stack.api_key}"})
    answer = catalog_fn.invoke(event)
    assert answer.status == 200, f"{answer.text}\n{catalog_fn.log()}"
    ids = {m["id"] for m in answer.json()["data"]}
    assert {"openai/gpt-5-mini", "anthropic/claude-sonnet-4-5"} <= ids
    refused = catalog_fn.invoke(rie.api_event(kind, "GET", "/v1/models"))
    assert refused.status == 401


# --- the decision and transcription functions, and file processing in the built layers -------------


@pytest.fixture(scope="module")
def decision_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    # As the exec wrapper starts it on Lambda: the streaming bridge (template.yaml), not awslambdaric.
    with rie.LambdaFunction.from_build(build, "DecisionFunction", stack.env("DecisionFunction"), streaming=True) as fn:
        yield fn


@pytest.fixture(scope="module")
def transcribe_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    # As the exec wrapper starts it on Lambda: the streaming bridge (template.yaml), not awslambdaric.
    env = stack.env("TranscribeFunction")
    with rie.LambdaFunction.from_build(build, "TranscribeFunction", env, streaming=True) as fn:
        yield fn


def _json_headers(stack: Stack) -> dict[str, str]:
    return {"Content-Type": "application/json", "Authorization": f"Bearer {stack.api_key}"}


@pytest.mark.parametrize("kind", KINDS)
def test_decision_function_answers_one_of_the_options(decision_fn, stack, kind):
    stack.fake.reset()
    stack.fake.script("mistral", reply(text="Hmm, hard to say."), reply(text="no"))
    body = {**native_body(model="mistral-small-decide"), "options": ["yes", "no"], "keys": {"mistral": "sk-call-m"}}
    answer = decision_fn.invoke(rie.api_event(kind, "POST", "/models/decision", body=body,
                                              headers=_json_headers(stack)))
    assert answer.status == 200, f"{answer.text}\n{decision_fn.log()}"
    doc = answer.json()
    assert doc["type"] == "decision" and doc["choice"] == "no"
    assert doc["model"]["name"] == "mistral-small-decide" and len(stack.fake.requests("mistral")) == 2
    twice = {**body, "options": ["yes", "yes"]}
    duplicate = decision_fn.invoke(rie.api_event(kind, "POST", "/models/decision", body=twice,
                                                 headers=_json_headers(stack)))
    assert "options[1]" in assert_problem(duplicate, 400)["detail"]


@pytest.mark.parametrize("kind", KINDS)
def test_transcribe_function_answers_a_transcript(transcribe_fn, stack, kind):
    stack.fake.reset()
    wav = {"type": "bytes", "value": base64.b64encode(tiny_wav(1.0)).decode(), "name": "memo.wav",
           "contentType": "audio/wav"}
    answer = transcribe_fn.invoke(rie.api_event(kind, "POST", "/models/transcribe",
                                                body={"file": wav, "model": "whisper-1"}, headers=_json_headers(stack)))
    assert answer.status == 200, f"{answer.text}\n{transcribe_fn.log()}"
    doc = answer.json()
    assert doc["type"] == "transcript" and doc["text"] == "Transcript of memo.wav (1.00 s)."
    assert doc["durationSeconds"] == 1 and doc["model"]["name"] == "whisper-1"
    not_audio = transcribe_fn.invoke(rie.api_event(
        kind, "POST", "/models/transcribe", body={"file": {**wav, "contentType": "text/plain"}},
        headers=_json_headers(stack)))
    assert "file.contentType" in assert_problem(not_audio, 400)["detail"]


def test_models_function_converts_a_pdf_with_the_layers_pypdf(models_fn, stack):
    stack.fake.reset()
    pdf = {"type": "bytes", "value": base64.b64encode(pdf_with_text("Seven swans swimming.")).decode(),
           "name": "swans.pdf", "contentType": "application/pdf"}
    body = {"systemPrompt": "", "model": "llama-3.3-70b", "fileProcessing": {"type": "auto"},
            "keys": {"deepinfra": "sk-call-d"},
            "messages": [{"type": "user", "value": "Read it.", "files": [pdf]}]}
    answer = models_fn.invoke(rie.api_event("rest", "POST", "/models", body=body, headers=_json_headers(stack)))
    assert answer.status == 200, f"{answer.text}\n{models_fn.log()}"
    assert "Seven swans swimming." in answer.json()["messages"][0]["value"]


@pytest.fixture(scope="module")
def usage_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    with rie.LambdaFunction.from_build(build, "UsageFunction", stack.env("UsageFunction")) as fn:
        yield fn


@pytest.mark.parametrize("kind", KINDS)
def test_usage_function_sums_the_calls_and_serves_the_console(usage_fn, models_fn, stack, kind):
    headers = {"Authorization": f"Bearer {stack.api_key}"}
    made = models_fn.invoke(rie.api_event(kind, "POST", "/models", body=native_body(),
                                          headers={"Content-Type": "application/json", **headers}))
    assert made.status == 200, made.text
    answer = usage_fn.invoke(rie.api_event(kind, "GET", "/usage", headers=headers))
    assert answer.status == 200, f"{answer.text}\n{usage_fn.log()}"
    doc = answer.json()
    assert doc["scope"] == "own" and doc["caller"]["id"] == stack.caller_id
    assert made.headers["x-momor-request-id"] in {c["id"] for c in doc["latest"]}
    assert doc["totals"]["calls"] == len(doc["latest"]) >= 1
    page = usage_fn.invoke(rie.api_event(kind, "GET", "/console"))
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    assert "console/console.js" in page.text
    library = usage_fn.invoke(rie.api_event(kind, "GET", "/console/chart.umd.min.js", resource="/console/{name}",
                                            path_parameters={"name": "chart.umd.min.js"}))
    assert library.status == 200 and library.headers["content-type"].startswith("text/javascript")
    assert usage_fn.invoke(rie.api_event(kind, "GET", "/usage")).status == 401


# --- the invocation's deadline bounds the call (momor.invocation) ------------------------------------

SHORT_TIMEOUT = int(invocation.MARGIN_S) + 6
"""A function timeout a few seconds past the margin: the call must end on its own before Lambda's."""


@pytest.fixture(scope="module")
def models_stream_short_fn(build: rie.Build, stack: Stack) -> Iterator[rie.LambdaFunction]:
    env = stack.env("ModelsFunction") | {"MOMOR_IDLE_TIMEOUT_S": "600"}  # only the deadline can end it
    with rie.LambdaFunction.from_build(build, "ModelsFunction", env, streaming=True, timeout=SHORT_TIMEOUT) as fn:
        yield fn


def test_a_stream_longer_than_the_invocation_ends_with_an_error_frame_and_a_record(
    models_stream_short_fn, generations_fn, stack
):
    """Before: Lambda (here the emulator) killed the invocation mid-stream: no error frame, no record."""
    stack.fake.reset()
    stack.fake.script("openai", reply(text="one two three four", chunks=4))  # warm the function first
    warm = rie.api_event("rest", "POST", "/models", body=native_body(streaming=True),
                         headers={"Content-Type": "application/json", "Authorization": f"Bearer {stack.api_key}"})
    assert models_stream_short_fn.invoke(warm).status == 200
    stack.fake.script("openai", stall(after=3, seconds=10 * SHORT_TIMEOUT))
    answer = models_stream_short_fn.invoke(warm, timeout=4 * SHORT_TIMEOUT)
    assert answer.status == 200, f"{answer.text}\n{models_stream_short_fn.log()}"
    frames = sse_frames(answer.text)
    kinds = [name for name, _ in frames]
    assert kinds[0] == "start" and "delta" in kinds, kinds
    assert kinds[-1] == "error", f"{kinds}\n{models_stream_short_fn.log()}"
    assert "ran out of time" in frames[-1][1]["detail"]

    request_id = answer.headers["x-momor-request-id"]
    read = rie.api_event("rest", "GET", f"/generations/{request_id}", resource="/generations/{id}",
                         path_parameters={"id": request_id}, headers={"Authorization": f"Bearer {stack.api_key}"})
    record = generations_fn.invoke(read)
    assert record.status == 200, f"{record.text}\n{models_stream_short_fn.log()}"
    doc = record.json()
    assert doc["attempts"][-1]["status"] == "failed" and "ran out of time" in doc["attempts"][-1]["error"]


def test_the_local_invoke_tool_answers(capsys):
    """The README's way to invoke a function without Docker (tests/lambda/invoke.py) works as documented."""
    from . import invoke

    assert invoke.main(["CatalogFunction", "GET", "/v1/models"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "200", out[:500]
    body = json.loads(out.split("\n\n", 1)[1])
    assert {m["id"] for m in body["data"]} >= {"openai/gpt-5-mini"}
