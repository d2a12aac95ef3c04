"""The fake providers' ASGI app: one server, any number of provider labels, two wires.

    POST /{label}/v1/chat/completions          OpenAI Chat Completions
    POST /{label}/v1/messages                  Anthropic Messages
    POST /{label}/v1/messages/count_tokens     Anthropic token counting
    POST /{label}/v1beta/models/{model}:generateContent               Gemini API
    POST /{label}/v1beta/models/{model}:streamGenerateContent?alt=sse
    POST /{label}/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent      Vertex
         (and :streamGenerateContent?alt=sse; publishers/anthropic/models/{m}:rawPredict, :streamRawPredict)
    POST /{label}/token                        Vertex: the OAuth token endpoint of a test service account
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
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs

from . import anthropic, openai_chat, vertex
from .behaviour import decide
from .errors import Invalid
from .gemini import GeminiFake
from .script import Cut, Fail, FakeState, Hang, Malformed, RecordedRequest, Reply, Stall, step_from_json, step_to_json
from .transport import Receive, Scope, Send, pause, read_body, send_json, send_json_misbehaving, send_sse
from .vertex import VertexClaudeFake

_ROUTES: dict[str, tuple[ModuleType, bool]] = {
    "v1/chat/completions": (openai_chat, False),
    "v1/messages": (anthropic, False),
    "v1/messages/count_tokens": (anthropic, True),
}

_GEMINI = re.compile(r"^v1(?:beta)?/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")
_VERTEX = re.compile(r"^v1(?:beta1)?/projects/[^/]+/locations/[^/]+/publishers/(?P<publisher>google|anthropic)/models/"
                     r"(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent|rawPredict|streamRawPredict)$")
_GOOGLE_METHODS = {"google": ("generateContent", "streamGenerateContent"),
                   "anthropic": ("rawPredict", "streamRawPredict")}


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
            await self._token(scope, receive, send)
            return
        if label and (_GEMINI.match(route) or _VERTEX.match(route)):
            await self._google(scope, receive, send, label, route)
            return
        if route not in _ROUTES or not label:
            await send_json(send, 404, {"error": {"message": f"no fake route {method} {path}", "type":
                                                  "invalid_request_error", "param": None, "code": None}}, {})
            return
        wire, count_only = _ROUTES[route]
        raw = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RecordedRequest(label, method, path, headers, body)
        self.state.record(record)
        if method != "POST":
            await self._refuse(send, wire, record, Invalid(f"Method {method} not allowed", status=405))
            return
        await self._generate(scope, receive, send, wire, record, count_only)

    async def _token(self, scope: Scope, receive: Receive, send: Send) -> None:
        form = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        record = RecordedRequest(scope["path"].lstrip("/").partition("/")[0], "POST", scope["path"], headers, None)
        self.state.record(record)
        status, body = vertex.token_grant(form, self.state.service_accounts, self.state.token_lifetime,
                                          self.state.tokens)
        record.status = status
        await send_json(send, status, body, {"cache-control": "no-cache, no-store"})

    async def _google(self, scope: Scope, receive: Receive, send: Send, label: str, route: str) -> None:
        """A Gemini API or Vertex AI request: the model and the method are in the URL."""
        gemini, found = _GEMINI.match(route), _VERTEX.match(route)
        match = gemini or found
        assert match is not None
        model, call = match["model"], match["method"]
        stream = call.startswith("stream")
        query = parse_qs(scope.get("query_string", b"").decode())
        publisher = "google" if gemini else match["publisher"]
        wire: Any
        if publisher == "anthropic":
            wire = VertexClaudeFake(model, stream, self.state.tokens.keys())
        else:
            wire = GeminiFake(model, vertex=gemini is None, stream=stream, tokens=self.state.tokens.keys())
        raw = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RecordedRequest(label, scope["method"], scope["path"] + (
            "?" + scope["query_string"].decode() if scope.get("query_string") else ""), headers, body)
        self.state.record(record)
        if call not in _GOOGLE_METHODS[publisher]:
            await self._refuse(send, wire, record, Invalid(f"Method {call} is not found for this publisher.",
                                                           status=404))
            return
        if publisher == "google" and stream and query.get("alt") != ["sse"]:
            # Without alt=sse the API streams one JSON array; Momor must ask for SSE framing.
            await self._refuse(send, wire, record, Invalid("Momor's fake serves streams only with alt=sse."))
            return
        await self._generate(scope, receive, send, wire, record, False, model=model, stream=stream)

    async def _generate(self, scope: Scope, receive: Receive, send: Send, wire: Any,
                        record: RecordedRequest, count_only: bool, *, model: str | None = None,
                        stream: bool | None = None) -> None:
        problem = wire.check_auth(record.headers)
        if problem is None and not isinstance(record.json, dict):
            problem = Invalid("The request body is not valid JSON." if record.json is None
                              else "The request body must be a JSON object.")
        if problem is None:
            try:
                if count_only:
                    wire.validate(record.json, count_only=True)
                else:
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
        step = self.state.next_step(record.label, model if model is not None else body.get("model"))
        record.step = step_to_json(step)["kind"] if step is not None else None
        if isinstance(step, Fail):
            record.status = step.status
            payload = step.body if step.body is not None else wire.error_body(step.status, request_id=request_id)
            await send_json(send, step.status, payload, {**headers, **(step.headers or {})})
            return
        if isinstance(step, Hang) and await pause(receive, step.seconds):
            return  # the client gave up, as Momor's timeout should make it
        answer = decide(wire.ask(body), step if isinstance(step, Reply) else None, wire.tool_id_prefix)
        record.status = 200
        misbehaviour = step if isinstance(step, (Cut, Stall, Malformed)) else None
        if body.get("stream") if stream is None else stream:
            await send_sse(send, receive, wire.stream_events(answer, body), headers, misbehaviour)
        else:
            await send_json_misbehaving(send, receive, wire.whole(answer, body), headers, misbehaviour)

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
