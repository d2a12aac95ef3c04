"""FastAPI apps: one per Lambda (a route or two each), and one with every route for local use.

Each function's app.py builds only the routers it serves, so a Lambda imports only its route's
modules. Heavy set-up stays at module scope of the caller, once per process.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response

from ..http import PROBLEM, json_response
from .backend import Backend

RouterFactory = Callable[[Backend], APIRouter]


def build_app(*factories: RouterFactory, backend: Backend | None = None, title: str = "Momor") -> FastAPI:
    backend = backend or Backend()
    app = FastAPI(title=title, docs_url=None, redoc_url=None)
    for factory in factories:
        app.include_router(factory(backend))

    # Starlette's own refusals (unknown path, wrong method) as problem documents too.
    async def http_error(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 400)
        detail = getattr(exc, "detail", "Bad request.")
        return json_response({"status": status, "detail": str(detail)}, status, PROBLEM)

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, http_error)
    return app


def all_routes(backend: Backend | None = None) -> FastAPI:
    """Every route in one app: the local server's."""
    from ..dialects.anthropic import route as anthropic
    from ..dialects.native import decision_route, transcribe
    from ..dialects.native import route as native
    from ..dialects.openai import route as openai
    from ..dialects.openai import router_route
    from . import generations, model_list, usage

    return build_app(native.router, decision_route.router, transcribe.router, openai.router, router_route.router,
                     generations.router, anthropic.router, model_list.router, usage.router, backend=backend)
