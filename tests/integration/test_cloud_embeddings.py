"""POST /v1/embeddings and /v1/rerank on the cloud wires end to end (issue 35), the openai SDK unchanged:
Vertex AI's predict (authenticated with a service account whose token the fake token endpoint issues),
Amazon Bedrock's InvokeModel (Titan Text Embeddings v2, one input a request, and Cohere Embed) and its
Rerank API (with the Bedrock API key), through their strict fakes; failover between two offerings of
one model and dimension on different platforms (Gemini API -> Vertex AI, Cohere -> Bedrock) keeps one
vector space, and a rerank fails over from Cohere to the same model on Bedrock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from momor.providers import google_auth
from momor.store import keys
from tests.fakes.script import fail
from tests.fakes.vectors import vector
from tests.fakes.vertex import make_service_account

from .conftest import SAVED_KEYS, with_providers

pytestmark = pytest.mark.emulators

BEDROCK_KEY = "ABSKbedrock-saved-0015"
TITAN = "amazon.titan-embed-text-v2:0"


def _model(name: str, publisher: str, spec: dict[str, Any], *offerings: tuple[str, str, float]) -> dict[str, Any]:
    return {"name": name, "publisher": publisher, "kind": "embedding", "tier": "low", "released": "2025-01-01",
            "embedding": spec, "offerings": [{"provider": p, "id": i, "prices": {"input": price, "output": 0.0}}
                                             for p, i, price in offerings]}


@pytest.fixture
def clouds(momor: Any, fake: Any, momor_aws: Any) -> Iterator[None]:
    """Vertex and Bedrock providers, their embedding models, and their credentials in the keys secret."""
    account, public = make_service_account(fake.url + "/vertex/token")
    fake.state.add_service_account(account["client_email"], public)
    catalog = json.loads(json.dumps(momor.catalog))
    with_providers(catalog, [
        {"name": "vertex@us-central1", "wire": "vertex", "baseUrl": f"{fake.url}/vertex", "parameters": []},
        {"name": "bedrock@us-east-1", "wire": "bedrock_converse", "baseUrl": f"{fake.url}/bedrock", "parameters": []},
    ])
    for model in catalog["models"]:  # the same models on a second platform, dearer, so they serve second
        if model["name"] == "gemini-embedding-001":
            model["offerings"].append({"provider": "vertex@us-central1", "id": "gemini-embedding-001",
                                       "prices": {"input": 0.2, "output": 0.0}})
        if model["name"] == "embed-v4.0":
            model["offerings"].append({"provider": "bedrock@us-east-1", "id": "cohere.embed-v4:0",
                                       "prices": {"input": 0.2, "output": 0.0}})
        if model["name"] == "rerank-v3.5":
            model["offerings"].append({"provider": "bedrock@us-east-1", "id": "cohere.rerank-v3-5:0",
                                       "prices": {"input": 0.0, "output": 0.0, "perSearch": 0.003}})
    catalog["models"] += [
        _model("text-embedding-005", "google", {"dimensions": 768, "shortenToAny": True, "maxInputTokens": 2048},
               ("vertex@us-central1", "text-embedding-005", 0.025)),
        {"name": "amazon-rerank", "publisher": "amazon", "kind": "rerank", "tier": "low", "released": "2024-12-01",
         "rerank": {"maxDocuments": 1000},
         "offerings": [{"provider": "bedrock@us-east-1", "id": "amazon.rerank-v1:0",
                        "prices": {"input": 0.0, "output": 0.0, "perSearch": 0.001}}]},
        _model("titan-embed-text-v2", "amazon", {"dimensions": 1024, "shortenTo": [256, 512], "maxInputTokens": 8192},
               ("bedrock@us-east-1", TITAN, 0.02)),
    ]
    momor.write_catalog(catalog)
    saved = {**SAVED_KEYS, "bedrock": BEDROCK_KEY, "vertex": {"key": json.dumps(account), "project": "fake-project"}}
    momor_aws.client("secretsmanager").put_secret_value(SecretId=momor_aws.keys_secret, SecretString=json.dumps(saved))
    keys.reset_saved_keys()
    google_auth.reset()
    yield
    google_auth.reset()


def sdk(momor: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0)


def sent(fake: Any, label: str) -> list[Any]:
    return [r for r in fake.requests(label) if not r.path.endswith("/token")]


def test_vertex_embeds_over_predict_with_the_service_accounts_token(momor, fake, clouds):
    with sdk(momor) as client:
        raw = client.embeddings.with_raw_response.create(model="text-embedding-005", input=["alpha", "beta gamma"],
                                                         dimensions=256, extra_body={"input_type": "document"})
    answer = raw.parse()
    assert [d.embedding for d in answer.data] == [vector("text-embedding-005", t, 256, 768)
                                                  for t in ("alpha", "beta gamma")]
    assert answer.usage.prompt_tokens == 3  # Vertex's statistics.token_count, summed
    assert raw.headers["x-momor-provider"] == "vertex@us-central1"
    request = sent(fake, "vertex")[-1]
    assert request.path == ("/vertex/v1/projects/fake-project/locations/us-central1/publishers/google/models/"
                            "text-embedding-005:predict")
    assert request.json == {"instances": [{"content": "alpha", "task_type": "RETRIEVAL_DOCUMENT"},
                                          {"content": "beta gamma", "task_type": "RETRIEVAL_DOCUMENT"}],
                            "parameters": {"outputDimensionality": 256}}
    assert request.headers["authorization"].startswith("Bearer ya29.")
    record = momor.record(raw.headers["x-momor-request-id"])
    assert record["usage"]["inputTokens"] == 3 and record["outcome"] == "complete"


def test_titan_on_bedrock_embeds_one_input_a_request_in_input_order(momor, fake, clouds):
    texts = ["first text", "second", "a third one"]
    with sdk(momor) as client:
        raw = client.embeddings.with_raw_response.create(model="titan-embed-text-v2", input=texts, dimensions=512)
    answer = raw.parse()
    assert [d.embedding for d in answer.data] == [vector("titan-embed-text-v2", t, 512, 1024) for t in texts]
    assert answer.usage.prompt_tokens == 2 + 1 + 3
    requests = sent(fake, "bedrock")
    assert len(requests) == 3 and {r.path for r in requests} == {f"/bedrock/model/{TITAN}/invoke"}
    assert sorted(r.json["inputText"] for r in requests) == sorted(texts)
    assert all(r.json == {"inputText": r.json["inputText"], "normalize": True, "dimensions": 512} for r in requests)
    assert all(r.headers["authorization"] == f"Bearer {BEDROCK_KEY}" for r in requests)
    record = momor.record(raw.headers["x-momor-request-id"])
    assert record["embedding"] == {"inputs": 3, "dimensions": 512, "parts": 3}


def test_a_dimension_titan_does_not_offer_is_refused_before_bedrock(momor, fake, clouds):
    with sdk(momor) as client, pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="titan-embed-text-v2", input="x", dimensions=300)
    assert not sent(fake, "bedrock")


def test_cohere_fails_over_to_the_same_model_on_bedrock(momor, fake, clouds):
    fake.script("cohere", *[fail(500)] * 3, model="embed-v4.0")
    with sdk(momor) as client:
        raw = client.embeddings.with_raw_response.create(model="embed-v4.0", input=["a b", "c"], dimensions=512,
                                                         encoding_format="float")
    answer = raw.parse()
    assert [d.embedding for d in answer.data] == [vector("embed-v4.0", t, 512, 1536) for t in ("a b", "c")]
    assert raw.headers["x-momor-provider"] == "bedrock@us-east-1"
    assert answer.usage.prompt_tokens == 3  # InvokeModel's X-Amzn-Bedrock-Input-Token-Count
    request = sent(fake, "bedrock")[-1]
    assert request.path.endswith("/model/cohere.embed-v4:0/invoke")
    assert request.json == {"texts": ["a b", "c"], "input_type": "search_document", "embedding_types": ["float"],
                            "output_dimension": 512}
    record = momor.record(raw.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("cohere", "failed")] * 3 + [
        ("bedrock@us-east-1", "ok")]


def test_gemini_fails_over_to_the_same_model_on_vertex(momor, fake, clouds):
    # Vertex takes one input a request, so the call is cut in two parts (every offering of the model must
    # carry a part), each tried three times on the Gemini API before it fails over
    fake.script("gemini", *[fail(503)] * 6, model="gemini-embedding-001")
    with sdk(momor) as client:
        raw = client.embeddings.with_raw_response.create(model="gemini-embedding-001", input=["hello", "world"],
                                                         dimensions=768)
    answer = raw.parse()
    assert [d.embedding for d in answer.data] == [vector("gemini-embedding-001", t, 768, 3072)
                                                  for t in ("hello", "world")]
    assert raw.headers["x-momor-provider"] == "vertex@us-central1"
    assert sorted(len(r.json["requests"]) if "requests" in r.json else 1 for r in fake.requests("gemini")) == [1] * 6
    assert sorted(len(r.json["instances"]) for r in sent(fake, "vertex")) == [1, 1]


def test_never_fails_over_from_bedrock_to_another_model(momor, fake, clouds):
    fake.script("bedrock", *[fail(500)] * 3, model=TITAN)
    with sdk(momor) as client, pytest.raises(openai.InternalServerError):
        client.embeddings.create(model="titan-embed-text-v2", input="x", extra_body={"models": ["embed-v4.0"]})
    assert not fake.requests("cohere"), "another model's vectors must never be mixed in"


DOCUMENTS = ["Carson City is the capital city of Nevada.", "Washington, D.C. is the capital of the United States.",
             "The capital city of France is Paris."]
QUERY = "What is the capital of the United States?"


def test_bedrock_reranks_through_the_agents_runtime(momor, fake, clouds):
    response = momor.post("/v1/rerank", {"model": "amazon-rerank", "query": QUERY, "documents": DOCUMENTS,
                                         "top_n": 2, "return_documents": True})
    assert response.status_code == 200, response.text[:300]
    answer = response.json()
    assert answer["results"][0]["index"] == 1 and len(answer["results"]) == 2
    assert answer["results"][0]["document"] == {"text": DOCUMENTS[1]}
    assert answer["model"] == "amazon/amazon-rerank"
    request = sent(fake, "bedrock")[-1]
    assert request.path == "/bedrock/rerank"
    assert request.headers["authorization"] == f"Bearer {BEDROCK_KEY}"
    assert request.json["queries"] == [{"type": "TEXT", "textQuery": {"text": QUERY}}]
    assert request.json["sources"][1] == {"type": "INLINE", "inlineDocumentSource": {
        "type": "TEXT", "textDocument": {"text": DOCUMENTS[1]}}}
    arn = "arn:aws:bedrock:us-east-1::foundation-model/amazon.rerank-v1:0"
    assert request.json["rerankingConfiguration"] == {
        "type": "BEDROCK_RERANKING_MODEL",
        "bedrockRerankingConfiguration": {"numberOfResults": 2, "modelConfiguration": {"modelArn": arn}}}


def test_cohere_rerank_fails_over_to_the_same_model_on_bedrock(momor, fake, clouds):
    fake.script("cohere", *[fail(500)] * 3, model="rerank-v3.5")
    response = momor.post("/v2/rerank", {"model": "rerank-v3.5", "query": QUERY, "documents": DOCUMENTS})
    assert response.status_code == 200, response.text[:300]
    assert response.json()["results"][0]["index"] == 1
    assert response.headers["x-momor-provider"] == "bedrock@us-east-1"
    assert sent(fake, "bedrock")[-1].json["rerankingConfiguration"]["bedrockRerankingConfiguration"][
        "modelConfiguration"]["modelArn"].endswith("foundation-model/cohere.rerank-v3-5:0")
