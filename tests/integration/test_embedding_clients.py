"""Issue 35: the embedding clients teams already use work against Momor with only the base URL and key
changed (LangChain's OpenAIEmbeddings, llama-index's OpenAIEmbedding), through the strict OpenAI fake;
an embedding call is budgeted (the estimated input held, settled to the provider's usage) and rate
limited once however many parts it is sent in."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import pytest

from momor.store import apikeys, budgets
from tests.fakes.vectors import vector

pytestmark = pytest.mark.emulators


def expected(text: str, size: int = 1536) -> list[float]:
    return vector("text-embedding-3-small", text, size, 1536)


def test_langchain_openai_embeddings(momor, fake):
    from langchain_openai import OpenAIEmbeddings

    # check_embedding_ctx_length=False: LangChain otherwise tokenizes with tiktoken first, which downloads
    # its vocabulary from the internet (not there in these tests); it would then send token ids, which
    # Momor takes too (test_embeddings_route.py::test_token_ids_one_list_and_many).
    client = OpenAIEmbeddings(model="text-embedding-3-small", base_url=momor.url + "/v1", api_key=momor.api_key,
                              check_embedding_ctx_length=False, max_retries=0)
    documents = client.embed_documents(["the first document", "a second one"])
    assert documents == [pytest.approx(expected("the first document")), pytest.approx(expected("a second one"))]
    assert client.embed_query("a question?") == pytest.approx(expected("a question?"))
    shortened = OpenAIEmbeddings(model="text-embedding-3-small", base_url=momor.url + "/v1", api_key=momor.api_key,
                                 check_embedding_ctx_length=False, dimensions=64, max_retries=0)
    assert shortened.embed_query("short") == pytest.approx(expected("short", 64))
    assert all(r.path == "/openai/v1/embeddings" for r in fake.requests("openai"))


def test_llama_index_openai_embedding(momor, fake):
    from llama_index.embeddings.openai import OpenAIEmbedding

    client = OpenAIEmbedding(model="text-embedding-3-small", api_base=momor.url + "/v1", api_key=momor.api_key,
                             max_retries=0)
    assert client.get_text_embedding("some text") == pytest.approx(expected("some text"))
    batch = client.get_text_embedding_batch(["one", "two", "three"])
    assert batch == [pytest.approx(expected(t)) for t in ("one", "two", "three")]
    assert client.get_query_embedding("a query") == pytest.approx(expected("a query"))


def _post_as(momor, key, body):
    return momor.post("/v1/embeddings", body, headers={**momor.headers(), "Authorization": f"Bearer {key}"})


def test_a_budget_holds_the_estimate_and_settles_to_the_usage(momor, momor_aws, fake):
    key, _ = apikeys.create_api_key("budgeted embeddings")
    budgets.set_limits(apikeys.key_hash(key), daily=Decimal(1), monthly=None)
    texts = ["word " * 40, "two words"]
    answer = _post_as(momor, key, {"model": "text-embedding-3-small", "input": texts, "encoding_format": "float"})
    assert answer.status_code == 200, answer.text[:300]
    # The hold: the inputs' estimated tokens (bytes / 4) at the dearer offering's input price (azure@us, 0.022).
    held = Decimal(1) - Decimal(answer.headers[budgets.REMAINING_HEADER])
    estimate = Decimal((50 + 3) * 22) / Decimal(1_000_000_000)
    assert estimate <= held <= estimate + Decimal("0.000001")
    momor.settle()
    caller_id = asyncio.run(apikeys.authenticate(key)).id
    period = budgets.Period.at(dt.datetime.now(dt.UTC))
    item = momor_aws.client("dynamodb").get_item(
        TableName=momor_aws.api_keys_table, Key={"keyHash": {"S": budgets.spend_key(caller_id, period)}},
        ConsistentRead=True)["Item"]
    record = momor.get(f"/generations/{answer.headers['x-momor-request-id']}", api_key=key).json()
    # Settled to the provider's usage (40 + 2 words in the fake), served by openai at 0.02.
    assert record["usage"]["inputTokens"] == 42
    assert Decimal(item["month"]["N"]) == Decimal(str(record["cost"])) == Decimal(42 * 2) / Decimal(100_000_000)
    assert Decimal(item["held"]["N"]) == 0


def test_a_budget_refuses_before_any_provider(momor, fake):
    key, _ = apikeys.create_api_key("tiny budget")
    budgets.set_limits(apikeys.key_hash(key), daily=Decimal("0.0000001"), monthly=None)
    answer = _post_as(momor, key, {"model": "text-embedding-3-small", "input": ["word " * 400]})
    assert answer.status_code == 402 and answer.json()["error"]["code"] == "budget_exceeded"
    assert not fake.requests()


def test_a_split_call_is_counted_once_by_the_rate_limit(momor, fake):
    catalog = momor.catalog
    (model,) = [m for m in catalog["models"] if m["name"] == "text-embedding-3-small"]
    model["embedding"]["maxInputs"] = 1
    momor.write_catalog(catalog)
    first = momor.post("/v1/embeddings", {"model": "text-embedding-3-small", "input": ["a", "b", "c"]})
    second = momor.post("/v1/embeddings", {"model": "text-embedding-3-small", "input": ["d", "e", "f"]})
    assert first.status_code == second.status_code == 200
    assert len(fake.requests("openai")) == 6  # three parts each
    assert int(first.headers["x-ratelimit-remaining"]) - int(second.headers["x-ratelimit-remaining"]) == 1
