"""POST /router/v1/chat/completions (and /router/chat/completions): the router alias (seed 003).

The same Chat Completions dialect as `/v1/chat/completions` (same SDK compatibility, errors and
streams: this door is the OpenAI door) plus what seed 003 adds, so an OpenAI SDK with
`base_url=".../router/v1"` gets the router and one with `".../v1"` keeps seed 001 exactly:

- memory: `chat_id` (or `conversation_id`, `thread_id`, `memory_id`, checked in that order; 1 to
  128 of A-Z a-z 0-9 _ . : -, anything else a 400 before any provider is called, since the id is
  echoed in a header), `new_chat` (with a chat id too: new wins), `context`; JSON null in any of
  them means not given. The thread in use comes back as `chat_id` in the JSON answer, on a
  stream's first chunk, and as `X-Momor-Chat-Id`. Loading and keeping turns is routing/memory.py's step.
- roles are not validated (seed 003): one Chat Completions does not have goes on as written to a
  Chat Completions offering, and is read as a user (or, for `model`, `ai`, `bot`, an assistant)
  message for any other wire; it is never kept as a turn.
- `prompt`: a user message when `messages` is missing or empty.
- `model` omitted, unknown, `auto` or `router`: classified (routing/classify.py) and served by
  the provider families in order (routing/families.py); the tier chosen is `X-Momor-Tier`.
- `<model>:<variant>` (a Zen variant such as `deepseek-v4-flash-free:max`): that model with the
  variant as its `reasoning_effort`.
- `max_tokens` left out: 2048 for a whole answer, 4096 for a stream, never above the serving
  model's `maxOutputTokens`.

None of these fields reaches a provider. Seed 000's `POST /models` stays stateless, and so does
seed 001's route: memory lives on this alias only.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.backend import Backend
from ...api.flow import Prepared, Routed, generate, routed_call
from ...call import Call
from ...catalog import Catalog
from ...door_http import json_response
from ...errors import MomorError
from ...events import Assembler, Event
from ...logs import logger
from ...routing import families, memory
from ...routing.classify import classify
from ...routing.plan import Candidate, logging_plans
from . import parse as openai
from . import write as openai_answer
from .route import OpenAIDoor

PATHS = ("/router/v1/chat/completions", "/router/chat/completions")
CHAT_ID_ALIASES = ("chat_id", "conversation_id", "thread_id", "memory_id")
ROUTER_FIELDS = (*CHAT_ID_ALIASES, "new_chat", "context", "prompt")
"""Read here and taken off the body: no provider knows them."""
DEFAULT_MAX_TOKENS = 2048
DEFAULT_MAX_TOKENS_STREAM = 4096
_CONTEXT = {True: "auto", "auto": "auto", "full": "full", False: "off"}
CHAT_ID_HEADER = "X-Momor-Chat-Id"
MEMORY_HEADER = "X-Momor-Memory"
"""`deferred` on a whole answer whose turn the memory store did not take in time: it is written later
(store/deferred.py), so the next turn may not recall it yet; the record's router.memory says
`stored: deferred` too, streamed or not."""
TIER_HEADER = "X-Momor-Tier"


@dataclass(slots=True)
class RouterReply:
    include_usage: bool
    memory: memory.Ask
    route: families.Ask
    messages: list[Any]
    """The caller's own messages (after `prompt`), before memory: what the new turn said."""
    chat_id: str | None = None
    tier: str | None = None
    """The tier the classifier (or the default) chose; None when the caller named a model."""
    memory_deferred: bool = False
    """The turn's memory write was not taken in time: it is written later (X-Momor-Memory: deferred)."""


def read_memory(body: dict[str, Any]) -> memory.Ask:
    """chat_id (or an alias), new_chat and context, checked; JSON null is "not given". Raises a 400
    naming the field. new_chat with a chat id starts the new chat (new wins: the answer names it)."""
    chat_id = None
    for name in CHAT_ID_ALIASES:
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not memory.CHAT_ID_PATTERN.fullmatch(value):
            # The value is not echoed: it is the caller's text, and may be anything.
            raise openai.invalid(f"{name} must be a string of 1 to {memory.CHAT_ID_MAX} characters: "
                                 f"{memory.CHAT_ID_CHARACTERS}.", name)
        chat_id = value
        break
    new = body.get("new_chat")
    if new is not None and not isinstance(new, bool):
        raise openai.invalid("new_chat must be true or false.", "new_chat")
    context = body.get("context")
    mode = "auto" if context is None else _CONTEXT.get(context) if isinstance(context, bool | str) else None
    if mode is None:
        raise openai.invalid("context must be true, false, \"auto\" or \"full\".", "context")
    return memory.Ask(None if new else chat_id, mode, bool(new))  # type: ignore[arg-type]


_ASSISTANT_WORDS = frozenset({"model", "ai", "bot", "chatbot"})
_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def _known_roles(messages: list[Any]) -> list[Any] | None:
    """Seed 003 does not validate roles: a message whose role Chat Completions does not have is read
    as an assistant message when its role names the model (Gemini's `model`, `ai`, `bot`), else as
    a user message. None when every role is known. The body sent on to a Chat Completions offering
    keeps the roles as written; memory never keeps such a message (memory.said)."""
    if all(not isinstance(m, dict) or _known_role(m.get("role")) for m in messages):
        return None
    out = []
    for m in messages:
        if isinstance(m, dict) and not _known_role(m.get("role")):
            role = m.get("role")
            word = role.strip().lower() if isinstance(role, str) else ""
            m = {**m, "role": "assistant" if word in _ASSISTANT_WORDS else "user"}
        out.append(m)
    return out


def _known_role(role: Any) -> bool:
    return isinstance(role, str) and role in _CHAT_ROLES  # a role may be any JSON value, a list too


def _messages(body: dict[str, Any]) -> list[Any]:
    messages = body.get("messages")
    if isinstance(messages, list) and messages:
        return messages
    prompt = body.get("prompt")
    if prompt is None:
        return messages if isinstance(messages, list) else []
    if not isinstance(prompt, str):
        raise openai.invalid("prompt must be a string.", "prompt")
    return [{"role": "user", "content": prompt}]


def _ceiling_of(default: int, candidate: Candidate) -> int:
    """The router's max_tokens for one candidate: `default`, within the model's output maximum."""
    cap = candidate.model.capabilities.max_output_tokens
    return min(default, cap) if cap else default


def _ceiling(default: int) -> Any:
    """The call as one candidate is sent it, with the router's max_tokens (`_ceiling_of`)."""

    def adjust(call: Call, candidate: Candidate) -> Call:
        params = call.params.model_copy(update={"max_tokens": _ceiling_of(default, candidate)})
        return dataclasses.replace(call, params=params)

    return adjust


def _body_ceiling(default: int) -> Any:
    """The caller's own body as one candidate is sent it (passthrough), with the same max_tokens."""

    def adjust_body(body: dict[str, Any], candidate: Candidate) -> dict[str, Any]:
        return {**body, "max_tokens": _ceiling_of(default, candidate)}

    return adjust_body


class RouterDoor(OpenAIDoor):
    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        asked = read_memory(body)
        messages = _messages(body)
        route = families.read(body.get("model"), body.get("models"), catalog)
        rest = {k: v for k, v in body.items() if k not in ROUTER_FIELDS}
        known = _known_roles(messages)
        rest["messages"] = messages if known is None else known
        if route.kind == "model":  # by its canonical name, however the caller named it (a Zen id, a variant)
            rest["model"] = route.selectors[0].name
        if route.variant is not None:
            rest.setdefault("reasoning_effort", route.variant)  # a Zen variant is a reasoning depth
        if route.kind in ("auto", "family", "tier"):
            # Planned again once the tier is known (router_operation); every model meanwhile.
            rest.pop("models", None)
            rest["model"] = "auto"
        routed = openai.parse(rest)
        if known is not None and routed.caller_body is not None:  # the wire of the roles as written
            own = routed.caller_body
            routed.caller_body = dataclasses.replace(own, body={**own.body, "messages": messages})
        routed.written_selectors = openai._written_selectors(body) if route.kind in ("model", "selectors") \
            else body.get("model", "auto")
        if body.get("max_tokens") is None and body.get("max_completion_tokens") is None:
            default = DEFAULT_MAX_TOKENS_STREAM if routed.call.stream else DEFAULT_MAX_TOKENS
            routed.adjust, routed.adjust_body = _ceiling(default), _body_ceiling(default)
        routed.reply = RouterReply(openai.include_usage(body), asked, route, messages)
        return routed

    def answer(self, request_id: str, routed: Routed, candidate: Candidate, assembler: Assembler,
               passthrough: bool) -> Response:
        response = super().answer(request_id, routed, candidate, assembler, passthrough)
        reply: RouterReply = routed.reply
        body = orjson.loads(response.body)
        body["chat_id"] = reply.chat_id
        out = json_response(body)
        out.headers.update(_headers(reply))
        return out

    def stream_headers(self, routed: Routed, candidate: Candidate) -> dict[str, str]:
        return {**super().stream_headers(routed, candidate), **_headers(routed.reply)}

    async def stream(
        self, request_id: str, routed: Routed, candidate: Candidate, events: AsyncIterator[Event], passthrough: bool
    ) -> AsyncIterator[bytes]:
        """The OpenAI door's stream, with `chat_id` on its first chunk as on a whole answer: a
        client that reads only the stream (no headers) still learns a new chat's id."""
        frames = super().stream(request_id, routed, candidate, events, passthrough)
        try:
            async for frame in frames:
                yield _with_chat_id(frame, routed.reply.chat_id)
                break
            async for frame in frames:
                yield frame
        finally:
            await frames.aclose()  # a caller who leaves stops the upstream call, as on the OpenAI route


def _with_chat_id(frame: bytes, chat_id: str | None) -> bytes:
    if chat_id is None or not frame.startswith(b"data: {") or frame.count(b"\n\n") != 1:
        return frame
    return openai_answer.data_line({**orjson.loads(frame[6:]), "chat_id": chat_id})


def _headers(reply: RouterReply) -> dict[str, str]:
    headers = {CHAT_ID_HEADER: reply.chat_id} if reply.chat_id else {}
    if reply.tier is not None:
        headers[TIER_HEADER] = reply.tier
    if reply.memory_deferred:  # a whole answer only: a stream's headers went before its turn was kept
        headers[MEMORY_HEADER] = "deferred"
    return headers


def _chat_id(asked: memory.Ask, caller_id: str) -> str:
    if asked.new:
        return "chat_" + uuid.uuid4().hex
    return asked.chat_id if asked.chat_id is not None else memory.default_chat_id(caller_id)


def _canonical(turns: list[dict[str, Any]]) -> list[Any]:
    return openai.map_messages(turns)[1]


def operation(backend: Backend) -> Any:
    """The router's steps between planning and the answer: memory, then classification."""

    async def router_operation(p: Prepared) -> Response:
        routed, recorder = p.routed, p.recorder
        reply: RouterReply = routed.reply
        reply.chat_id = _chat_id(reply.memory, recorder.caller_id)
        try:
            found = await memory.recall(reply.memory, recorder.caller_id, reply.chat_id, reply.messages)
        except Exception:
            logger.exception("memory not read", extra={"request_id": recorder.request_id})
            raise MomorError("Conversation memory is unavailable; retry shortly.", status=503) from None
        routed.call, routed.caller_body = memory.with_memory(routed.call, routed.caller_body, found.injected,
                                                             _canonical)
        catalog = await backend.catalog()
        tier, note = None, {}
        if reply.route.classified:
            decided = await classify(catalog, routed.call, recorder, p.resolve_key, routed.prio)
            tier, note = decided.tier, {"tierSource": decided.source, "tierNote": decided.note}
        elif reply.route.kind == "tier":
            tier, note = reply.route.tier, {"tierSource": "asked"}
        reply.tier = tier
        recorder.router = {
            "route": reply.route.kind, "tier": tier, **note,
            "memory": {"mode": reply.memory.mode, "injected": len(found.injected), "resent": found.resent},
        }
        with logging_plans() as p.plan_log:  # the record's plan is this one (api/explain.compact)
            p.candidates = families.candidates(reply.route, tier, catalog, routed.prio, routed.needs)

        async def keep(assembler: Assembler) -> None:
            if await memory.remember(found, assembler) is False:  # written later: the answer says so
                reply.memory_deferred = True
                recorder.router["memory"]["stored"] = "deferred"

        p.after_answer = keep
        return await generate(p)

    return router_operation


def routes(backend: Backend) -> list[Route]:
    door = RouterDoor()
    run = operation(backend)

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=request.scope["path"], operation=run)

    return [Route(path, create, methods=["POST"]) for path in PATHS]

