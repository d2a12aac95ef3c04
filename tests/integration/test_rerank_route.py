"""POST /v1/rerank, /v2/rerank and /models/rerank end to end (issue 35): cohere's ClientV2 unchanged
against Momor through the strict Cohere fake; failover across models (a rerank may); refusals before
any provider is asked; the record and the cost per search."""

from __future__ import annotations

import cohere
import pytest

from tests.fakes.script import fail

pytestmark = pytest.mark.emulators

DOCUMENTS = ["Carson City is the capital city of Nevada.", "Washington, D.C. is the capital of the United States.",
             "The capital city of France is Paris."]
QUERY = "What is the capital of the United States?"


def test_cohere_client_v2_reranks_through_momor(momor, fake):
    client = cohere.ClientV2(api_key=momor.api_key, base_url=momor.url)
    answer = client.rerank(model="rerank-v3.5", query=QUERY, documents=DOCUMENTS, top_n=2)
    assert len(answer.results) == 2 and answer.results[0].index == 1
    assert answer.results[0].relevance_score >= answer.results[1].relevance_score
    assert answer.meta.billed_units.search_units == 1
    sent = fake.requests("cohere")[-1]
    assert sent.path == "/cohere/v2/rerank"
    assert sent.json == {"model": "rerank-v3.5", "query": QUERY, "documents": DOCUMENTS, "top_n": 2}
    assert sent.headers["authorization"] == "Bearer co-saved-cohere-0013"


def test_v1_rerank_with_document_objects_and_return_documents(momor, fake):
    response = momor.post("/v1/rerank", {"model": "rerank-v3.5", "query": QUERY,
                                         "documents": [{"text": d} for d in DOCUMENTS], "return_documents": True})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["results"][0]["index"] == 1
    assert answer["results"][0]["document"] == {"text": DOCUMENTS[1]}
    assert answer["model"] == "cohere/rerank-v3.5" and response.headers["x-momor-model"] == "cohere/rerank-v3.5"
    record = momor.record(response.headers["x-momor-request-id"])
    assert record["kind"] == "rerank" and record["rerank"] == {"inputs": 3, "searches": 1}
    assert record["cost"] == pytest.approx(0.002)


def add_jina_reranker(momor) -> None:
    """A second rerank model, `jina-reranker`, on an OpenAI-wire provider whose catalog entry declares
    a rerank endpoint (`flaky`, a provider with a saved key, in Jina's shape)."""
    catalog = momor.catalog
    catalog["models"].append({
        "name": "jina-reranker", "publisher": "jina", "kind": "rerank", "tier": "low",
        "offerings": [{"provider": "flaky", "id": "jina-reranker-v2-base-multilingual",
                       "prices": {"input": 0.02, "output": 0.0}}]})
    (flaky,) = [p for p in catalog["providers"] if p["name"] == "flaky"]
    flaky["options"] = {"rerankPath": "/rerank"}
    momor.write_catalog(catalog)


def test_a_rerank_fails_over_to_another_model(momor, fake):
    """The second model is on an OpenAI-wire provider whose catalog entry declares a rerank endpoint."""
    add_jina_reranker(momor)
    fake.script("cohere", *[fail(500)] * 3, model="rerank-v3.5")
    response = momor.post("/v2/rerank", {"model": "rerank-v3.5", "models": ["jina-reranker"], "query": QUERY,
                                         "documents": DOCUMENTS})
    assert response.status_code == 200, response.text[:300]
    assert response.json()["model"] == "jina/jina-reranker"
    assert response.json()["usage"]["total_tokens"] > 0
    sent = fake.requests("flaky")[-1]
    assert sent.path == "/flaky/v1/rerank"
    assert sent.json == {"model": "jina-reranker-v2-base-multilingual", "query": QUERY, "documents": DOCUMENTS}


@pytest.mark.parametrize(("body", "param"), [
    ({"model": "rerank-v3.5", "documents": DOCUMENTS}, "query"),
    ({"model": "rerank-v3.5", "query": "", "documents": DOCUMENTS}, "query"),
    ({"model": "rerank-v3.5", "query": QUERY}, "documents"),
    ({"model": "rerank-v3.5", "query": QUERY, "documents": []}, "documents"),
    ({"model": "rerank-v3.5", "query": QUERY, "documents": ["ok", ""]}, "documents"),
    ({"model": "rerank-v3.5", "query": QUERY, "documents": DOCUMENTS, "top_n": 0}, "top_n"),
    ({"model": "rerank-v3.5", "query": QUERY, "documents": DOCUMENTS, "rank_fields": ["x"]}, "rank_fields"),
    ({"model": "text-embedding-3-small", "query": QUERY, "documents": DOCUMENTS}, "embedding model"),
])
def test_bad_input_is_a_400_before_any_provider(momor, fake, body, param):
    response = momor.post("/v2/rerank", body)
    assert response.status_code == 400, response.text[:300]
    assert param in response.json()["message"]
    assert not fake.requests()


def test_the_cohere_sdk_reads_a_refusal(momor, fake):
    client = cohere.ClientV2(api_key=momor.api_key, base_url=momor.url)
    with pytest.raises(cohere.errors.BadRequestError):
        client.rerank(model="rerank-v3.5", query="", documents=DOCUMENTS)


def test_the_native_route(momor, fake):
    response = momor.post("/models/rerank", {"query": QUERY, "documents": DOCUMENTS, "topN": 1,
                                             "returnDocuments": True, "model": "rerank-v3.5"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["type"] == "rerank" and answer["searches"] == 1
    assert [(r["index"], r["document"]) for r in answer["results"]] == [(1, DOCUMENTS[1])]
    assert answer["model"] == {"name": "rerank-v3.5", "tier": "low", "publisher": "cohere", "provider": "cohere"}
    response = momor.post("/models/rerank", {"documents": DOCUMENTS, "model": "rerank-v3.5"})
    assert response.status_code == 400 and "query" in response.json()["detail"]
