"""The fake providers' ASGI app: one server, any number of provider labels, every registered wire.

Each wire's fake declares where it answers (`ROUTES`, or `route(address)`: tests/fakes/interface.py),
so a new fake is served with no edit here. Today's:

    POST /{label}/v1/chat/completions          OpenAI Chat Completions (a label's dialect may answer
                                               elsewhere: Azure's deployment and v1 routes, dialects.py)
    POST /{label}/v2/chat                      Cohere v2 chat
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
    POST /{label}/v1/embeddings                OpenAI embeddings (and Azure's deployment and v1 routes: openai_embed.py)
    POST /{label}/v2/embed, /{label}/v2/rerank Cohere embed and rerank v2 (cohere_embed.py, cohere_rerank.py)
    POST /{label}/v1/rerank, /{label}/v1/ranking   Jina/Voyage-shaped and NVIDIA rerank (openai_rerank.py)
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
from typing import Any
from urllib.parse import parse_qs

from momor.providers.registry import REGISTRY

from . import vertex
from .behaviour import decide
from .dialects import OPENAI, dialect_for
from .errors import Invalid
from .interface import Address, fake_module
from .script import Cut, Fail, FakeState, Hang, Malformed, RecordedRequest, Reply, Stall, step_from_json, step_to_json
from .transport import Receive, Scope, Send, pause, read_body, send_json, send_json_misbehaving, send_sse


def _fakes() -> list[Any]:
    """Every registered wire's fake module, tests/fakes/<wire>.py (interface.py), in registry order."""
    return [fake_module(wire.name) for wire in REGISTRY]


_FAKES = _fakes()
_FIXED: dict[str, Any] = {route: fake for fake in _FAKES for route in getattr(fake, "ROUTES", ())}
"""The fixed paths below a label, and the fake module (its own WireFake) that answers each."""


def _resolve(address: Address) -> Any:
    """The WireFake that answers this address: a fake's fixed route (on labels of OpenAI's own
    dialect; a label naming another chat dialect serves that dialect's routes only), else the first
    fake whose `route` claims it (interface.py)."""
    if address.route in _FIXED and dialect_for(address.label) is OPENAI:
        return _FIXED[address.route]
    for fake in _FAKES:
        route = getattr(fake, "route", None)
        wire = route(address) if route is not None else None
        if wire is not None:
            return wire
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
        # a live view of the issued tokens: tokens issued later are accepted too
        wire = _resolve(Address(label, route, query, self.state.tokens.keys())) if label else None
        if wire is None:
            await send_json(send, 404, {"error": {"message": f"no fake route {method} {path}", "type":
                                                  "invalid_request_error", "param": None, "code": None}}, {})
            return
        raw = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if getattr(wire, "multipart", False):
            await self._transcribe(send, wire, label, method, path, headers, raw)
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RecordedRequest(label, method, path, headers, body, query=query)
        self.state.record(record)
        if method != "POST":
            await self._refuse(send, wire, record, Invalid(f"Method {method} not allowed", status=405))
            return
        await self._generate(scope, receive, send, wire, record)

    async def _token(self, scope: Scope, receive: Receive, send: Send, label: str) -> None:
        form = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        record = RecordedRequest(label, "POST", scope["path"], headers, None)
        self.state.record(record)
        status, body = vertex.token_grant(form, self.state.service_accounts, self.state.token_lifetime,
                                          self.state.tokens)
        record.status = status
        await send_json(send, status, body, {"cache-control": "no-cache, no-store"})

    async def _generate(self, scope: Scope, receive: Receive, send: Send, wire: Any,
                        record: RecordedRequest) -> None:
        count_only = getattr(wire, "counts", False)
        problem = wire.check_auth(record.headers)
        if problem is None and not isinstance(record.json, dict):
            problem = Invalid("The request body is not valid JSON." if record.json is None
                              else "The request body must be a JSON object.")
        if problem is None:
            try:
                wire.validate(record.json)
            except Invalid as invalid:
                problem = invalid
        if problem is not None:
            await self._refuse(send, wire, record, problem)
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
        refused = self.state.refusal_for(record.headers)
        if refused is not None:  # this key is exhausted, whatever was scripted for the label
            step = Fail(refused, headers={"retry-after": "60"} if refused == 429 else None)
        record.step = step_to_json(step)["kind"] if step is not None else None
        if isinstance(step, Fail):
            record.status = step.status
            payload = step.body if step.body is not None else wire.error_body(
                step.status, _echoed(record.headers) if step.echo else None, request_id=request_id)
            await send_json(send, step.status, payload, {**headers, **(step.headers or {})})
            return
        if isinstance(step, Hang) and await pause(receive, step.seconds):
            return  # the client gave up, as Momor's timeout should make it
        misbehaviour = step if isinstance(step, (Cut, Stall, Malformed)) else None
        if getattr(wire, "vectors", False):  # an embedding or rerank answer (interface.py): no generation
            record.status = 200
            text = step.text if isinstance(step, Reply) else None
            await send_json_misbehaving(send, receive, wire.vector_answer(body, text), headers, misbehaviour)
            return
        answer = decide(wire.ask(body), step if isinstance(step, Reply) else None, wire.tool_id_prefix)
        record.status = 200
        if getattr(wire, "streaming", lambda b: b.get("stream"))(body):
            await send_sse(send, receive, wire.stream_events(answer, body), headers, misbehaviour,
                           content_type=getattr(wire, "stream_content_type", "text/event-stream; charset=utf-8"),
                           garbage=getattr(wire, "malformed_line", b'data: {"garbage\n\n'))
        else:
            await send_json_misbehaving(send, receive, wire.whole(answer, body), headers, misbehaviour)

    async def _transcribe(self, send: Send, wire: Any, label: str, method: str, path: str,
                          headers: dict[str, str], raw: bytes) -> None:
        """A multipart request (a transcription): auth, the form, then the next scripted step or the default."""
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
        refused = self.state.refusal_for(record.headers)
        if refused is not None:  # this key is exhausted, as on the JSON routes
            step = Fail(refused, headers={"retry-after": "60"} if refused == 429 else None)
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

    async def _refuse(self, send: Send, wire: Any, record: RecordedRequest, problem: Invalid) -> None:
        request_id = wire.new_request_id()
        record.status = problem.status
        await send_json(send, problem.status,
                        wire.error_body(problem.status, problem.message, problem.param, problem.code,
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


ECHOED = ("authorization", "x-api-key", "api-key", "x-goog-api-key", "x-amz-security-token")


def _echoed(headers: dict[str, str]) -> str:
    """A `Fail(echo=True)` step's message: the credentials the request carried, quoted back."""
    sent = "; ".join(f"{name}: {headers[name]}" for name in ECHOED if name in headers)
    return f"The credentials were refused: {sent}"


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
