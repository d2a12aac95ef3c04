"""POST /messages and /messages/count_tokens: the Anthropic dialect's routes (seed 004).

Both answer at /v1/... too, since the Anthropic SDK posts to `{base_url}/v1/messages`: an
`anthropic.Anthropic(base_url=<Momor>, api_key=<Momor key>)` works unchanged. The key is read
from `X-API-Key` or `Authorization: Bearer` (the SDK sends the latter).

Headers (seed 004; the names are Momor's):

    request   x-momor-service-tier   priority | standard | flex: the capacity the call is served
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
                                     same tier; any: any model. Flex and free-tier calls do not
                                     overflow. Overflow candidates are tried only after the asked
                                     ones, and skipped (on the record) when the asked ones failed
                                     for any other reason.
    response  x-momor-service-tier   the tier billed: the provider's own word where its answer
                                     names one (an Anthropic offering's usage.service_tier, whole
                                     answers), otherwise the tier asked for where the provider
                                     honours serviceTier, else standard.
              x-momor-cache-token    the token naming the offering that served.
              x-momor-overflow-step  off (an asked offering served) | model | class | any.
              x-momor-token-count    count_tokens only: provider (the Anthropic offering's own
                                     count_tokens endpoint: exact for that model) or estimate
                                     (momor.tokens' local heuristic).
              request-id             Momor's request id, as Anthropic's SDK reads it
                                     (`_request_id`); X-Momor-Request-Id carries the same.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from .. import tokens
from ..call import Parameters
from ..catalog import Catalog
from ..doors import anthropic, anthropic_answer
from ..errors import MomorError, ProviderError, RequestError
from ..events import Assembler, Event, Raw
from ..http import bearer_token, check_content_type, new_request_id, parse_json_object, read_body
from ..logs import logger
from ..providers.anthropic import count_tokens_request
from ..providers.base import Target
from ..providers.transport import shared_client
from ..routing.plan import Candidate, check_provider_names, plan
from ..routing.selectors import Prioritization, Selector
from .backend import Backend
from .flow import REQUEST_ID_HEADER, Routed, routed_call
from .models import json_response

TIER_HEADER = "x-momor-service-tier"
CACHE_HEADER = "x-momor-cache-token"
OVERFLOW_HEADER = "x-momor-overflow"
STEP_HEADER = "x-momor-overflow-step"
COUNT_HEADER = "x-momor-token-count"
TIERS = ("priority", "standard", "flex")
OVERFLOW = ("off", "model", "class", "any")
CAPACITY_STATUSES = frozenset({429, 503, 529})
_TOKEN_PREFIX = "mct1."
_COUNT_TIMEOUT = 30.0


def api_key(request: Request) -> str | None:
    key = request.headers.get("x-api-key", "").strip()
    return key or bearer_token(request)


# ---------------------------------------------------------------------------------------------
# The cache token


def cache_token(candidate: Candidate) -> str:
    payload = orjson.dumps({"m": candidate.model.name, "p": candidate.provider.name})
    return _TOKEN_PREFIX + base64.urlsafe_b64encode(payload).decode().rstrip("=")


def read_cache_token(token: str | None) -> tuple[str, str] | None:
    """(model, provider) named by a cache token, or None for a token Momor did not write."""
    if not token or not token.startswith(_TOKEN_PREFIX):
        return None
    payload = token[len(_TOKEN_PREFIX):]
    try:
        data = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("m"), str) or not isinstance(data.get("p"), str):
        return None
    return data["m"], data["p"]


def with_affinity(prio: Prioritization, token: str | None, catalog: Catalog) -> Prioritization:
    """The provider that served the conversation before leads, when the catalog still has it."""
    named = read_cache_token(token)
    if named is None:
        return prio
    model, provider = named
    offered = any(m.name == model and any(o.provider == provider for o in m.offerings) for m in catalog.models)
    if not offered or any(provider == p for p in prio.ignore):
        return prio
    return dataclasses.replace(prio, order=(provider, *[p for p in prio.order if p != provider]))


# ---------------------------------------------------------------------------------------------
# Overflow


@dataclasses.dataclass(slots=True)
class Overflow:
    """The asked candidates, and how far past them a capacity refusal may reach."""

    mode: str = "off"
    asked: frozenset[tuple[str, str]] = frozenset()
    models: frozenset[str] = frozenset()
    tiers: frozenset[str] = frozenset()

    def step(self, candidate: Candidate) -> str:
        if (candidate.model.name, candidate.provider.name) in self.asked or self.mode == "off":
            return "off"
        if candidate.model.name in self.models:
            return "model"
        return "class" if candidate.model.tier in self.tiers else "any"

    def selectors(self) -> list[Selector]:
        if self.mode == "model":
            return [Selector(name=name, written=f"overflow:{name}") for name in sorted(self.models)]
        if self.mode == "class":
            return [Selector(tier=tier, written=f"overflow:tier/{tier}") for tier in sorted(self.tiers)]
        if self.mode == "any":
            return [Selector(written="overflow:any")]
        return []

    def gate(self, candidate: Candidate, attempts: list[Any]) -> str | None:
        if self.step(candidate) == "off":
            return None
        tried = [a for a in attempts if a.status != "skipped" and (a.model, a.provider) in self.asked]
        if tried and all(a.http_status in CAPACITY_STATUSES for a in tried):
            return None
        return "overflow: the asked model's own capacity did not refuse the call"


def asked_candidates(request: Routed, catalog: Catalog) -> list[Candidate]:
    """The candidates the selectors name, or [] when they cannot be planned (the flow plans
    again and refuses the call in its own words)."""
    try:
        return plan(catalog, request.selectors, request.prio, request.needs)
    except MomorError:
        return []


def overflow_for(mode: str, asked: list[Candidate], tier: str | None) -> Overflow:
    if mode == "off" or not asked or tier == "flex" or any(c.model.tier == "free" for c in asked):
        return Overflow()
    return Overflow(
        mode=mode,
        asked=frozenset((c.model.name, c.provider.name) for c in asked),
        models=frozenset(c.model.name for c in asked),
        tiers=frozenset(c.model.tier for c in asked if c.model.tier),
    )


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
    value = request.headers.get(name)
    if value is None:
        return None
    value = value.strip().lower()
    if value not in allowed:
        raise RequestError(f"{name}: {value!r} is not one of {', '.join(allowed)}", param=name)
    return value


# ---------------------------------------------------------------------------------------------
# The door


class AnthropicDoor:
    """One request's door: it keeps what the headers asked for, to name what served."""

    dialect = "anthropic"

    def __init__(self) -> None:
        self.tier: str | None = None
        self.overflow = Overflow()

    def token(self, request: Request) -> str | None:
        return api_key(request)

    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        self.tier = _header_choice(request, TIER_HEADER, TIERS)
        mode = _header_choice(request, OVERFLOW_HEADER, OVERFLOW) or "off"
        req = anthropic.parse(body)
        if self.tier is not None:
            req.call.params = req.call.params.model_copy(update={"service_tier": self.tier})
        req.prio = with_affinity(req.prio, request.headers.get(CACHE_HEADER), catalog)
        asked = asked_candidates(req, catalog)
        req.call.params = clamp_max_tokens(req.call.params, asked)
        self.overflow = overflow_for(mode, asked, self.tier)
        req.selectors = req.selectors + self.overflow.selectors()
        req.gate = self.overflow.gate if self.overflow.mode != "off" else None
        return req

    def _headers(self, request_id: str, candidate: Candidate, billed: str | None = None) -> dict[str, str]:
        honoured = "serviceTier" in candidate.provider.parameters
        return {
            TIER_HEADER: billed or (self.tier if self.tier and honoured else "standard"),
            CACHE_HEADER: cache_token(candidate),
            STEP_HEADER: self.overflow.step(candidate),
            "request-id": request_id,
        }

    def answer(self, request_id: str, candidate: Candidate, assembler: Assembler) -> Response:
        if assembler.raw:
            raw = assembler.raw[-1].data
            body = anthropic_answer.passthrough_body(raw, request_id, candidate)
            billed = anthropic_answer.billed_tier(raw)
        else:
            body = orjson.dumps(anthropic_answer.message(request_id, candidate, assembler))
            billed = None
        return Response(body, media_type="application/json", headers=self._headers(request_id, candidate, billed))

    def stream_headers(self, candidate: Candidate) -> dict[str, str]:
        headers = self._headers("", candidate)
        headers.pop("request-id")
        return headers

    async def stream(
        self, request_id: str, candidate: Candidate, events: AsyncIterator[Event]
    ) -> AsyncIterator[bytes]:
        writer = anthropic_answer.StreamWriter(request_id, candidate)
        passthrough: bool | None = None
        try:
            async for event in events:
                if passthrough is None:
                    passthrough = isinstance(event, Raw)
                    if not passthrough:
                        yield writer.start()
                if passthrough:
                    if isinstance(event, Raw):
                        yield anthropic_answer.passthrough_event(event, request_id, candidate)
                    continue
                frame = writer.event(event)
                if frame:
                    yield frame
        except ProviderError as exc:
            yield writer.error(anthropic_answer.stream_error_status(exc), exc.detail)

    def error(self, request_id: str, exc: MomorError) -> Response:
        return anthropic_error(request_id, exc.status, exc.detail)


def anthropic_error(request_id: str, status: int, message: str) -> Response:
    body = {**anthropic_answer.error_body(status, message), "request_id": request_id}
    return Response(orjson.dumps(body), status_code=status, media_type="application/json",
                    headers={"request-id": request_id})


# ---------------------------------------------------------------------------------------------
# count_tokens


async def _provider_count(backend: Backend, req: Routed, candidates: list[Candidate],
                          zdr: bool) -> int | None:
    """The count from the first Anthropic-wire offering of the model that would serve."""
    if not candidates or req.call.raw is None:
        return None
    first_model = candidates[0].model.name
    resolve = await backend.key_resolver(req.keys, zdr=zdr)
    for candidate in candidates:
        if candidate.model.name != first_model or candidate.provider.wire != anthropic.WIRE:
            continue
        key = resolve(candidate)
        if isinstance(key, str):
            continue
        target = Target(candidate.provider, candidate.offering, candidate.model, key.key, key.extra, key.source)
        wire_request = count_tokens_request(req.call.raw, target)
        url = candidate.provider.base_url.rstrip("/") + wire_request.path
        try:
            response = await shared_client().post(
                url, json=wire_request.body, headers={**candidate.provider.headers, **wire_request.headers},
                timeout=_COUNT_TIMEOUT,
            )
            if response.status_code == 200:
                count = response.json().get("input_tokens")
                if isinstance(count, int):
                    return count
            logger.warning("count_tokens failed upstream", extra={"status": response.status_code})
        except Exception:  # any failure falls back to the local estimate
            logger.exception("count_tokens failed upstream")
    return None


async def _count_tokens(request: Request, backend: Backend) -> Response:
    caller = await backend.authenticate(api_key(request))
    if caller is None:
        raise RequestError("A valid Momor API key is required.", status=401)
    check_content_type(request)
    req = anthropic.parse(parse_json_object(await read_body(request)), require_max_tokens=False)
    catalog = await backend.catalog()
    req.prio = with_affinity(req.prio, request.headers.get(CACHE_HEADER), catalog)
    check_provider_names(catalog, req.prio, "provider")
    candidates = plan(catalog, req.selectors, req.prio, req.needs)
    zdr = req.prio.zdr or bool(getattr(caller, "zdr", False))
    count = await _provider_count(backend, req, candidates, zdr)
    how = "provider"
    if count is None:
        count, how = tokens.count_input_tokens(req.call), "estimate"
    response = json_response({"input_tokens": count})
    response.headers[COUNT_HEADER] = how
    return response


def router(backend: Backend) -> APIRouter:
    api = APIRouter()

    async def create(request: Request) -> Response:
        return await routed_call(request, AnthropicDoor(), backend, route=request.url.path)

    async def count(request: Request) -> Response:
        request_id = new_request_id()
        try:
            response = await _count_tokens(request, backend)
        except MomorError as exc:
            response = anthropic_error(request_id, exc.status, exc.detail)
        response.headers[REQUEST_ID_HEADER] = request_id
        response.headers["request-id"] = request_id
        return response

    for prefix in ("", "/v1"):
        api.add_api_route(f"{prefix}/messages", create, methods=["POST"])
        api.add_api_route(f"{prefix}/messages/count_tokens", count, methods=["POST"])
    return api
