"""OpenAI's moderation endpoint, for the `moderation` guardrail check (api/guardrail_services.py):
`POST {baseUrl}/moderations` with `{"model", "input"}` (OpenAI's API reference, "Create moderation"),
answered `{"id", "model", "results": [{"flagged", "categories", "category_scores",
"category_applied_input_types"}]}`, one result per input (the openai package's moderation types).

Sent to the catalog provider MOMOR_GUARDRAIL_MODERATION_PROVIDER names, at its base URL with its saved
key and its `authHeader` (endpoint.py), over the same lean client, timeouts and error mapping as a
chat call (transport.post_whole, openai_chat.map_error): every failure is a ProviderError with the
key blanked from its text. Not a catalog wire: moderation is no route of its own, only a check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..catalog import Model, Offering, Provider
from ..errors import ProviderError
from . import openai_chat
from .base import Target, WireRequest
from .endpoint import endpoint
from .kit import load_json, protocol_error
from .transport import Timeouts, post_whole

WIRE_NAME = "openai_moderation"
PATH = "/moderations"
TIMEOUTS = Timeouts(connect=5.0, first_token=10.0, idle=10.0)
"""A check holds the call up: it gets less time than a generation would."""


@dataclass(frozen=True, slots=True)
class Moderated:
    flagged: bool
    categories: tuple[str, ...]
    """The categories the model flagged (`categories` whose value is true), in its order."""


class _ModerationWire:
    name = WIRE_NAME

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return openai_chat.map_error(status, body, headers)


WIRE = _ModerationWire()


def target(provider: Provider, key: str, key_extra: dict[str, Any], model: str) -> Target:
    """The provider as a Target (no catalog offering is needed: the model is the setting's)."""
    offering = Offering.model_construct(provider=provider.name, id=model)
    return Target(provider, offering, Model.model_construct(name=model, publisher="openai"), key, dict(key_extra))


async def moderate(where: Target, text: str) -> Moderated:
    """What the moderation model says of one text."""
    place = endpoint(where, PATH, path_template=PATH)
    request = WireRequest(place.path, {"model": where.model_id, "input": text}, place.headers, place.url)
    body, _ = await post_whole(WIRE, request, where, timeouts=TIMEOUTS)
    answer = load_json(body, WIRE_NAME)
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list) or len(results) != 1 or not isinstance(results[0], dict):
        raise protocol_error(WIRE_NAME, "the answer has no result for its input")
    result = results[0]
    flagged, categories = result.get("flagged"), result.get("categories")
    if not isinstance(flagged, bool) or not isinstance(categories, dict):
        raise protocol_error(WIRE_NAME, "the result has no flagged or categories")
    return Moderated(flagged, tuple(name for name, on in categories.items() if on is True))
