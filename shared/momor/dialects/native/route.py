"""POST /models (and /models/chat, /models/two): the native dialect's route (seed 000)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.backend import Backend
from ...api.file_processing import generate_processed
from ...api.flow import Routed, routed_call
from ...catalog import Catalog
from ...door_http import PROBLEM, json_response
from ...errors import MomorError, ProviderError
from ...events import Assembler, Event, Finish
from ...routing.plan import Candidate
from . import parse as native_parse
from . import write as native


class NativeDoor:
    dialect = "native"

    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        return native_parse.parse(body)

    def answer(self, request_id: str, routed: Routed, candidate: Candidate, assembler: Assembler,
               passthrough: bool) -> Response:
        return json_response(native.monolith(candidate, assembler))

    def stream_headers(self, routed: Routed, candidate: Candidate) -> dict[str, str]:
        return {}

    async def stream(
        self, request_id: str, routed: Routed, candidate: Candidate, events: AsyncIterator[Event], passthrough: bool
    ) -> AsyncIterator[bytes]:
        writer = native.StreamWriter(request_id, candidate)
        yield writer.start()
        try:
            async for event in events:
                frame = writer.event(event)
                if frame:
                    yield frame
        except ProviderError as exc:
            yield writer.error(getattr(exc, "frame_status", 502), exc.detail, code=exc.code)

    def error(self, request_id: str, exc: MomorError) -> Response:
        return json_response(native.problem(exc.status, exc.detail, exc.code), exc.status, PROBLEM)

    def finish_word(self, finish: Finish) -> str:
        return finish.reason  # seed 000: the provider's own finish reason


def routes(backend: Backend) -> list[Route]:
    door = NativeDoor()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=request.scope["path"], operation=generate_processed)

    return [Route(path, create, methods=["POST"]) for path in ("/models", "/models/chat", "/models/two")]
