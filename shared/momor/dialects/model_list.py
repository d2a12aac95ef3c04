"""GET /models (and /v1/models): the catalog as a caller may use it.

Every servable model (one with a tier), deprecated ones included and marked. One list serves
both SDKs' `models.list()`: each entry carries OpenAI's fields (`id`, `object`, `created`,
`owned_by`) and Anthropic's (`type`, `id`, `display_name`, `created_at`, `lifecycle`,
`max_tokens`, `max_input_tokens`), beside Momor's own (`name`, `publisher`, `tier`, `kind`, `released`,
`deprecated`, `capabilities`, an embedding model's `embedding` (dimensions, shortenTo, ...) and a
rerank model's `rerank`, `offerings` with each provider and its prices in US dollars per
million tokens). The page is always whole: `has_more` is false, `first_id`/`last_id` name its ends.

The router alias serves the same list at /router/v1/models (and its entries at /router/v1/models/{id}),
so an OpenAI SDK whose base URL is `<momor>/router/v1` lists models as one at `<momor>/v1` does.

GET /models/{id} (and /v1/models/{id}) is one entry, as both SDKs' `models.retrieve(id)` read
it; the id holds a `/`. An id the catalog does not serve is a 404 in the shape of the SDK that
asked (dialects/error_shape.py).

`id` is `publisher/name` in lowercase, a selector POST /models, /messages and /chat/completions
all take. The caller is an API key or a signed-in session (api/auth.py), rate limited in its `:api`
bucket (api/route_limits.py).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..api import route_limits
from ..api.backend import Backend
from ..catalog import Catalog, Model
from ..door_http import id_headers, json_response, new_request_id, retry_header
from ..errors import MomorError, RequestError
from .error_shape import error_response

_EPOCH = dt.date(1970, 1, 1)
PATHS = ("/models", "/v1/models", "/router/v1/models")
"""Each lists the catalog; `<path>/{id}` is one entry. The third is the router alias's base URL (seed 003)."""


def model_entry(model: Model) -> dict[str, Any]:
    released = model.released or _EPOCH
    created = dt.datetime.combine(released, dt.time(), tzinfo=dt.UTC)
    caps = model.capabilities
    return {
        "id": model.public_id,
        "object": "model",
        "type": "model",
        "created": int(created.timestamp()),
        "created_at": created.isoformat().replace("+00:00", "Z"),
        "owned_by": model.publisher,
        "display_name": model.name,
        "lifecycle": "deprecated" if model.deprecated else "active",
        "max_tokens": caps.max_output_tokens,
        "max_input_tokens": caps.context_window,
        "name": model.name,
        "publisher": model.publisher,
        "tier": model.tier,
        "kind": model.kind,
        "released": model.released.isoformat() if model.released else None,
        "deprecated": model.deprecated,
        "capabilities": caps.model_dump(by_alias=True),
        **({"embedding": model.embedding.model_dump(by_alias=True, exclude_none=True)} if model.embedding else {}),
        **({"rerank": model.rerank.model_dump(by_alias=True, exclude_none=True)} if model.rerank else {}),
        "offerings": [
            {"provider": o.provider, "prices": o.prices.model_dump(by_alias=True, exclude_none=True)}
            for o in model.offerings
        ],
    }


def model_list(catalog: Catalog) -> dict[str, Any]:
    entries = [model_entry(m) for m in catalog.models if m.tier is not None]
    return {
        "object": "list",
        "data": entries,
        "has_more": False,
        "first_id": entries[0]["id"] if entries else None,
        "last_id": entries[-1]["id"] if entries else None,
    }


def find_model(catalog: Catalog, wanted: str) -> Model | None:
    """The servable model whose id (or, as a courtesy, name) is `wanted`, case aside."""
    wanted = wanted.lower()
    served = [m for m in catalog.models if m.tier is not None]
    return next((m for m in served if m.public_id == wanted), None) or next(
        (m for m in served if m.name.lower() == wanted), None)


def routes(backend: Backend) -> list[Route]:
    async def answer(request: Request, build: Any) -> Response:
        request_id = new_request_id()
        limited: dict[str, str] = {}
        try:
            limited = await route_limits.admit(backend, await backend.authenticate(request))  # the `:api` bucket
            response = json_response(build(await backend.catalog()))
        except MomorError as exc:
            response = error_response(request, exc, request_id)
            response.headers.update(retry_header(exc))
            limited = limited or route_limits.refusal_headers(exc)
        response.headers.update(id_headers(request_id) | limited)
        return response

    async def list_models(request: Request) -> Response:
        return await answer(request, model_list)

    async def retrieve_model(request: Request) -> Response:
        wanted: str = request.path_params["wanted"]

        def build(catalog: Catalog) -> dict[str, Any]:
            model = find_model(catalog, wanted)
            if model is None:
                raise RequestError(f"The model {wanted!r} is not served here; GET /models lists those that are.",
                                   status=404)
            return model_entry(model)

        return await answer(request, build)

    return [route for path in PATHS for route in (
        Route(path, list_models, methods=["GET"]),
        Route(path + "/{wanted:path}", retrieve_model, methods=["GET"]),
    )]
