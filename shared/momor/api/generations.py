"""GET /generations/{id}: a call's record, only to the API key that made the call."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .. import background
from ..http import PROBLEM, json_response, new_request_id
from .auth import Unauthorized
from .backend import Backend
from .flow import REQUEST_ID_HEADER


def router(backend: Backend) -> list[Route]:
    async def get_generation(request: Request) -> Response:
        record_id: str = request.path_params["record_id"]
        request_id = new_request_id()
        try:
            caller = await backend.authenticate(request)
        except Unauthorized as exc:
            response = json_response({"status": 401, "detail": exc.detail}, 401, PROBLEM)
        else:
            await background.settle(record_id)  # a write still under way in this process
            record = await backend.read_record(record_id, caller.id)
            # Someone else's record answers exactly as a missing one does: its existence is not told.
            response = (
                json_response(record)
                if record is not None
                else json_response({"status": 404, "detail": "No such generation."}, 404, PROBLEM)
            )
        response.headers[REQUEST_ID_HEADER] = request_id
        return response

    return [Route("/generations/{record_id}", get_generation, methods=["GET"])]
