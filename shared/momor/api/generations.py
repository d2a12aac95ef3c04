"""GET /generations/{id}: a call's record, only to the caller that made the call (problem documents,
rate limited in the caller's `:api` bucket: problem_routes.py)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import background
from ..door_http import json_response
from ..errors import RequestError
from .auth import Caller
from .backend import Backend
from .problem_routes import problem, problem_route

ID_MAX = 64
"""A record's id is a request id (32 hex digits, door_http.new_request_id); anything much longer is
not one, and DynamoDB refuses a key past 2 KB: refused before the store is asked."""


def routes(backend: Backend) -> list[Route]:
    async def get_generation(request: Request, caller: Caller) -> Response:
        record_id: str = request.path_params["record_id"]
        if not record_id or len(record_id) > ID_MAX or not record_id.isascii() or not record_id.isprintable():
            raise RequestError(f"id: a generation's id is its request id (X-Momor-Request-Id), at most {ID_MAX} "
                               "characters.", param="id")
        await background.settle(record_id)  # a write still under way in this process
        record = await backend.read_record(record_id, caller.id)
        # Someone else's record answers exactly as a missing one does: its existence is not told.
        return json_response(record) if record is not None else problem(404, "No such generation.")

    return [Route("/generations/{record_id}", problem_route(backend, get_generation, "reading a generation failed"),
                  methods=["GET"])]
