"""POST /messages and /messages/count_tokens: the Anthropic dialect's routes (seed 004).

Both answer at /v1/... too, since the Anthropic SDK posts to `{base_url}/v1/messages`: an
`anthropic.Anthropic(base_url=<Momor>, api_key=<Momor key>)` works unchanged. The key (or a
signed-in session's token) is read by api/auth.py, from `X-API-Key` or `Authorization: Bearer`.

Headers (seed 004; the names are Momor's):

    request   anthropic-beta         Anthropic's own: sent on to an Anthropic offering, merged
                                     with the betas its catalog entry lists.
              x-momor-service-tier   priority | standard | flex: the capacity the call is served
                                     from, sent to offerings whose provider honours serviceTier.
              x-momor-cache-token    the token a previous answer gave: its offering is tried first
                                     (its provider leads prioritization.order), so the provider's
                                     prompt cache can serve the conversation again. Opaque; a
                                     token Momor cannot read, or one naming a provider no longer
                                     served, is ignored.
              x-momor-overflow       off (default) | model | class | any: what may serve when the
                                     asked model's own capacity refuses (every attempt at its
                                     offerings failed with 429, 503 or 529). model: the same model
                                     on offerings the selector left out; class: models of the
                                     same tier; any: any model. Flex, background and free-tier
                                     calls do not overflow (routing/overflow.py says which those
                                     are). Overflow candidates are tried only after the asked
                                     ones, and skipped (on the record) when the asked ones failed
                                     for any other reason.
              x-momor-background     true | false (default): no one waits on this call (a
                                     summary, a batch job): it never overflows.
    response  x-momor-service-tier   the tier billed: the provider's own word where its answer
                                     names one (an Anthropic offering's usage.service_tier, whole
                                     answers), otherwise the tier asked for where the provider
                                     honours serviceTier, else standard. A stream asking a tier
                                     of a provider that honours one leaves it out: its headers
                                     go before the provider says (its usage names the tier).
              x-ratelimit-over-limit true when a tier was asked and another was billed (the asked
                                     tier's capacity was over its limit, or the offering has no
                                     such tier), false when the asked tier was billed; absent
                                     when no tier was asked or the billed tier is not yet known.
              x-momor-cache-token    the token naming the offering that served.
              x-momor-overflow-step  off (an asked offering served) | model | class | any.
              x-momor-token-count    count_tokens only: provider (the Anthropic offering's own
                                     count_tokens endpoint: exact for that model) or estimate
                                     (momor.tokens' local heuristic).
              request-id             Momor's request id, as Anthropic's SDK reads it
                                     (`_request_id`), on streams too; X-Momor-Request-Id and
                                     x-request-id carry the same (api/flow.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.backend import Backend
from ...api.flow import Prepared, Routed, routed_call, unbilled
from ...call import Parameters
from ...catalog import Catalog
from ...door_http import headers_of, json_response
from ...errors import MomorError, ProviderError, RequestError
from ...events import Assembler, Event, Finish, Raw
from ...routing.affinity import cache_token, with_affinity
from ...routing.count import count_input_tokens
from ...routing.overflow import Overflow, asked_candidates, overflow_for
from ...routing.plan import Candidate
from . import parse as anthropic
from . import write as anthropic_answer

TIER_HEADER = "x-momor-service-tier"
CACHE_HEADER = "x-momor-cache-token"
OVERFLOW_HEADER = "x-momor-overflow"
BACKGROUND_HEADER = "x-momor-background"
STEP_HEADER = "x-momor-overflow-step"
OVER_LIMIT_HEADER = "x-ratelimit-over-limit"
COUNT_HEADER = "x-momor-token-count"
TIERS = ("priority", "standard", "flex")
OVERFLOW = ("off", "model", "class", "any")


def clamp_max_tokens(params: Parameters, asked: list[Candidate]) -> Parameters:
    """max_tokens above every asked model's output maximum becomes the largest of them (seed 004);
    each wire then holds it to the serving model's own maximum where it knows one."""
    caps = [c.model.capabilities.max_output_tokens for c in asked]
    if not caps or params.max_tokens is None or any(cap is None for cap in caps):
        return params
    largest = max(cap for cap in caps if cap is not None)
    if params.max_tokens <= largest:
        return params
    return params.model_copy(update={"max_tokens": largest})


def _header_choice(request: Request, name: str, allowed: tuple[str, ...]) -> str | None:
    value = headers_of(request).get(name)
    if value is None:
        return None
    value = value.strip().lower()
    if value not in allowed:
        raise RequestError(f"{name}: {value!r} is not one of {', '.join(allowed)}", param=name)
    return value


# ---------------------------------------------------------------------------------------------
# The door


@dataclasses.dataclass(slots=True, frozen=True)
class Reply:
    """What the writer needs from the request: the tier asked, the overflow in force, and whether
    reasoning is shown (not after `thinking: {"type": "disabled"}`: a model that cannot stop
    reasoning, one whose catalog `reasoning` has no `none`, is sent its lowest depth, and its
    reasoning is not returned as thinking blocks)."""

    tier: str | None = None
    overflow: Overflow = dataclasses.field(default_factory=Overflow)
    thinking: bool = True


class AnthropicDoor:
    dialect = "anthropic"
    require_max_tokens = True

    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        tier = _header_choice(request, TIER_HEADER, TIERS)
        mode = _header_choice(request, OVERFLOW_HEADER, OVERFLOW) or "off"
        background = _header_choice(request, BACKGROUND_HEADER, ("true", "false")) == "true"
        req = anthropic.parse(body, require_max_tokens=self.require_max_tokens)
        if req.caller_body is not None:
            betas = tuple(request.headers.getlist("anthropic-beta"))
            req.caller_body = dataclasses.replace(req.caller_body, betas=betas)
        if tier is not None:
            req.call.params = req.call.params.model_copy(update={"service_tier": tier})
        req.prio = with_affinity(req.prio, headers_of(request).get(CACHE_HEADER), catalog)
        asked = asked_candidates(req, catalog)
        req.call.params = clamp_max_tokens(req.call.params, asked)
        overflow = overflow_for(mode, asked, tier, background=background)
        req.selectors = req.selectors + overflow.selectors()
        req.gate = overflow.gate if overflow.mode != "off" else None
        req.billed_prices = overflow.billed_prices if overflow.mode != "off" else None
        req.reply = Reply(tier, overflow, thinking=req.call.params.reasoning_effort != anthropic.DISABLED)
        return req

    def _headers(self, reply: Reply, candidate: Candidate, billed: str | None = None, *, streaming: bool = False
                 ) -> dict[str, str]:
        headers = {CACHE_HEADER: cache_token(candidate), STEP_HEADER: reply.overflow.step(candidate)}
        honoured = "serviceTier" in candidate.provider.parameters
        if billed is None and reply.tier and honoured and streaming:
            # A stream's headers leave before the provider says which tier it billed (Anthropic
            # names it in the stream's usage): the asked tier is not claimed as billed.
            return headers
        tier = billed or (reply.tier if reply.tier and honoured else "standard")
        headers[TIER_HEADER] = tier
        if reply.tier:
            # Seed 004: whether the asked tier was over its limit, so another was billed.
            headers[OVER_LIMIT_HEADER] = "false" if tier == reply.tier else "true"
        return headers

    def answer(self, request_id: str, routed: Routed, candidate: Candidate, assembler: Assembler,
               passthrough: bool) -> Response:
        if passthrough and assembler.raw:
            raw = assembler.raw[-1].data
            body = anthropic_answer.passthrough_body(raw, request_id, candidate)
            billed = anthropic_answer.billed_tier(raw)
        else:
            body = orjson.dumps(anthropic_answer.message(request_id, candidate, assembler,
                                                         thinking=routed.reply.thinking))
            billed = None
        return Response(body, media_type="application/json",
                        headers=self._headers(routed.reply, candidate, billed))

    def stream_headers(self, routed: Routed, candidate: Candidate) -> dict[str, str]:
        return self._headers(routed.reply, candidate, streaming=True)

    async def stream(
        self, request_id: str, routed: Routed, candidate: Candidate, events: AsyncIterator[Event], passthrough: bool
    ) -> AsyncIterator[bytes]:
        writer = anthropic_answer.StreamWriter(request_id, candidate, thinking=routed.reply.thinking)
        try:
            # Both loops inline, not generators of their own: every event of a long stream crosses
            # each generator layer.
            if passthrough and not routed.rollover:
                async for event in events:
                    if isinstance(event, Raw):
                        yield anthropic_answer.passthrough_event(event, request_id, candidate)
            else:
                started = False
                async for event in events:
                    if not started:  # message_start goes with the first event
                        started = True
                        yield writer.start()
                    # Rollover (routing/rollover.py OPT_IN): Momor writes its own wire's events too,
                    # from what it decoded of them, so a continuation reads as the same message.
                    if isinstance(event, Raw):
                        frame = b"".join(writer.event(one) for one in event.decoded)
                    else:
                        frame = writer.event(event)
                    if frame:
                        yield frame
        except ProviderError as exc:
            yield writer.error(anthropic_answer.stream_error_status(exc), exc.detail, code=exc.code)

    def error(self, request_id: str, exc: MomorError) -> Response:
        return anthropic_error(request_id, exc.status, exc.detail, code=exc.code)

    def finish_word(self, finish: Finish) -> str:
        return anthropic_answer.stop_reason(finish)


class CountDoor(AnthropicDoor):
    """count_tokens reads the same request, less the need for max_tokens."""

    require_max_tokens = False


def anthropic_error(request_id: str, status: int, message: str, *, code: str | None = None) -> Response:
    body = {**anthropic_answer.error_body(status, message, code=code), "request_id": request_id}
    return Response(orjson.dumps(body), status_code=status, media_type="application/json",
                    headers={"request-id": request_id})


@unbilled  # counting is free: no budget hold
async def _count(p: Prepared) -> Response:
    """count_tokens, as a routed operation: authenticated, rate limited, recorded (routing/count.py)."""
    count, how = await count_input_tokens(p.routed.call, p.routed.caller_body, p.candidates, p.resolve_key,
                                          p.recorder)
    p.recorder.status_code = 200
    response = json_response({"input_tokens": count})
    response.headers[COUNT_HEADER] = how
    return response


def routes(backend: Backend) -> list[Route]:
    door, count_door = AnthropicDoor(), CountDoor()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=request.scope["path"])

    async def count(request: Request) -> Response:
        return await routed_call(request, count_door, backend, route=request.scope["path"], operation=_count)

    return [route for prefix in ("", "/v1") for route in (
        Route(f"{prefix}/messages", create, methods=["POST"]),
        Route(f"{prefix}/messages/count_tokens", count, methods=["POST"]),
    )]
