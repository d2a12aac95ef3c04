"""POST /v1/chat/completions (and /models/completions): the OpenAI dialect's route (seed 001).

An OpenAI SDK pointed at `<momor>/v1` with a Momor key works unchanged. The call routes exactly as
one sent to POST /models does; only the dialect differs (see `doors/openai.py` and
`doors/openai_answer.py`). A door is made per request: it keeps what the caller asked of the answer
(`stream_options.include_usage`) between reading the request and writing the stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..catalog import Catalog
from ..doors import openai, openai_answer
from ..errors import MomorError, ProviderError
from ..events import Assembler, Event, Raw
from ..http import bearer_token
from ..logs import logger
from ..routing.plan import Candidate
from .backend import Backend
from .flow import Routed, routed_call
from .models import json_response

PATHS = ("/v1/chat/completions", "/models/completions")


class OpenAIDoor:
    dialect = "openai"

    def __init__(self) -> None:
        self.include_usage = False
        self.raw_wire: str | None = None

    def token(self, request: Request) -> str | None:
        return bearer_token(request)

    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        req = openai.parse(body)
        self.include_usage = openai.include_usage(body)
        self.raw_wire = req.call.raw_wire
        return req

    def _same_protocol(self, candidate: Candidate) -> bool:
        return self.raw_wire is not None and candidate.provider.wire == self.raw_wire

    def answer(self, request_id: str, candidate: Candidate, assembler: Assembler) -> Response:
        if self._same_protocol(candidate) and assembler.raw:
            try:
                return json_response(openai_answer.rewrite_completion(assembler.raw[-1].data, request_id, candidate))
            except ValueError:
                # The wire decoded the body already, so this cannot happen; the translation still can.
                logger.exception("passthrough answer not rewritable", extra={"request_id": request_id})
        return json_response(openai_answer.completion(request_id, candidate, assembler))

    def stream_headers(self, candidate: Candidate) -> dict[str, str]:
        return {"X-Momor-Provider": candidate.provider.name, "X-Momor-Model": openai_answer.model_id(candidate)}

    async def stream(
        self, request_id: str, candidate: Candidate, events: AsyncIterator[Event]
    ) -> AsyncIterator[bytes]:
        if self._same_protocol(candidate):
            frames = self._passthrough(request_id, candidate, events)
        else:
            frames = self._translated(request_id, candidate, events)
        try:
            async for frame in frames:
                yield frame
        except ProviderError as exc:
            # A Chat Completions stream never moves on once output has begun: one error chunk, no [DONE].
            yield openai_answer.error_chunk(request_id, candidate, 502, exc.detail)

    async def _passthrough(
        self, request_id: str, candidate: Candidate, events: AsyncIterator[Event]
    ) -> AsyncIterator[bytes]:
        async for event in events:
            if isinstance(event, Raw):
                chunk = openai_answer.rewrite_chunk(event.data, request_id, candidate, self.include_usage)
                if chunk is not None:
                    yield openai_answer.data_line(chunk)
        yield openai_answer.DONE

    async def _translated(
        self, request_id: str, candidate: Candidate, events: AsyncIterator[Event]
    ) -> AsyncIterator[bytes]:
        writer = openai_answer.ChunkWriter(request_id, candidate, self.include_usage)
        yield writer.start()
        async for event in events:
            if isinstance(event, Raw):
                continue
            frame = writer.event(event)
            if frame:
                yield frame

    def error(self, request_id: str, exc: MomorError) -> Response:
        return json_response(openai_answer.error_object(exc.status, exc.detail), exc.status)


def router(backend: Backend) -> APIRouter:
    api = APIRouter()

    async def create(request: Request) -> Response:
        return await routed_call(request, OpenAIDoor(), backend, route=request.url.path)

    for path in PATHS:
        api.add_api_route(path, create, methods=["POST"], include_in_schema=True)
    return api
