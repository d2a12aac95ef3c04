"""What every route outside a routed call that answers in problem documents does around its work
(GET /usage, /generations/{id}, /me and the key API): the caller authenticated, the request counted
in the caller's `:api` rate-limit bucket (route_limits.py), and every refusal a problem document
`{"status", "detail"}` (application/problem+json), a failure of Momor's own included: a 500 with a
log line naming the request id, never a bare one.

    Route("/usage", problem_route(backend, usage_answer, "usage failed"), methods=["GET"])
    async def usage_answer(request, caller) -> Response: ...   # raises MomorError to refuse
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ..door_http import PROBLEM, REQUEST_ID_HEADER, json_response, new_request_id
from ..errors import MomorError
from ..logs import logger
from ..store import dynamo
from . import route_limits
from .auth import Caller
from .backend import Backend

Handler = Callable[[Request, Caller], Awaitable[Response]]


_UNANSWERED = ("ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
               "InternalServerError", "ServiceUnavailable", "TransportError")


def unavailable_store(exc: BaseException) -> str | None:
    """"DynamoDB" when `exc` says DynamoDB did not answer (unreachable, timed out, throttled, 5xx), through
    the lean caller (dynamo.py) or boto3's (the usage and key routes: DynamoDB is the only store these routes
    reach through boto3); None for any other failure."""
    if isinstance(exc, dynamo.DynamoError):
        return "DynamoDB" if exc.code in _UNANSWERED or exc.status == 0 or exc.status >= 500 else None
    module = type(exc).__module__ or ""
    if module.startswith(("botocore", "urllib3")):  # boto3 is imported only by routes that use it
        from botocore.exceptions import BotoCoreError, ClientError

        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            return "DynamoDB" if error.get("Code") in _UNANSWERED or status >= 500 else None
        return "DynamoDB" if isinstance(exc, BotoCoreError) else None
    return None


def problem(status: int, detail: str) -> Response:
    return json_response({"status": status, "detail": detail}, status, PROBLEM)


def problem_route(backend: Backend, handler: Handler, failure: str) -> Callable[..., Any]:
    """The Starlette endpoint around `handler` (module docstring); `failure` is the log line's message."""

    async def answer(request: Request) -> Response:
        request_id = new_request_id()
        limited: dict[str, str] = {}
        try:
            caller = await backend.authenticate(request)
            limited = await route_limits.admit(backend, caller)
            response = await handler(request, caller)
        except MomorError as exc:
            response = problem(exc.status, exc.detail)
            limited = limited or route_limits.refusal_headers(exc)
        except Exception as exc:  # a bug or a store failure: a problem document and a log line, never a bare 500
            store = unavailable_store(exc)
            if store is not None:  # the store did not answer: a 503 naming it, as the reads' own refusals
                logger.warning("%s: %s did not answer", failure, store,
                               extra={"request_id": request_id, "store": store, "error": type(exc).__name__})
                response = problem(503, f"{store} is unavailable right now; retry shortly.")
            else:
                logger.exception(failure, extra={"request_id": request_id})
                response = problem(500, "Momor failed; the request id identifies this call in its logs.")
        response.headers.update(limited)
        response.headers[REQUEST_ID_HEADER] = request_id
        response.headers["Cache-Control"] = "no-store"  # a caller's own data: no cache keeps it
        return response

    return answer
