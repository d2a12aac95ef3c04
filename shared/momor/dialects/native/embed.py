"""POST /models/embed: embeddings in Momor's own words (seed 000's style).

Body: {"input": string | string[], "model"?, "models"?, "prioritization"?, "keys"?, "dimensions"?,
"inputType"? (query, document, classification, clustering, similarity), "encoding"? (float, the
default, or base64: little-endian float32), "mixedSpaces"? (false: only the first model named may serve,
since vectors of two models cannot be compared; true: any model listed may), "networkTimeout"?}. The
selectors must name models (tier/..., auto and * are refused); `prioritization` (order, ignore, zdr)
and `keys` are the native route's. Answer: {"type": "embedding", "embeddings": [vector, ...] in input
order, "dimensions", "model": {name, tier, publisher, provider}, "usage"}. Refusals are problem
documents naming the field; authentication, limits, budgets, planning and the record are flow.py's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api import cached_embeddings
from ...api.backend import Backend
from ...api.flow import Prepared, routed_call
from ...call import Call
from ...catalog import Catalog
from ...door_http import json_response
from ...errors import RequestError
from ...events import Usage
from ...routing import embed
from ...routing.plan import Needs
from ...routing.request import Routed
from ...routing.selectors import parse_duration, parse_prioritization, parse_selectors
from ...vectors import EmbedCall, EmbedFacts, as_base64, as_floats, length
from .parse import validated
from .route import NativeDoor
from .write import model_block

PATH = "/models/embed"


class EmbedBody(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    input: Any
    model: str | dict[str, Any] | None = None
    models: list[str | dict[str, Any]] | None = None
    prioritization: dict[str, Any] | None = None
    keys: dict[str, str | dict[str, Any]] = Field(default_factory=dict)
    dimensions: int | None = None
    input_type: Literal["query", "document", "classification", "clustering", "similarity"] | None = Field(
        None, alias="inputType")
    encoding: Literal["float", "base64"] = "float"
    mixed_spaces: bool = Field(False, alias="mixedSpaces")
    network_timeout: str | None = Field(None, alias="networkTimeout")


def parse(raw: dict[str, Any]) -> Routed:
    body = validated(EmbedBody, raw)
    selectors = parse_selectors(body.model, body.models)
    embed.check_selectors(selectors, "models" if body.models is not None else "model")
    inputs = embed.check_inputs(body.input)
    if any(not isinstance(i, str) for i in inputs):
        raise RequestError("input must be a string or an array of strings.", param="input")
    call = EmbedCall(inputs, embed.check_dimensions(body.dimensions), body.input_type, body.encoding)
    timeout = parse_duration(body.network_timeout, "networkTimeout").total_seconds() if body.network_timeout else None
    return Routed(
        call=Call(system="", messages=[]),
        selectors=selectors,
        prio=parse_prioritization(body.prioritization),
        keys=body.keys,
        needs=Needs(dimensions=call.dimensions, mixed_spaces=body.mixed_spaces),
        written_selectors=raw.get("models", raw.get("model")),
        network_timeout=timeout,
        kind="embedding",
        reply=call,
        hold=lambda candidates: embed.hold(call, candidates),
    )


class EmbedDoor(NativeDoor):
    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        return parse(body)


async def _embed(p: Prepared) -> Response:
    call: EmbedCall = p.routed.reply
    served = await cached_embeddings.embed(p, call)  # the cache's inputs, then the provider for the rest
    done = served.done
    p.recorder.status_code = 200
    p.recorder.end("complete")
    p.recorder.finish_reason = "stop"
    dimensions = length(done.vectors[0])
    p.recorder.operation = EmbedFacts("embedding", len(call.inputs), dimensions, done.parts)
    form = as_base64 if call.encoding == "base64" else as_floats
    usage = Usage(input_tokens=done.input_tokens, output_tokens=0, estimated=done.estimated)
    response = json_response({
        "type": "embedding",
        "embeddings": [form(v) for v in done.vectors],
        "dimensions": dimensions,
        "model": model_block(done.candidate),
        "usage": usage.to_native(done.candidate.provider.name),
    })
    response.headers.update({"X-Momor-Model": done.candidate.model.public_id,
                             "X-Momor-Provider": done.candidate.provider.name} | served.headers)
    return response


def routes(backend: Backend) -> list[Route]:
    door = EmbedDoor()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=PATH, operation=_embed)

    return [Route(PATH, create, methods=["POST"])]
