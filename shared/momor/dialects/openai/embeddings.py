"""POST /v1/embeddings: OpenAI's embeddings API, so the openai SDK (and LangChain's OpenAIEmbeddings,
llama-index's OpenAIEmbedding) works with only its base URL and key changed.

Body: `model` (required: a model's name; tier/..., auto and * are refused, routing/embed.py
`check_selectors`), `input` (a string, an array of strings, an array of token ids or an array of such
arrays), `dimensions`, `encoding_format` (`float`, or `base64`: what the openai SDK asks for by default
and decodes, little-endian float32), `user`; and Momor's own, as on the chat route (seed 001):
`models` (more selectors, tried in order), `provider` (prioritization), `input_type` (query, document,
passage (= document), classification, clustering, similarity: sent in each provider's words where it
has such a field). Any other field is refused (400), as OpenAI refuses it.

Vectors of two models cannot be compared, so the call fails over only between offerings of its first
model (plan.py rule `space`), unless the request carries `X-Momor-Mixed-Spaces: 1`: then any model it
lists may serve, the first that can. Whichever served, the answer's `model` and `X-Momor-Model` name
it (tag stored vectors with it), `X-Momor-Provider` the provider.

Answer: `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage":
{"prompt_tokens", "total_tokens"}}`, in input order. Errors are OpenAI's error objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api import cached_embeddings
from ...api.backend import Backend
from ...api.flow import Prepared, routed_call
from ...call import Call
from ...catalog import Catalog
from ...door_http import headers_of, json_response
from ...errors import RequestError
from ...routing import embed
from ...routing.plan import Needs
from ...routing.request import Routed
from ...routing.selectors import parse_prioritization, parse_selectors
from ...vectors import INPUT_TYPES, EmbedCall, EmbedFacts, as_base64, as_floats, length
from .route import OpenAIDoor

PATH = "/v1/embeddings"
MIXED_SPACES = "x-momor-mixed-spaces"
FIELDS = {"model", "input", "dimensions", "encoding_format", "user", "models", "provider", "input_type"}
_INPUT_TYPE_WORDS = {**{word: word for word in INPUT_TYPES}, "passage": "document", "search_query": "query",
                     "search_document": "document"}


@dataclass(slots=True, frozen=True)
class Job:
    call: EmbedCall


def mixed_spaces(request: Request, header: str = MIXED_SPACES) -> bool:
    value = headers_of(request).get(header)
    if value is None:
        return False
    word = value.strip().lower()
    if word not in ("1", "true", "0", "false"):
        raise RequestError(f"{header} must be 1 (another model's vectors may serve) or 0.", param=header)
    return word in ("1", "true")


def parse(body: dict[str, Any], mixed: bool = False) -> Routed:
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise RequestError(f"Unrecognized request argument supplied: {unknown[0]}", param=unknown[0])
    if body.get("model") is None and body.get("models") is None:
        raise RequestError("model is required unless models names one.", param="model")
    if "input" not in body:
        raise RequestError("input is required.", param="input")
    selectors = parse_selectors(body.get("model"), body.get("models"))
    embed.check_selectors(selectors)
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise RequestError("encoding_format must be float or base64.", param="encoding_format")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise RequestError("user must be a string.", param="user")
    kind = body.get("input_type")
    if kind is not None and kind not in _INPUT_TYPE_WORDS:
        raise RequestError(f"input_type must be one of {', '.join(_INPUT_TYPE_WORDS)}.", param="input_type")
    call = EmbedCall(embed.check_inputs(body["input"]), embed.check_dimensions(body.get("dimensions")),
                     _INPUT_TYPE_WORDS.get(kind) if kind else None, encoding, user)  # type: ignore[arg-type]
    return Routed(
        call=Call(system="", messages=[]),
        selectors=selectors,
        prio=parse_prioritization(body.get("provider"), "provider", lenient=True),
        keys={},
        needs=Needs(dimensions=call.dimensions, mixed_spaces=mixed),
        written_selectors=body.get("models", body.get("model")),
        prio_where="provider",
        kind="embedding",
        reply=Job(call),
        hold=lambda candidates: embed.hold(call, candidates),
    )


class EmbeddingsDoor(OpenAIDoor):
    def parse(self, body: dict[str, Any], request: Request, catalog: Catalog) -> Routed:
        return parse(body, mixed_spaces(request))


async def _embed(p: Prepared) -> Response:
    call: EmbedCall = p.routed.reply.call
    served = await cached_embeddings.embed(p, call)  # the cache's inputs, then the provider for the rest
    done = served.done
    p.recorder.status_code = 200
    p.recorder.end("complete")
    p.recorder.finish_reason = "stop"
    dimensions = length(done.vectors[0])
    p.recorder.operation = EmbedFacts("embedding", len(call.inputs), dimensions, done.parts)
    form = as_base64 if call.encoding == "base64" else as_floats
    response = json_response({
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": form(v)} for i, v in enumerate(done.vectors)],
        "model": done.candidate.model.public_id,
        "usage": {"prompt_tokens": done.input_tokens, "total_tokens": done.input_tokens},
    })
    response.headers.update(served_headers(done.candidate) | served.headers)
    return response


def served_headers(candidate: Any) -> dict[str, str]:
    """The model that served (tag stored vectors with it) and its provider."""
    return {"X-Momor-Model": candidate.model.public_id, "X-Momor-Provider": candidate.provider.name}


def routes(backend: Backend) -> list[Route]:
    door = EmbeddingsDoor()

    async def create(request: Request) -> Response:
        return await routed_call(request, door, backend, route=PATH, operation=_embed)

    return [Route(PATH, create, methods=["POST"])]
