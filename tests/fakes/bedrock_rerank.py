"""Amazon Bedrock's Rerank API (bedrock-agent-runtime `POST /{label}/rerank`), faked as strictly as the
real one (the Rerank API reference; boto3's `bedrock-agent-runtime` `rerank` reads the answers): a
Bedrock API key as the bearer token; `queries` exactly one `{type: TEXT, textQuery: {text}}`; `sources`
1 to 1000 `{type: INLINE, inlineDocumentSource: {type: TEXT, textDocument: {text}}}`;
`rerankingConfiguration` `{type: BEDROCK_RERANKING_MODEL, bedrockRerankingConfiguration:
{numberOfResults? (1 to 1000), modelConfiguration: {modelArn (a reranking foundation model's ARN),
additionalModelRequestFields?}}}`; `nextToken?`; any other field refused (a ValidationException, as
botocore's rest-json reads it). The answer: `{results: [{index, relevanceScore}]}`, best first,
numberOfResults of them; scores from tests/fakes/vectors.py.
"""

from __future__ import annotations

import re
from typing import Any

from .bedrock_converse import BedrockAnswers, new_request_id
from .errors import Invalid
from .interface import Address, Setup
from .vectors import score

MODELS = ("amazon.rerank-v1:0", "cohere.rerank-v3-5:0")
MAX_SOURCES = 1000
_ARN = re.compile(r"^arn:aws:bedrock:[a-z0-9-]+::foundation-model/(?P<model>[^/]+)$")
_FIELDS = {"queries", "sources", "rerankingConfiguration", "nextToken"}


def _invalid(message: str) -> Invalid:
    return Invalid(message)


def _keys(value: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _invalid(f"{where} must be an object")
    for name in value:
        if name not in allowed:
            raise _invalid(f"Unknown parameter in {where}: \"{name}\", must be one of: {', '.join(sorted(allowed))}")
    return value


class BedrockRerankFake(BedrockAnswers):
    vectors = True
    tool_id_prefix = ""

    def __init__(self) -> None:
        self.error_type: str | None = None
        self.model = ""
        self.new_request_id = new_request_id

    def model_of(self, body: dict[str, Any]) -> str:
        return self.model

    def validate(self, body: dict[str, Any]) -> None:
        _keys(body, _FIELDS, "input")
        queries = body.get("queries")
        if not isinstance(queries, list) or len(queries) != 1:
            raise _invalid("queries: member must have length 1")
        query = _keys(queries[0], {"type", "textQuery"}, "queries[0]")
        text = _keys(query.get("textQuery"), {"text"}, "queries[0].textQuery").get("text")
        if query.get("type") != "TEXT" or not isinstance(text, str) or not text:
            raise _invalid("queries[0]: a TEXT query with a non-empty textQuery.text is required")
        sources = body.get("sources")
        if not isinstance(sources, list) or not 1 <= len(sources) <= MAX_SOURCES:
            raise _invalid(f"sources: member must have length between 1 and {MAX_SOURCES}")
        for i, source in enumerate(sources):
            _source(source, i)
        config = _keys(body.get("rerankingConfiguration"), {"type", "bedrockRerankingConfiguration"},
                       "rerankingConfiguration")
        bedrock = _keys(config.get("bedrockRerankingConfiguration"), {"numberOfResults", "modelConfiguration"},
                        "rerankingConfiguration.bedrockRerankingConfiguration")
        model = _keys(bedrock.get("modelConfiguration"), {"modelArn", "additionalModelRequestFields"},
                      "bedrockRerankingConfiguration.modelConfiguration")
        found = _ARN.match(str(model.get("modelArn", "")))
        if config.get("type") != "BEDROCK_RERANKING_MODEL" or found is None:
            raise _invalid("rerankingConfiguration: type BEDROCK_RERANKING_MODEL and a foundation-model modelArn "
                           "are required")
        if found["model"] not in MODELS:
            raise Invalid(f"The model {found['model']} is not a reranking model or is not available.", status=404)
        self.model = found["model"]
        number = bedrock.get("numberOfResults")
        if number is not None and (not isinstance(number, int) or isinstance(number, bool)
                                   or not 1 <= number <= MAX_SOURCES):
            raise _invalid("numberOfResults: must be between 1 and 1000")

    def vector_answer(self, body: dict[str, Any], text: str | None) -> dict[str, Any]:
        query = body["queries"][0]["textQuery"]["text"]
        documents = [s["inlineDocumentSource"]["textDocument"]["text"] for s in body["sources"]]
        ranked = sorted(((i, score(query, d)) for i, d in enumerate(documents)), key=lambda r: -r[1])
        number = body["rerankingConfiguration"]["bedrockRerankingConfiguration"].get("numberOfResults")
        return {"results": [{"index": i, "relevanceScore": s} for i, s in ranked[:number or len(ranked)]]}


def _source(source: Any, i: int) -> None:
    checked = _keys(source, {"type", "inlineDocumentSource"}, f"sources[{i}]")
    inline = _keys(checked.get("inlineDocumentSource"), {"type", "textDocument", "jsonDocument"},
                   f"sources[{i}].inlineDocumentSource")
    document = _keys(inline.get("textDocument"), {"text"}, f"sources[{i}].inlineDocumentSource.textDocument")
    if checked.get("type") != "INLINE" or inline.get("type") != "TEXT" or not isinstance(document.get("text"), str):
        raise _invalid(f"sources[{i}]: an INLINE TEXT document with textDocument.text is required")


def route(address: Address) -> BedrockRerankFake | None:
    return BedrockRerankFake() if address.route == "rerank" else None


SETUPS = (Setup("bedrockrerank", "bedrockrerank", "amazon.rerank-v1:0", "ABSKbedrock-rerank-0001",
                provider="bedrockrerank@us-west-2", publisher="amazon"),)
