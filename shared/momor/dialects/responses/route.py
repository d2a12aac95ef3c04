"""POST /v1/responses (and /responses), GET and DELETE /v1/responses/{id}, GET .../{id}/input_items:
OpenAI's Responses API as a dialect (issue 24).

A call routes exactly as one sent to POST /models does (api/flow.py); this door reads the request
(`parse.py`), writes the response object and its event stream (`write.py`), and adds one step before
the plan (`ResponsesDoor.complete`, the flow's `Completes` hook): the conversation a
`previous_response_id` or an `item_reference` names is read from the caller's stored responses
(store/responses.py) and put before the new input, in canonical form, so the next turn runs on any
wire with its reasoning state. The call is planned once, with that whole conversation: the
explanation, the record's plan and the budget's hold see what is sent. Once an answer is complete,
and before its last byte leaves (`responses_operation`), the response is stored (unless `store` is
false), so the caller's next turn finds it.

An offering on the `openai_responses` wire gets the caller's body as written (parse.passthrough) and
answers in its own words, with Momor's response id and model written over, when the input is in
OpenAI's own words; a conversation expanded from the store goes to it translated, like to any wire,
but for a call with built-in tools (web search...), which only that wire runs: it is sent the
caller's body with the expanded conversation, in OpenAI's words, as its input (the stored turns' own
web_search_call items and citations included, openai_responses.py keeps them on the parts' state).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
from pydantic import TypeAdapter
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api import response_state, route_limits
from ...api.auth import Unauthorized
from ...api.backend import Backend, Caller
from ...api.flow import Prepared, generate, routed_call
from ...catalog import Catalog
from ...door_http import REQUEST_ID_HEADER, id_headers, json_response, new_request_id
from ...errors import MomorError, ProviderError, RequestError
from ...events import Assembler, Event, Finish, Raw
from ...logs import logger
from ...messages import Message, ThinkingMessage, ToolCallMessage, dump_messages
from ...routing.plan import Candidate
from ...routing.request import Routed
from . import ids, parse, write
from .input import Ref, invalid, named, read_items

PATHS = ("/v1/responses", "/responses")
_MESSAGES = TypeAdapter(list[Message])


class ResponsesDoor:
    dialect = "responses"

    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        return parse.parse(body)

    async def complete(self, routed: Routed, caller: Caller, backend: Backend, request_id: str) -> None:
        """The stored conversation put before the new input, before the call is planned (api/flow.py
        `Completes`): the plan, its explanation, the record's plan and the budget's hold then see the
        whole conversation, whose earlier turns may need what the new input does not (an image)."""
        expanded = await _expand(routed, caller.id, request_id)  # a store that cannot answer: 503
        reply = routed.reply
        if expanded and reply.read.built_in:
            # A built-in tool's item written in the input exists only as written: it cannot join a
            # conversation that goes to OpenAI translated.
            raise invalid(f"{', '.join(sorted(set(reply.read.built_in)))}: a built-in tool's item goes to OpenAI "
                          f"in your own words, so it cannot be combined with previous_response_id or "
                          f"item_reference.", "input")
        if expanded:
            # Built-in tools (web search...) still go as written, with the conversation in OpenAI's
            # words in place of the input (parse.expanded_passthrough); anything else is translated.
            if reply.built_in:
                parse.expanded_passthrough(routed)
            else:
                parse.drop_passthrough(routed)
            routed.needs = parse.needs_for(routed.call, routed.reply)

    def answer(self, request_id: str, routed: Routed, candidate: Candidate, assembler: Assembler,
               passthrough: bool) -> Response:
        reply = routed.reply
        response = json_response(reply.final if reply.final is not None else
                                 _whole(request_id, routed, candidate, assembler, passthrough))
        # Who served, on a whole answer too: the response object names the model, never the provider.
        response.headers.update(self.stream_headers(routed, candidate))
        return response

    def stream_headers(self, routed: Routed, candidate: Candidate) -> dict[str, str]:
        return {"X-Momor-Provider": candidate.provider.name, "X-Momor-Model": candidate.model.public_id}

    async def stream(
        self, request_id: str, routed: Routed, candidate: Candidate, events: AsyncIterator[Event], passthrough: bool
    ) -> AsyncIterator[bytes]:
        reply = routed.reply
        writer = write.EventWriter(request_id, candidate, reply)
        if not passthrough:
            reply.writer = writer
            yield writer.start()
        try:
            async for event in events:
                if isinstance(event, Raw):
                    if passthrough:
                        yield _raw_frame(event, request_id, candidate, reply, writer)
                    continue
                if not passthrough:
                    frame = writer.event(event)
                    if frame:
                        yield frame
            if not passthrough:
                yield writer.end()
        except ProviderError as exc:
            # A Responses stream never moves on once output has begun: it ends failed.
            yield writer.failed(exc.status, exc.detail, code=exc.code)

    def error(self, request_id: str, exc: MomorError) -> Response:
        return json_response(write.error_object(exc.status, exc.detail, exc.param or exc.provider_param, exc.code),
                             exc.status)

    def finish_word(self, finish: Finish) -> str:
        status, incomplete = write.status_of(finish)
        return incomplete["reason"] if incomplete else status


def _whole(request_id: str, routed: Routed, candidate: Candidate, assembler: Assembler,
           passthrough: bool) -> dict[str, Any]:
    if passthrough and assembler.raw:
        return write.rewrite_response(orjson.loads(assembler.raw[-1].data), request_id, candidate, routed.reply)
    return write.response_object(request_id, candidate, routed.reply, assembler)


def _raw_frame(event: Raw, request_id: str, candidate: Candidate, reply: Any, writer: write.EventWriter) -> bytes:
    """One of the provider's own stream events, its response (created, completed...) renamed as Momor's;
    the sequence numbers are the provider's, and the writer continues them should the stream fail."""
    data = dict(event.parsed) if isinstance(event.parsed, dict) else orjson.loads(event.data)
    if isinstance(data.get("response"), dict):
        data["response"] = write.rewrite_response(data["response"], request_id, candidate, reply)
        if data.get("type") in ("response.completed", "response.incomplete"):
            reply.final = data["response"]
    if isinstance(data.get("sequence_number"), int):
        writer.seq = data["sequence_number"] + 1
    return write.frame(data) if isinstance(data.get("type"), str) else b""


# ---------------------------------------------------------------------------------------------
# State: expanded before the call, stored after it


async def _expand(routed: Routed, caller: str, request_id: str) -> bool:
    """The stored conversation before the new input; True when anything came from the store. Only
    the caller's own responses are read: another key's id is not found, as a missing one."""
    reply = routed.reply
    conversation: list[Any] = []
    if reply.previous_response_id is not None:
        # An id Momor never wrote is not looked up (nor is caller text sent to the table as a key).
        found = await response_state.read(caller, reply.previous_response_id) \
            if ids.request_of(reply.previous_response_id) else None
        if found is None:
            raise RequestError(f"Previous response with id '{_shown(reply.previous_response_id)}' not found.",
                               param="previous_response_id", code="previous_response_not_found")
        conversation = _MESSAGES.validate_python(found.conversation)
    items = named(reply.read, request_id)
    refs = [e for e in reply.read.entries if isinstance(e, Ref)]
    targets = await _referenced(caller, refs)
    new: list[Any] = []
    for entry in reply.read.entries:
        new.extend(targets[entry.id][1] if isinstance(entry, Ref) else [entry])
    reply.input_items = [targets[item["id"]][0] if item.get("type") == "item_reference" else item
                         for item in items]
    routed.call.messages = conversation + new
    reply.conversation = list(routed.call.messages)
    return bool(conversation or refs)


async def _referenced(caller: str, refs: list[Ref]) -> dict[str, tuple[dict[str, Any], list[Any]]]:
    """Each referenced item, as stored and as canonical messages; a 400 for an item_reference the
    caller has not (an item Momor wrote, sent back without its state, is then taken as sent)."""
    out: dict[str, tuple[dict[str, Any], list[Any]]] = {}
    loaded: dict[str, Any] = {}
    for ref in refs:
        owner = ids.response_of_item(ref.id)
        if owner is not None and owner not in loaded:
            loaded[owner] = await response_state.read(caller, owner)
        found = loaded.get(owner) if owner is not None else None
        if ref.written is not None:
            out[ref.id] = ({}, [_completed(found, ref)])
            continue
        item = _stored_item(found, ref.id)
        if item is None:
            raise RequestError(f"Item with id '{_shown(ref.id)}' not found.", param="input")
        entries = [_completed(found, e) if isinstance(e, Ref) else e for e in read_items([item])]
        out[ref.id] = (item, entries)
    return out


def _shown(value: str) -> str:
    """An id as an error message repeats it: the caller's own text, so never more than an id's length."""
    return value if len(value) <= 80 else value[:80] + "..."


def _stored_item(found: Any, item_id: str) -> dict[str, Any] | None:
    pool = [*found.input_items, *found.response.get("output", [])] if found is not None else []
    return next((i for i in pool if isinstance(i, dict) and i.get("id") == item_id), None)


def _completed(found: Any, ref: Ref) -> Any:
    """An item Momor wrote, sent back without its state, with the state the store kept (a call's by
    its call id in the stored conversation, reasoning's on the stored item), else as it was sent."""
    if isinstance(ref.written, ToolCallMessage):
        if found is not None and not hasattr(found, "turns"):
            found.turns = _MESSAGES.validate_python(found.conversation)  # read once for all its calls
        turns = found.turns if found is not None else []
        return next((m for m in turns if isinstance(m, ToolCallMessage) and m.call.id == ref.written.call.id),
                    ref.written)
    item = _stored_item(found, ref.id)
    if item is not None and isinstance(item.get("encrypted_content"), str):
        thinking = [e for e in read_items([item]) if isinstance(e, ThinkingMessage)]
        if thinking:
            return thinking[0]
    return ref.written


def operation() -> Any:
    async def responses_operation(p: Prepared) -> Response:
        # The stored state is already expanded and planned with (ResponsesDoor.complete, run by the flow).
        reply = p.routed.reply
        reply.final = None
        reply.writer = None

        async def keep(assembler: Assembler) -> None:
            await _keep(p, assembler)

        p.after_answer = keep
        return await generate(p)

    return responses_operation


async def _keep(p: Prepared, assembler: Assembler) -> None:
    """The complete answer as the caller gets it, stored (store true) before its last byte leaves."""
    reply, recorder = p.routed.reply, p.recorder
    served = recorder.served()
    if served is None:
        return
    if reply.final is None:
        # A whole answer in the provider's own words (Raw) exists only where the attempt loop chose
        # passthrough (routing/passthrough.py), so its presence is that decision, not a second one.
        reply.final = reply.writer.final() if reply.writer is not None else \
            _whole(recorder.request_id, p.routed, served.candidate, assembler, bool(assembler.raw))
    if not reply.store:
        return
    conversation = dump_messages([*reply.conversation, *assembler.messages()])
    entry = response_state.Stored(reply.final, reply.input_items, conversation)
    if not await response_state.keep(recorder.caller_id, reply.final["id"], entry, recorder.request_id):
        reply.final["store"] = False  # the answer is made and paid for: it still goes, saying so


# ---------------------------------------------------------------------------------------------
# Stored responses: read, list input items, delete


def _error(status: int, message: str, param: str | None = None) -> Response:
    request_id = new_request_id()
    response = json_response(write.error_object(status, message, param), status)
    response.headers.update(id_headers(request_id))
    return response


def _not_found(response_id: str) -> Response:
    # Another key's response answers exactly as a missing one: its existence is not told.
    return _error(404, f"Response with id '{_shown(response_id)}' not found.")


def _page(items: list[dict[str, Any]], query: Any) -> dict[str, Any] | Response:
    """input_items' cursor page: `order` desc (the API's default) or asc, `limit` 1-100 (20), `after`."""
    order = query.get("order", "desc")
    limit_text = query.get("limit", "20")
    if order not in ("asc", "desc"):
        return _error(400, "order must be asc or desc.", "order")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= 100:
        return _error(400, "limit must be an integer from 1 to 100.", "limit")
    ordered = items if order == "asc" else list(reversed(items))
    after = query.get("after")
    if after is not None:
        at = next((n for n, i in enumerate(ordered) if i.get("id") == after), None)
        if at is None:
            return _error(400, f"after: no input item with id '{after}'.", "after")
        ordered = ordered[at + 1:]
    data = ordered[:int(limit_text)]
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": len(ordered) > len(data)}


async def _stored(request: Request, owner: str) -> Response:
    """GET or DELETE /v1/responses/{id}, GET .../input_items, for the caller whose id is `owner`."""
    response_id: str = request.path_params["response_id"]
    if ids.request_of(response_id) is None:  # not an id Momor writes: never looked up
        return _not_found(response_id)
    if request.method == "DELETE":
        if not await response_state.forget(owner, response_id):
            return _not_found(response_id)
        return json_response({"id": response_id, "object": "response", "deleted": True})
    found = await response_state.read(owner, response_id, conversation=False)
    if found is None:
        return _not_found(response_id)
    if request.url.path.endswith("/input_items"):
        page = _page(found.input_items, request.query_params)
        return page if isinstance(page, Response) else json_response(page)
    return json_response(found.response)


def routes(backend: Backend) -> list[Route]:
    door = ResponsesDoor()
    run = operation()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=request.scope["path"], operation=run)

    async def stored(request: Request) -> Response:
        try:
            caller = await backend.authenticate(request)
            limited = await route_limits.admit(backend, caller)  # the caller's `:api` bucket
        except Unauthorized:
            return _error(401, "A valid Momor API key is required.")
        except route_limits.RateLimited as exc:
            refused = _error(429, exc.detail)
            refused.headers.update(exc.headers)
            return refused
        try:
            response = await _stored(request, caller.id)
        except MomorError as exc:  # the store did not answer in time: a 503 the caller may retry
            response = _error(exc.status, exc.detail)
        except Exception:  # the store failed: OpenAI's error object and a log line, never a bare 500
            response = _error(500, "Momor failed; the request id identifies this call in its logs.")
            logger.exception("a stored response failed", extra={"request_id": response.headers[REQUEST_ID_HEADER]})
        response.headers.update(limited)
        return response

    routes = [Route(path, create, methods=["POST"]) for path in PATHS]
    for path in PATHS:
        routes += [Route(path + "/{response_id}", stored, methods=["GET", "DELETE"]),
                   Route(path + "/{response_id}/input_items", stored, methods=["GET"])]
    return routes
