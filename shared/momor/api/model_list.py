"""GET /models (and /v1/models): the catalog as a caller may use it.

Every servable model (one with a tier), deprecated ones included and marked. One list serves
both SDKs' `models.list()`: each entry carries OpenAI's fields (`id`, `object`, `created`,
`owned_by`) and Anthropic's (`type`, `id`, `display_name`, `created_at`, `lifecycle`,
`max_tokens`, `max_input_tokens`), beside Momor's own (`name`, `publisher`, `tier`, `kind`, `released`,
`deprecated`, `capabilities`, `offerings` with each provider and its prices in US dollars per
million tokens). The page is always whole: `has_more` is false, `first_id`/`last_id` name its ends.

`id` is `publisher/name` in lowercase, a selector POST /models, /messages and /chat/completions
all take. The key is read from `Authorization: Bearer` or `X-API-Key`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..catalog import Catalog, Model
from ..errors import MomorError
from ..http import PROBLEM, bearer_token, json_response, new_request_id
from .backend import Backend
from .flow import REQUEST_ID_HEADER

_EPOCH = dt.date(1970, 1, 1)


def model_id(model: Model) -> str:
    return f"{model.publisher}/{model.name}".lower()


def model_entry(model: Model) -> dict[str, Any]:
    released = model.released or _EPOCH
    created = dt.datetime.combine(released, dt.time(), tzinfo=dt.UTC)
    caps = model.capabilities
    return {
        "id": model_id(model),
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


def _api_key(request: Request) -> str | None:
    return bearer_token(request) or request.headers.get("x-api-key", "").strip() or None


def router(backend: Backend) -> APIRouter:
    api = APIRouter()

    async def list_models(request: Request) -> Response:
        request_id = new_request_id()
        try:
            caller = await backend.authenticate(_api_key(request))
            if caller is None:
                response = json_response({"status": 401, "detail": "A valid Momor API key is required."}, 401,
                                         PROBLEM)
            else:
                response = json_response(model_list(await backend.catalog()))
        except MomorError as exc:
            response = json_response({"status": exc.status, "detail": exc.detail}, exc.status, PROBLEM)
        response.headers[REQUEST_ID_HEADER] = request_id
        return response

    for path in ("/models", "/v1/models"):
        api.add_api_route(path, list_models, methods=["GET"])
    return api
