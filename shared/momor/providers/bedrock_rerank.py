"""Amazon Bedrock's Rerank API (bedrock-agent-runtime `POST /rerank`), for a provider listed under the
`bedrock_converse` wire, with the same Bedrock API key (`Authorization: Bearer`).

Where: the Agents runtime's endpoint of the provider's region, `https://bedrock-agent-runtime.{region}
.amazonaws.com`: the provider's `baseUrl` with `bedrock-runtime` read as `bedrock-agent-runtime` (a base
URL that names neither, as a proxy's or a test's, is posted to as it is). The deployment's base URL,
never the caller's, chooses the host.

Request (the Rerank API reference, and boto3's `bedrock-agent-runtime` `rerank`): `{queries: [{type:
TEXT, textQuery: {text}}] (exactly one), sources: [{type: INLINE, inlineDocumentSource: {type: TEXT,
textDocument: {text}}}] (1 to 1000), rerankingConfiguration: {type: BEDROCK_RERANKING_MODEL,
bedrockRerankingConfiguration: {numberOfResults, modelConfiguration: {modelArn}}}}`. The model is named
by its foundation-model ARN, `arn:aws:bedrock:{region}::foundation-model/{id}` (`amazon.rerank-v1:0`,
`cohere.rerank-v3-5:0`), the region its base URL's host names, else the provider's (`bedrock@us-west-2`); an offering
`id` that is an ARN already is sent as it is. `numberOfResults` is the caller's `top_n`, else every
document. Answer: `{results: [{index, relevanceScore}], nextToken?}`, best first. Errors are Bedrock's.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import ProviderError
from ..vectors import Ranked, RerankCall
from . import bedrock_converse
from .base import Target, WireRequest
from .kit import load_json, protocol_error, unsupported
from .openai_rerank import ranked_results

WIRE_NAME = "bedrock_rerank"
_REGION = re.compile(r"bedrock-(?:agent-)?runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com")


def region(target: Target) -> str | None:
    # The host's region first: a saved key with a region of its own is sent to that region's host
    # (routing/key_endpoint.py) under the provider's name, which names the catalog's region.
    found = _REGION.search(target.provider.base_url)
    if found:
        return found.group(1)
    return target.provider.name.partition("@")[2] or None


def model_arn(target: Target) -> str:
    if target.model_id.startswith("arn:"):
        return target.model_id
    where = region(target)
    if where is None:
        raise unsupported(WIRE_NAME, "no AWS region for the model's ARN: name the provider bedrock@<region>")
    return f"arn:aws:bedrock:{where}::foundation-model/{target.model_id}"


def rerank_url(target: Target) -> str:
    base = target.provider.base_url.rstrip("/")
    return re.sub(r"//bedrock-runtime(-fips)?\.", r"//bedrock-agent-runtime\1.", base, count=1) + "/rerank"


class BedrockRerankWire:
    name = WIRE_NAME

    def build_rerank(self, call: RerankCall, target: Target) -> WireRequest:
        body: dict[str, Any] = {
            "queries": [{"type": "TEXT", "textQuery": {"text": call.query}}],
            "sources": [{"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": d}}}
                        for d in call.documents],
            "rerankingConfiguration": {"type": "BEDROCK_RERANKING_MODEL", "bedrockRerankingConfiguration": {
                "numberOfResults": min(call.top_n or len(call.documents), len(call.documents)),
                "modelConfiguration": {"modelArn": model_arn(target)}}},
        }
        headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
        return WireRequest("/rerank", body, headers, url=rerank_url(target))

    def parse_rerank(self, body: bytes, headers: dict[str, str], target: Target, call: RerankCall) -> Ranked:
        data = load_json(body, WIRE_NAME)
        if not isinstance(data, dict):
            raise protocol_error(WIRE_NAME, "the answer is not an object")
        return Ranked(ranked_results(data.get("results"), "relevanceScore", len(call.documents), WIRE_NAME))

    def map_error(self, status: int, body: bytes, headers: dict[str, str]) -> ProviderError:
        return bedrock_converse.map_error(status, body, headers)


WIRE = BedrockRerankWire()
