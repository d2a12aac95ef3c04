"""The fake providers' ASGI app: one server, any number of provider labels, three wires.

    POST /{label}/v1/chat/completions          OpenAI Chat Completions (a label's dialect may answer
                                               elsewhere: Azure's deployment and v1 routes, dialects.py)
    POST /{label}/drivers/call                 Puter's AI chat driver (NDJSON streams)
    POST /{label}/v1/responses                 OpenAI Responses
    POST /{label}/v1/messages                  Anthropic Messages
    POST /{label}/v1/messages/count_tokens     Anthropic token counting
    POST /{label}/v1beta/models/{model}:generateContent               Gemini API
    POST /{label}/v1beta/models/{model}:streamGenerateContent?alt=sse
    POST /{label}/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent      Vertex
         (and :streamGenerateContent?alt=sse; publishers/anthropic/models/{m}:rawPredict, :streamRawPredict)
    POST /{label}/token                        Vertex: the OAuth token endpoint of a test service account
    POST /{label}/v1/audio/transcriptions      OpenAI audio transcription (multipart, openai_transcribe.py)
    GET  /healthz
    POST /_fake/script  {"label", "model"?, "steps": [{"kind": ..., ...}]}
    POST /_fake/service_account  {"email", "publicKey": PEM}   (Vertex: whose assertions /{label}/token accepts)
    POST /_fake/reset
    GET  /_fake/requests[?label=L]

Every request to a label is recorded before anything can refuse it. Order of a generation
request: auth (401), validation (400), then the next scripted step, else the default answer;
so a scripted failure never hides a request Momor got wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs

from momor.providers.registry import REGISTRY

from . import anthropic, openai_chat, openai_transcribe, vertex
from .behaviour import decide
from .dialects import OPENAI, Dialect, dialect_for
from .errors import Invalid
from .gemini import GeminiFake
from .interface import fake_module
from .script import Cut, Fail, FakeState, Hang, Malformed, RecordedRequest, Reply, Stall, step_from_json, step_to_json
from .transport import Receive, Scope, Send, pause, read_body, send_json, send_json_misbehaving, send_sse
from .vertex import VertexClaudeFake


def _fixed_routes() -> dict[str, tuple[ModuleType, bool]]:
    routes: dict[str, tuple[ModuleType, bool]] = {}
    for wire in REGISTRY:  # every registered wire has its fake, tests/fakes/<wire>.py
        fake: Any = fake_module(wire.name)
        for route in getattr(fake, "ROUTES", ()):
            routes[route] = (fake, False)
    return routes


_ROUTES: dict[str, tuple[ModuleType, bool]] = {**_fixed_routes(), "v1/messages/count_tokens": (anthropic, True)}
"""Routes of the wires whose fake answers on fixed paths below the label (a fake module's `ROUTES`);
Chat Completions routes are the label's dialect's (dialects.py), Google's carry the model."""


@dataclass(slots=True)
class _Route:
    wire: ModuleType
    count_only: bool = False
    dialect: Dialect = OPENAI
    parts: dict[str, str] = field(default_factory=dict)
    """Named parts of a dialect's route (Azure's resource and deployment)."""


_GEMINI = re.compile(r"^v1(?:beta)?/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")
_VERTEX = re.compile(r"^v1(?:beta1)?/projects/[^/]+/locations/[^/]+/publishers/(?:"
                     r"(?P<google>google)/models/(?P<gmodel>[^/:]+):(?P<gmethod>generateContent|streamGenerateContent)"
                     r"|anthropic/models/(?P<amodel>[^/:]+):(?P<amethod>rawPredict|streamRawPredict))$")


def _resolve_google(route: str, query: str, state: FakeState) -> _Route | None:
    """A Gemini API or Vertex AI route: the model and the method are in the URL, so the wire is
    an object made for this one request."""
    tokens = state.tokens.keys()  # a live view: tokens issued later are accepted too
    gemini = _GEMINI.match(route)
    if gemini is not None:
        stream = gemini["method"] == "streamGenerateContent"
        return _Route(GeminiFake(gemini["model"], stream=stream, query=query))  # type: ignore[arg-type]
    found = _VERTEX.match(route)
    if found is None:
        return None
    if found["google"]:
        stream = found["gmethod"] == "streamGenerateContent"
        wire: Any = GeminiFake(found["gmodel"], vertex=True, stream=stream, tokens=tokens, query=query)
    else:
        wire = VertexClaudeFake(found["amodel"], found["amethod"] == "streamRawPredict", tokens)
    return _Route(wire)


def _resolve(label: str, route: str) -> _Route | None:
    dialect = dialect_for(label)
    if route == "v1/audio/transcriptions":  # any OpenAI-compatible label hosts Whisper-style transcription
        return _Route(openai_transcribe)
    parts = openai_chat.match_route(dialect, route)
    if parts is not None:
        return _Route(openai_chat, False, dialect, parts)
    if dialect is OPENAI and route in _ROUTES:
        return _Route(*_ROUTES[route])
    return None


class FakeApp:
    """ASGI app over a `FakeState` (shared with the in-process harness)."""

    def __init__(self, state: FakeState | None = None) -> None:
        self.state = state or FakeState()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if path.startswith("/_fake/") or path == "/healthz":
            await self._control(scope, receive, send)
            return
        label, _, route = path.lstrip("/").partition("/")
        if label and route == "token" and method == "POST":
            await self._token(scope, receive, send, label)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        resolved = (_resolve_google(route, query, self.state) or _resolve(label, route)) if label else None
        if resolved is None:
            await send_json(send, 404, {"error": {"message": f"no fake route {method} {path}", "type":
                                                  "invalid_request_error", "param": None, "code": None}}, {})
            return
        raw = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if resolved.wire is openai_transcribe:
            await self._transcribe(send, label, method, path, headers, raw)
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RecordedRequest(label, method, path, headers, body, query=query)
        self.state.record(record)
        if method != "POST":
            await self._refuse(send, resolved, record, Invalid(f"Method {method} not allowed", status=405))
            return
        await self._generate(scope, receive, send, resolved, record)

    async def _token(self, scope: Scope, receive: Receive, send: Send, label: str) -> None:
        form = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        record = RecordedRequest(label, "POST", scope["path"], headers, None)
        self.state.record(record)
        status, body = vertex.token_grant(form, self.state.service_accounts, self.state.token_lifetime,
                                          self.state.tokens)
        record.status = status
        await send_json(send, status, body, {"cache-control": "no-cache, no-store"})

    async def _generate(self, scope: Scope, receive: Receive, send: Send, resolved: _Route,
                        record: RecordedRequest) -> None:
        wire, count_only = resolved.wire, resolved.count_only
        problem = _check_address_and_key(resolved, record)
        if problem is None and not isinstance(record.json, dict):
            problem = Invalid("The request body is not valid JSON." if record.json is None
                              else "The request body must be a JSON object.")
        if problem is None:
            try:
                if count_only:
                    wire.validate(record.json, count_only=True)
                elif wire is openai_chat:
                    wire.validate(record.json, resolved.dialect, resolved.parts)
                else:
                    wire.validate(record.json)
            except Invalid as invalid:
                problem = invalid
        if problem is not None:
            await self._refuse(send, resolved, record, problem)
            return
        body: dict[str, Any] = record.json
        request_id = wire.new_request_id()
        headers = wire.response_headers(request_id)
        if count_only:
            record.status = 200
            await send_json(send, 200, wire.count(body), headers)
            return
        model_of = getattr(wire, "model_of", lambda b: b.get("model"))
        step = self.state.next_step(record.label, model_of(body))
        record.step = step_to_json(step)["kind"] if step is not None else None
        error_body = resolved.dialect.error_body or wire.error_body
        if isinstance(step, Fail):
            record.status = step.status
            payload = step.body if step.body is not None else error_body(step.status, request_id=request_id)
            await send_json(send, step.status, payload, {**headers, **(step.headers or {})})
            return
        if isinstance(step, Hang) and await pause(receive, step.seconds):
            return  # the client gave up, as Momor's timeout should make it
        dialect = (resolved.dialect,) if wire is openai_chat else ()
        answer = decide(wire.ask(body, *dialect), step if isinstance(step, Reply) else None, wire.tool_id_prefix)
        record.status = 200
        misbehaviour = step if isinstance(step, (Cut, Stall, Malformed)) else None
        if getattr(wire, "streaming", lambda b: b.get("stream"))(body):
            await send_sse(send, receive, wire.stream_events(answer, body, *dialect), headers, misbehaviour,
                           content_type=getattr(wire, "stream_content_type", "text/event-stream; charset=utf-8"),
                           garbage=getattr(wire, "malformed_line", b'data: {"garbage\n\n'))
        else:
            await send_json_misbehaving(send, receive, wire.whole(answer, body, *dialect), headers, misbehaviour)

    async def _transcribe(self, send: Send, label: str, method: str, path: str, headers: dict[str, str],
                          raw: bytes) -> None:
        """A transcription: auth, the multipart form, then the next scripted step or the default."""
        wire = openai_transcribe
        record = RecordedRequest(label, method, path, headers, None)
        self.state.record(record)
        request_id = wire.new_request_id()
        fields: dict[str, str] = {}
        upload = None
        try:
            problem = wire.check_auth(headers)
            if problem is not None:
                raise problem
            fields, upload = wire.parse_form(headers.get("content-type", ""), raw)
            record.json = wire.recorded(fields, upload)
            wire.validate(fields, upload)
        except Invalid as invalid:
            record.status = invalid.status
            await send_json(send, invalid.status, wire.error_body(invalid.status, invalid.message, invalid.param,
                                                                  invalid.code), wire.response_headers(request_id))
            return
        assert upload is not None
        step = self.state.next_step(label, fields["model"])
        record.step = step_to_json(step)["kind"] if step is not None else None
        if isinstance(step, Fail):
            record.status = step.status
            payload = step.body if step.body is not None else wire.error_body(step.status)
            await send_json(send, step.status, payload, {**wire.response_headers(request_id), **(step.headers or {})})
            return
        content_type, body = wire.answer(fields, upload, step.text if isinstance(step, Reply) else None)
        record.status = 200
        if isinstance(body, str):
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", content_type.encode())]})
            await send({"type": "http.response.body", "body": body.encode()})
            return
        await send_json(send, 200, body, wire.response_headers(request_id))

    async def _refuse(self, send: Send, resolved: _Route, record: RecordedRequest, problem: Invalid) -> None:
        wire = resolved.wire
        request_id = wire.new_request_id()
        record.status = problem.status
        error_body = resolved.dialect.error_body or wire.error_body
        await send_json(send, problem.status,
                        error_body(problem.status, problem.message, problem.param, problem.code,
                                   request_id=request_id),
                        wire.response_headers(request_id))

    async def _control(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        raw = await read_body(receive)
        if (method, path) == ("GET", "/healthz"):
            await send_json(send, 200, {"ok": True}, {})
        elif (method, path) == ("POST", "/_fake/reset"):
            self.state.reset()
            await send_json(send, 200, {"ok": True}, {})
        elif (method, path) == ("GET", "/_fake/requests"):
            label = parse_qs(scope.get("query_string", b"").decode()).get("label", [None])[0]
            await send_json(send, 200, [r.to_json() for r in self.state.requests(label)], {})
        elif (method, path) == ("POST", "/_fake/service_account"):
            try:
                data = json.loads(raw)
                self.state.add_service_account(data["email"], data["publicKey"].encode())
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                await send_json(send, 400, {"error": str(error)}, {})
                return
            await send_json(send, 200, {"ok": True}, {})
        elif (method, path) == ("POST", "/_fake/script"):
            try:
                data = json.loads(raw)
                steps = [step_from_json(s) for s in data.get("steps", [])]
                self.state.script(data["label"], *steps, model=data.get("model"))
            except (ValueError, KeyError, TypeError) as error:
                await send_json(send, 400, {"error": str(error)}, {})
                return
            await send_json(send, 200, {"ok": True, "queued": len(steps)}, {})
        else:
            await send_json(send, 404, {"error": f"no fake route {method} {path}"}, {})


def _check_address_and_key(resolved: _Route, record: RecordedRequest) -> Invalid | None:
    if resolved.wire is not openai_chat:
        return resolved.wire.check_auth(record.headers)
    problem = openai_chat.check_endpoint(resolved.dialect, resolved.parts, parse_qs(record.query))
    return problem or openai_chat.check_auth(record.headers, resolved.dialect)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def create_app(state: FakeState | None = None) -> FakeApp:
    return FakeApp(state)
