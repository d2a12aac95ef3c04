"""POST /v1/chat/completions (and /models/completions): the OpenAI dialect's route (seed 001).

An OpenAI SDK pointed at `<momor>/v1` with a Momor key works unchanged. The call routes exactly as
one sent to POST /models does; only the dialect differs (`parse.py` reads the request, `write.py`
writes answers, chunks and errors). What the writer needs from the request (whether the caller
asked for a usage chunk) travels in `Routed.reply`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.backend import Backend
from ...api.flow import Routed, routed_call
from ...catalog import Catalog
from ...door_http import json_response
from ...errors import MomorError, ProviderError
from ...events import Assembler, Event, Finish, Raw
from ...logs import logger
from ...routing.plan import Candidate
from . import parse as openai
from . import write as openai_answer

PATHS = ("/v1/chat/completions", "/models/completions")


@dataclass(slots=True, frozen=True)
class Reply:
    include_usage: bool
    """stream_options.include_usage: the caller receives the usage chunk."""


class OpenAIDoor:
    dialect = "openai"

    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        req = openai.parse(body)
        req.reply = Reply(include_usage=openai.include_usage(body))
        return req

    def answer(self, request_id: str, routed: Routed, candidate: Candidate, assembler: Assembler,
               passthrough: bool) -> Response:
        if passthrough and assembler.raw:
            try:
                return json_response(openai_answer.rewrite_completion(assembler.raw[-1].data, request_id, candidate))
            except ValueError:
                # The wire decoded the body already, so this cannot happen; the translation still can.
                logger.exception("passthrough answer not rewritable", extra={"request_id": request_id})
        return json_response(openai_answer.completion(request_id, candidate, assembler))

    def stream_headers(self, routed: Routed, candidate: Candidate) -> dict[str, str]:
        return {"X-Momor-Provider": candidate.provider.name, "X-Momor-Model": candidate.model.public_id}

    async def stream(
        self, request_id: str, routed: Routed, candidate: Candidate, events: AsyncIterator[Event], passthrough: bool
    ) -> AsyncIterator[bytes]:
        # Both loops inline, not generators of their own: every event of a long stream crosses
        # each generator layer, which costs more than the work done in it.
        include_usage = routed.reply.include_usage
        try:
            if passthrough and not routed.rollover:
                for_caller = openai_answer.rewrite_chunk
                async for event in events:
                    if isinstance(event, Raw):
                        chunk = for_caller(event.data, request_id, candidate, include_usage, event.parsed)
                        if chunk is not None:
                            yield openai_answer.data_line(chunk)
                yield openai_answer.DONE
            else:
                writer = openai_answer.ChunkWriter(request_id, candidate, include_usage)
                yield writer.start()
                async for event in events:
                    if isinstance(event, Raw):
                        # Rollover (routing/rollover.py OPT_IN): Momor writes its own wire's chunks too,
                        # from what it decoded of them, so a continuation reads as the same answer.
                        frame = b"".join(writer.event(decoded) for decoded in event.decoded)
                        if frame:
                            yield frame
                        continue
                    frame = writer.event(event)
                    if frame:
                        yield frame
        except ProviderError as exc:
            # A Chat Completions stream never moves on once output has begun (unless the caller asked for
            # rollover, and no candidate could continue): one error chunk, no [DONE].
            yield openai_answer.error_chunk(request_id, candidate, getattr(exc, "frame_status", 502), exc.detail,
                                            kind=exc.code)

    def error(self, request_id: str, exc: MomorError) -> Response:
        return json_response(openai_answer.error_object(exc.status, exc.detail, exc.provider_param, exc.code),
                             exc.status)

    def finish_word(self, finish: Finish) -> str:
        return openai_answer.finish_reason(finish.stop)


def routes(backend: Backend) -> list[Route]:
    door = OpenAIDoor()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=request.scope["path"])

    return [Route(path, create, methods=["POST"]) for path in PATHS]
