"""FastAPI apps: one per Lambda (a route or two each), and one with every route for local use.

Each function's app.py builds only the routers it serves, so a Lambda imports only its route's
modules. Heavy set-up stays at module scope of the caller, once per process.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Route

from .api.backend import Backend
from .dialects.error_shape import error_response
from .door_http import id_headers, new_request_id, retry_header
from .errors import MomorError
from .store import start_check

RoutesFactory = Callable[[Backend], list[Route]]
"""A route module's `routes(backend)`: its routes, plain Starlette ones.

Every route takes a `Request` and returns a `Response`, so FastAPI's APIRoute would add only cost: per
request it solves an (empty) dependency graph, opens an exit stack and runs the endpoint through
`run_endpoint_function`. Mounted directly on the app's router, a route is matched and called by
Starlette; FastAPI stays the app (its exception handling, the handlers below)."""

NO_TELEMETRY = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
"""FastAPI's native OpenTelemetry, off: Momor reports through its own logs and metrics, and with it
on FastAPI asks the tracer, meter and logger providers on every request (about 4.5 µs) to find them
unconfigured. Its import (opentelemetry, about 30-100 ms of a cold start) cannot be avoided:
fastapi.applications imports it unconditionally (infra/bench/RESULTS.md, "Import path")."""


def build_app(*factories: RoutesFactory, backend: Backend | None = None, title: str = "Momor") -> FastAPI:
    backend = backend or Backend()
    # No /docs, /redoc or /openapi.json: the schema would be built on a request no caller makes.
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None, telemetry=NO_TELEMETRY)
    for factory in factories:
        app.router.routes.extend(factory(backend))

    # Starlette's own refusals (unknown path, wrong method) in the shape of whoever asked:
    # Anthropic's or OpenAI's error on their routes, a problem document elsewhere.
    async def http_error(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 400)
        detail = str(getattr(exc, "detail", "Bad request."))
        if status == 404 and detail == "Not Found":
            detail = f"No route answers {request.method} {request.url.path}."
        error = MomorError(detail, status=status)
        request_id = new_request_id()
        response = error_response(request, error, request_id)
        response.headers.update({**retry_header(error), **id_headers(request_id)})
        return response

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, http_error)
    # Whether DynamoDB answers, on a thread of its own: the app starts and serves either way, and a
    # log line says so when it does not (store/start_check.py).
    start_check.begin()
    # What start-up made (modules, the app, pydantic's schemas) lives as long as the process: moved out
    # of the cyclic collector's generations, a full collection no longer walks it in the middle of a
    # call (those pauses were a share of the p99 of short calls).
    gc.freeze()
    return app


def all_routes(backend: Backend | None = None) -> FastAPI:
    """Every route in one app: the local server's."""
    from .api import console, generations, key_routes, org_routes, usage
    from .dialects import model_list
    from .dialects.anthropic import route as anthropic
    from .dialects.native import decision_route, transcribe
    from .dialects.native import embed as native_embed
    from .dialects.native import rerank as native_rerank
    from .dialects.native import route as native
    from .dialects.openai import embeddings, router_route
    from .dialects.openai import route as openai
    from .dialects.rerank import route as rerank
    from .dialects.responses import route as responses

    return build_app(native.routes, decision_route.routes, transcribe.routes, openai.routes, router_route.routes,
                     generations.routes, anthropic.routes, model_list.routes, usage.routes, key_routes.routes,
                     org_routes.routes, responses.routes, console.routes, embeddings.routes, native_embed.routes,
                     rerank.routes, native_rerank.routes, backend=backend)
