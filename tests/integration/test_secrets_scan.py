"""No key leaks: run representative calls through Momor, capture everything it wrote, and look for
every per-call key, every saved key and the caller's own Momor key in all of it.

Captured: every log record of every logger at DEBUG (caplog), the exact text Powertools' JSON
logger wrote (its stream handler is teed here, since it holds the stdout of import time and neither
capsys nor capfd sees it under pytest's own capture), whatever reached stdout/stderr (capfd), every
item in the records and API-keys tables, and every response's status line, headers and body.

Upstream error bodies that echo the key (as providers do, e.g. "Incorrect API key provided: ...")
are scripted on purpose: what a provider says about a key must not travel on.

`test_the_scanner_finds_a_planted_key` shows each channel is live, so a clean scan means something.
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from momor.logs import logger as powertools_logger
from momor.store import record_item
from tests.fakes.script import fail, reply

from .conftest import SAVED_KEYS
from .test_gemini_vertex import CLAUDE_VERTEX, google  # noqa: F401 (google: the Vertex providers' fixture)

pytestmark = pytest.mark.emulators

PER_CALL = {
    "openai": "sk-percall-openai-7f3a9c1e",
    "anthropic": "sk-ant-percall-b81d44e2",
    "flaky": "sk-percall-flaky-c0ffee42",
    "backup": "sk-percall-backup-5eed1e55",
}
SAVED = [v["key"] if isinstance(v, dict) else v for v in SAVED_KEYS.values()]


@dataclass
class Capture:
    """Everything Momor wrote during a test, and a search through it."""

    caplog: pytest.LogCaptureFixture
    capfd: pytest.CaptureFixture[str]
    momor_aws: Any
    powertools: io.StringIO = field(default_factory=io.StringIO)
    responses: list[tuple[str, str]] = field(default_factory=list)
    """(what was called, the whole answer as text: status, headers, body)."""

    def keep(self, label: str, response: httpx2.Response) -> httpx2.Response:
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.multi_items())
        self.responses.append((label, f"{response.status_code}\n{headers}\n\n{response.text}"))
        return response

    def _table(self, name: str) -> str:
        ddb, items, start = self.momor_aws.client("dynamodb"), [], None
        while True:
            page = ddb.scan(TableName=name, ConsistentRead=True, **({"ExclusiveStartKey": start} if start else {}))
            items += page["Items"]
            start = page.get("LastEvaluatedKey")
            if not start:
                # A record's detail is deflated (momor/store/record_item.py): scan its text, not its bytes.
                details = [record_item.detail_text(i["detail"]["B"]).decode() for i in items if "detail" in i]
                return json.dumps(items, default=repr) + "\n".join(details)

    def places(self, skip_loggers: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
        out, err = self.capfd.readouterr()
        yield "powertools stdout", self.powertools.getvalue()
        yield "fd stdout", out
        yield "fd stderr", err
        for record in self.caplog.records:
            if record.name.split(".")[0] in skip_loggers:
                continue
            # The message, its arguments and every `extra` field, as a handler could print them.
            yield f"log {record.name}:{record.levelname}", f"{record.getMessage()} {record.__dict__!r}"
        yield "records table", self._table(self.momor_aws.records_table)
        yield "api-keys table", self._table(self.momor_aws.api_keys_table)
        yield from self.responses

    def leaks(self, secrets: list[str], skip_loggers: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
        """(where, secret, the text around it) for every place a secret appears."""
        found = []
        for where, text in self.places(skip_loggers):
            for secret in secrets:
                at = text.find(secret)
                if at >= 0:
                    found.append((where, secret, text[max(at - 120, 0):at + len(secret) + 40]))
        return found


@pytest.fixture
def capture(caplog, capfd, momor_aws, monkeypatch) -> Capture:
    caplog.set_level(logging.DEBUG)  # the root: every library's debug output too (botocore, httpcore, ...)
    caplog.set_level(logging.DEBUG, logger=powertools_logger.name)  # Powertools sets its own level
    made = Capture(caplog, capfd, momor_aws)
    handlers = [h for h in logging.getLogger(powertools_logger.name).handlers if isinstance(h, logging.StreamHandler)]
    assert handlers, "Powertools' logger has no stream handler to tee"
    for handler in handlers:
        original = handler.stream
        monkeypatch.setattr(handler, "stream", _Tee(original, made.powertools))
    return made


class _Tee(io.TextIOBase):
    def __init__(self, *streams: Any) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def native(text: str = "Hello", model: str = "gpt-5-mini", **extra: Any) -> dict[str, Any]:
    return {"systemPrompt": "Be brief.", "messages": [{"type": "user", "value": text}], "model": model, **extra}


def stream_text(momor: Any, path: str, body: Any, headers: dict[str, str]) -> httpx2.Response:
    with httpx2.stream("POST", momor.url + path, json=body, headers=headers, timeout=30) as response:
        response.read()
    return response


def run_representative_calls(momor: Any, fake: Any, capture: Capture) -> None:
    keep, post = capture.keep, momor.post
    # Answers on per-call keys, buffered and streamed, on both wires.
    ok = keep("buffered, per-call key", post("/models", native(keys={"openai": PER_CALL["openai"]})))
    assert ok.status_code == 200, ok.text
    fake.script("anthropic", reply(text="one two three", chunks=3))
    streamed = keep("streamed, per-call key", stream_text(momor, "/models", native(
        model="claude-sonnet-4-5", streaming=True, keys={"anthropic": {"key": PER_CALL["anthropic"]}}),
        momor.headers()))
    assert streamed.status_code == 200 and "event: end" in streamed.text, streamed.text
    # Answers on saved keys.
    assert keep("buffered, saved key", post("/models", native(model="claude-sonnet-4-5"))).status_code == 200
    assert keep("streamed, saved key", stream_text(momor, "/models", native(streaming=True),
                                                   momor.headers())).status_code == 200
    # Failing providers (their own default error bodies): a 401, then 500s until the call gives up.
    fake.script("flaky", fail(401))
    fake.script("backup", *[fail(500)] * 3)
    failed = keep("401 then 500s, per-call keys", post("/models", native(
        model="duo", keys={"flaky": PER_CALL["flaky"], "backup": PER_CALL["backup"]})))
    assert failed.status_code == 502, failed.text
    fake.script("flaky", *[fail(500)] * 3)
    fake.script("backup", fail(401))
    assert keep("500s then 401, saved keys", post("/models", native(model="duo"))).status_code == 502
    fake.script("flaky", *[fail(500)] * 3)
    failed_stream = keep("streamed, failing over", stream_text(momor, "/models", native(
        model="duo", streaming=True, keys={"flaky": PER_CALL["flaky"]}), momor.headers()))
    assert failed_stream.status_code == 200, failed_stream.text
    # Refusals of requests that carry keys.
    for label, body in [
        ("refused: bad parameter", native(keys={"openai": PER_CALL["openai"]}, parameters={"maxTokenz": 5})),
        ("refused: keys of the wrong type", native(keys=[PER_CALL["openai"]])),
        ("refused: unknown model", native(model="no-such-model", keys={"openai": PER_CALL["openai"]})),
        ("refused: zdr with a per-call key", native(prioritization={"zdr": True},
                                                    keys={"openai": PER_CALL["openai"]})),
    ]:
        assert keep(label, post("/models", body)).status_code >= 400
    keep("refused: not JSON", post("/models", content=f'{{"keys": {{"openai": "{PER_CALL["openai"]}"'.encode()))
    keep("refused: no Momor key", post("/models", native(keys={"openai": PER_CALL["openai"]}),
                                       headers={"Content-Type": "application/json"}))
    _other_dialects(momor, keep)
    momor.settle()  # records are written after the answers: scan them once they are in


def run_calls_with_echoing_providers(momor: Any, fake: Any, capture: Capture) -> None:
    """Providers whose error text repeats the key they were sent, as real ones partly do
    ("Incorrect API key provided: sk-...")."""
    fake.script("flaky", fail(401, body={"error": {"message": f"Incorrect API key provided: {PER_CALL['flaky']}",
                                                   "type": "invalid_request_error", "code": "invalid_api_key"}}))
    fake.script("backup", *[fail(500, body={"type": "error", "error": {
        "type": "api_error", "message": f"internal error for key {SAVED_KEYS['backup']}"}})] * 3)
    failed = capture.keep("echoed keys", momor.post("/models", native(model="duo", keys={"flaky": PER_CALL["flaky"]})))
    assert failed.status_code == 502, failed.text
    momor.settle()


def _other_dialects(momor: Any, keep: Any) -> None:
    """One call per other dialect, when its route exists: they share the flow and the records."""
    if importlib.util.find_spec("momor.dialects.openai.route") is not None:
        body = {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}
        keep("openai dialect", momor.post("/v1/chat/completions", body))
        keep("openai dialect, streamed", stream_text(momor, "/v1/chat/completions", {**body, "stream": True},
                                                     momor.headers()))
    if importlib.util.find_spec("momor.dialects.anthropic.route") is not None:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 32, "messages": [{"role": "user", "content": "Hello"}]}
        headers = {"x-api-key": momor.api_key, "Content-Type": "application/json"}
        keep("anthropic dialect", momor.post("/messages", body, headers=headers))
        keep("anthropic dialect, streamed", stream_text(momor, "/messages", {**body, "stream": True}, headers))


THIRD_PARTY_DEBUG = ("botocore", "boto3", "urllib3", "s3transfer")
"""AWS SDK loggers: their DEBUG output is checked apart (test_aws_sdk_debug_logs_...)."""


def _report(leaks: list[tuple[str, str, str]]) -> str:
    return "keys leaked:\n" + "\n".join(f"{s!r} in {w}: ...{t}..." for w, s, t in leaks)


def test_no_key_appears_in_logs_records_or_answers(momor, fake, capture):
    run_representative_calls(momor, fake, capture)
    # The keys did reach the providers, so the scan below looks for strings that were in play.
    sent = json.dumps([r.headers for label in ("openai", "anthropic", "flaky", "backup") for r in fake.requests(label)])
    assert all(PER_CALL[p] in sent for p in PER_CALL) and SAVED_KEYS["openai"] in sent
    # And the capture is live: Powertools wrote its JSON lines, and records were stored.
    assert '"service":"momor"' in capture.powertools.getvalue().replace(" ", "")
    assert dict(capture.places())["records table"].count('"callerId"') >= 10

    leaks = capture.leaks([*PER_CALL.values(), *SAVED, momor.api_key], skip_loggers=THIRD_PARTY_DEBUG)
    assert not leaks, _report(leaks)


def test_keys_a_provider_echoes_in_its_error_travel_no_further(momor, fake, capture):
    run_calls_with_echoing_providers(momor, fake, capture)
    leaks = capture.leaks([*PER_CALL.values(), *SAVED, momor.api_key], skip_loggers=THIRD_PARTY_DEBUG)
    assert not leaks, _report(leaks)


def test_aws_sdk_debug_logs_carry_no_key(momor, capture):
    response = capture.keep("saved key", momor.post("/models", native()))
    assert response.status_code == 200
    leaks = capture.leaks([*SAVED, momor.api_key])
    assert not leaks, _report(leaks)


def test_the_scanner_finds_a_planted_key(momor, capture):
    planted = "sk-planted-" + "5" * 16
    powertools_logger.info("a careless line", extra={"key": planted})
    logging.getLogger("some.library").debug("Response body: %s", {"SecretString": planted})
    capture.momor_aws.client("dynamodb").put_item(
        TableName=capture.momor_aws.records_table, Item={"id": {"S": "planted"}, "error": {"S": planted}})
    capture.keep("planted answer", httpx2.Response(200, headers={"X-Debug": planted}, text="{}"))
    where = {w for w, _, _ in capture.leaks([planted])}
    assert {"powertools stdout", "records table", "planted answer"} <= where
    assert any(w.startswith("log momor:INFO") for w in where) and any(w.startswith("log some.library") for w in where)
    assert not capture.leaks(["sk-never-written-anywhere"])


def test_a_minted_token_a_provider_echoes_in_a_401_travels_no_further(momor, fake, google, capture):  # noqa: F811
    """Issue 33: the Vertex access token Momor mints from its saved service account was not in the
    redaction set; a provider echoing the Authorization header in a 401 put a working token in the
    caller's error, the record and the log line. No provider text is quoted for 401 and 403 at all."""
    fake.script("vertex", fail(401, echo=True))
    answer = capture.keep("vertex 401 echoing its bearer token", momor.post("/models", native(model=CLAUDE_VERTEX)))
    assert answer.status_code >= 400, answer.text
    sent = [r for r in fake.requests("vertex") if r.path != "/vertex/token"]
    token = sent[0].headers["authorization"].removeprefix("Bearer ")
    assert token in fake.state.tokens  # the one Momor minted, echoed by the provider
    record = json.dumps(momor.record(answer.headers["x-momor-request-id"]))
    assert "HTTP 401" in record and "credentials were refused" not in record + answer.text
    momor.settle()
    leaks = capture.leaks([token, google["private_key"]], skip_loggers=THIRD_PARTY_DEBUG)
    assert not leaks, _report(leaks)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_credential_is_never_quoted(momor, fake, capture, status):
    """On the OpenAI route a Chat Completions provider's error is passed through; a 401 or 403 is not
    (its text is about the credential, which it may quote)."""
    fake.script("openai", fail(status, echo=True))
    body = {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "Hello"}]}
    answer = capture.keep("openai 401/403 echoing", momor.post("/v1/chat/completions", body))
    assert answer.status_code >= 400
    record = json.dumps(momor.record(answer.headers["x-momor-request-id"]))
    assert "credentials were refused" not in record + answer.text and f"HTTP {status}" in record
    momor.settle()
    leaks = capture.leaks([*SAVED, momor.api_key, "credentials were refused"], skip_loggers=THIRD_PARTY_DEBUG)
    assert not leaks, _report(leaks)
