"""POST /v1/embeddings and POST /models/embed end to end (issue 35): the openai SDK unchanged against
Momor, through the strict fakes; failover within one model and dimension, never to another model
unless the caller accepts mixed spaces; refusals before any provider is asked; the record."""

from __future__ import annotations

import base64
import struct

import openai
import pytest

from momor.config import reset_config
from tests.fakes.script import fail
from tests.fakes.vectors import vector

pytestmark = pytest.mark.emulators


def sdk(momor, **headers):
    return openai.OpenAI(base_url=momor.url + "/v1", api_key=momor.api_key, max_retries=0,
                         default_headers=headers or None)


def expected(text, size=1536, model="text-embedding-3-small", native=1536):
    return vector(model, text, size, native)


def test_the_openai_sdk_embeds_a_list_in_input_order(momor, fake):
    with sdk(momor) as client:
        raw = client.embeddings.with_raw_response.create(model="text-embedding-3-small",
                                                         input=["first text", "second", "a third one"])
    answer = raw.parse()
    assert [d.index for d in answer.data] == [0, 1, 2]
    # The SDK asked for base64 (its default) and decoded it: the same floats the provider computed.
    assert [d.embedding for d in answer.data] == [expected("first text"), expected("second"), expected("a third one")]
    assert answer.model == "openai/text-embedding-3-small"
    assert answer.usage.prompt_tokens == 2 + 1 + 3 == answer.usage.total_tokens
    assert raw.headers["x-momor-model"] == "openai/text-embedding-3-small"
    assert raw.headers["x-momor-provider"] == "openai"
    sent = fake.requests("openai")[-1]
    assert sent.path == "/openai/v1/embeddings"
    assert sent.json == {"model": "text-embedding-3-small", "input": ["first text", "second", "a third one"],
                         "encoding_format": "base64"}
    record = momor.record(raw.headers["x-momor-request-id"])
    assert record["kind"] == "embedding" and record["embedding"] == {"inputs": 3, "dimensions": 1536, "parts": 1}
    assert record["served"]["model"] == "text-embedding-3-small" and record["outcome"] == "complete"
    assert record["usage"]["inputTokens"] == 6
    assert record["cost"] == pytest.approx(6 * 0.02 / 1e6)


def test_a_string_floats_dimensions_and_user(momor, fake):
    with sdk(momor) as client:
        answer = client.embeddings.create(model="text-embedding-3-small", input="hello world", dimensions=256,
                                          encoding_format="float", user="end-user-7")
    assert len(answer.data) == 1 and answer.data[0].embedding == expected("hello world", 256)
    assert fake.requests("openai")[-1].json == {"model": "text-embedding-3-small", "input": ["hello world"],
                                                "encoding_format": "float", "dimensions": 256, "user": "end-user-7"}


def test_token_ids_one_list_and_many(momor, fake):
    with sdk(momor) as client:
        one = client.embeddings.create(model="text-embedding-3-small", input=[15339, 1917], encoding_format="float")
        many = client.embeddings.create(model="text-embedding-3-small", input=[[15339, 1917], [9906]],
                                        encoding_format="float")
    assert one.data[0].embedding == expected([15339, 1917]) and one.usage.prompt_tokens == 2
    assert [d.embedding for d in many.data] == [expected([15339, 1917]), expected([9906])]


def test_base64_as_written_decodes_to_little_endian_float32(momor):
    response = momor.post("/v1/embeddings", {"model": "text-embedding-3-small", "input": "hi",
                                             "encoding_format": "base64"})
    raw = base64.b64decode(response.json()["data"][0]["embedding"])
    assert list(struct.unpack(f"<{len(raw) // 4}f", raw)) == expected("hi")


def test_failover_between_two_offerings_of_one_model(momor, fake):
    fake.script("openai", fail(500), fail(500), fail(500), model="text-embedding-3-small")
    with sdk(momor) as client:
        raw = client.embeddings.with_raw_response.create(model="text-embedding-3-small", input=["a b", "c"])
    answer = raw.parse()
    assert [d.embedding for d in answer.data] == [expected("a b"), expected("c")]  # the same space
    assert raw.headers["x-momor-provider"] == "azure@us"
    sent = fake.requests("azure-us")[-1]
    assert sent.path == "/azure-us/momor-us/openai/v1/embeddings" and sent.json["model"] == "te3-small-us"
    assert sent.headers["api-key"].startswith("az-saved-us")
    record = momor.record(raw.headers["x-momor-request-id"])
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [("openai", "failed")] * 3 + [
        ("azure@us", "ok")]


def test_never_fails_over_to_another_model(momor, fake):
    fake.script("openai", *[fail(500)] * 3, model="text-embedding-3-small")
    fake.script("azure-us", *[fail(500)] * 3, model="te3-small-us")
    with sdk(momor) as client, pytest.raises(openai.InternalServerError):
        client.embeddings.create(model="text-embedding-3-small", extra_body={"models": ["embed-v4.0"]}, input="x")
    assert not fake.requests("cohere"), "another model's vectors must never be mixed in"


def test_another_model_serves_when_the_caller_accepts_mixed_spaces(momor, fake):
    fake.script("openai", *[fail(500)] * 3, model="text-embedding-3-small")
    fake.script("azure-us", *[fail(500)] * 3, model="te3-small-us")
    with sdk(momor, **{"X-Momor-Mixed-Spaces": "1"}) as client:
        raw = client.embeddings.with_raw_response.create(
            model="text-embedding-3-small", extra_body={"models": ["embed-v4.0"]}, input="x", encoding_format="float")
    answer = raw.parse()
    assert answer.model == "cohere/embed-v4.0" and raw.headers["x-momor-model"] == "cohere/embed-v4.0"
    assert answer.data[0].embedding == vector("embed-v4.0", "x", 1536, 1536)
    assert fake.requests("cohere")[-1].json == {"model": "embed-v4.0", "texts": ["x"],
                                                "input_type": "search_document", "embedding_types": ["float"]}


def test_the_explanation_shows_the_space_rule(momor):
    response = momor.post("/v1/embeddings", {"model": "text-embedding-3-small", "models": ["embed-v4.0"],
                                             "input": "x"}, headers=momor.headers(**{"X-Momor-Explain": "1"}))
    body = response.json()
    assert [c["provider"] for c in body["candidates"]] == ["openai", "azure@us"]
    (left,) = [o for o in body["leftOut"] if o["model"] == "embed-v4.0"]
    assert left["rule"] == "space" and "cannot be compared" in left["why"]


def test_a_split_call_is_reassembled_in_input_order(momor, fake, monkeypatch):
    catalog = momor.catalog
    (model,) = [m for m in catalog["models"] if m["name"] == "text-embedding-3-small"]
    model["embedding"]["maxInputs"] = 2
    momor.write_catalog(catalog)
    texts = [f"text number {i}" for i in range(7)]
    with sdk(momor) as client:
        raw = client.embeddings.with_raw_response.create(model="text-embedding-3-small", input=texts)
    assert [d.embedding for d in raw.parse().data] == [expected(t) for t in texts]
    sent = [r.json["input"] for r in fake.requests("openai")]
    assert sorted(sent) == sorted([texts[0:2], texts[2:4], texts[4:6], texts[6:7]])
    record = momor.record(raw.headers["x-momor-request-id"])
    assert record["embedding"] == {"inputs": 7, "dimensions": 1536, "parts": 4}
    assert record["usage"]["inputTokens"] == 21


@pytest.fixture
def one_part_at_a_time(monkeypatch):
    """Parts in order (MOMOR_EMBED_CONCURRENCY=1), so scripted failures meet a known part."""
    monkeypatch.setenv("MOMOR_EMBED_CONCURRENCY", "1")
    reset_config()
    yield
    monkeypatch.delenv("MOMOR_EMBED_CONCURRENCY")
    reset_config()


def test_a_failed_part_fails_over_alone_within_the_model(momor, fake, one_part_at_a_time):
    catalog = momor.catalog
    (model,) = [m for m in catalog["models"] if m["name"] == "text-embedding-3-small"]
    model["embedding"]["maxInputs"] = 2
    momor.write_catalog(catalog)
    fake.script("openai", fail(500), fail(500), fail(500), model="text-embedding-3-small")
    texts = ["one", "two", "three", "four"]
    with sdk(momor) as client:
        raw = client.embeddings.with_raw_response.create(model="text-embedding-3-small", input=texts)
    assert [d.embedding for d in raw.parse().data] == [expected(t) for t in texts]
    record = momor.record(raw.headers["x-momor-request-id"])
    # The first part failed over to the model's other offering, the second never left the first.
    assert [(a["provider"], a["status"]) for a in record["attempts"]] == [
        ("openai", "failed")] * 3 + [("azure@us", "ok"), ("openai", "ok")]
    assert [r.json["input"] for r in fake.requests("azure-us")] == [["one", "two"]]


@pytest.mark.parametrize(("body", "param"), [
    ({"model": "text-embedding-3-small"}, "input"),
    ({"model": "text-embedding-3-small", "input": []}, "input"),
    ({"model": "text-embedding-3-small", "input": ""}, "input"),
    ({"model": "text-embedding-3-small", "input": ["ok", ""]}, "input"),
    ({"model": "text-embedding-3-small", "input": [[1, 2], "mixed"]}, "input"),
    ({"model": "text-embedding-3-small", "input": "x", "dimensions": 0}, "dimensions"),
    ({"model": "text-embedding-3-small", "input": "x", "dimensions": 4096}, "dimensions"),
    ({"model": "embed-v4.0", "input": "x", "dimensions": 300}, "dimensions"),
    ({"model": "text-embedding-3-small", "input": "x", "encoding_format": "int8"}, "encoding_format"),
    ({"model": "text-embedding-3-small", "input": "x", "temperature": 1}, "temperature"),
    ({"model": "tier/low", "input": "x"}, "model"),
    ({"model": "auto", "input": "x"}, "model"),
    ({"model": "gpt-5-mini", "input": "x"}, None),
])
def test_bad_input_is_a_400_before_any_provider(momor, fake, body, param):
    response = momor.post("/v1/embeddings", body)
    assert response.status_code == 400, response.text[:300]
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    if param is not None:
        assert param in error["message"] or error["param"] == param, error
    assert not fake.requests()


def test_tier_and_auto_say_why(momor):
    message = momor.post("/v1/embeddings", {"model": "tier/low", "input": "x"}).json()["error"]["message"]
    assert "cannot be compared" in message


def test_more_inputs_than_the_deployment_allows(momor, fake, monkeypatch):
    monkeypatch.setenv("MOMOR_EMBED_MAX_INPUTS", "3")
    reset_config()
    try:
        response = momor.post("/v1/embeddings", {"model": "text-embedding-3-small", "input": ["a", "b", "c", "d"]})
    finally:
        monkeypatch.delenv("MOMOR_EMBED_MAX_INPUTS")
        reset_config()
    assert response.status_code == 400 and "MOMOR_EMBED_MAX_INPUTS" in response.json()["error"]["message"]
    assert not fake.requests()


def test_the_native_route(momor, fake):
    response = momor.post("/models/embed", {"input": ["alpha", "beta"], "model": "embed-v4.0", "dimensions": 512,
                                            "inputType": "query"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["type"] == "embedding" and answer["dimensions"] == 512
    assert answer["embeddings"] == [vector("embed-v4.0", t, 512, 1536) for t in ("alpha", "beta")]
    assert answer["model"] == {"name": "embed-v4.0", "tier": "low", "publisher": "cohere", "provider": "cohere"}
    assert answer["usage"]["inputTokens"] == 2 and answer["usage"]["provider"] == "cohere"
    assert fake.requests("cohere")[-1].json["input_type"] == "search_query"
    assert fake.requests("cohere")[-1].json["output_dimension"] == 512


def test_the_native_route_refuses_in_problem_documents(momor, fake):
    response = momor.post("/models/embed", {"input": [""], "model": "embed-v4.0"})
    assert response.status_code == 400 and response.headers["content-type"].startswith("application/problem+json")
    assert "empty string" in response.json()["detail"]
    response = momor.post("/models/embed", {"input": "x", "model": "tier/low"})
    assert response.status_code == 400 and "does not name one model" in response.json()["detail"]
    assert not fake.requests()


def test_gemini_embeds_one_input_and_a_batch(momor, fake):
    one = momor.post("/v1/embeddings", {"model": "gemini-embedding-001", "input": "hello", "dimensions": 768,
                                        "input_type": "query", "encoding_format": "float"})
    assert one.status_code == 200, one.text[:300]
    assert one.json()["data"][0]["embedding"] == vector("gemini-embedding-001", "hello", 768, 3072)
    sent = fake.requests("gemini")[-1]
    assert sent.path == "/gemini/v1beta/models/gemini-embedding-001:embedContent"
    assert sent.json == {"content": {"parts": [{"text": "hello"}]}, "taskType": "RETRIEVAL_QUERY",
                         "outputDimensionality": 768}
    assert sent.headers["x-goog-api-key"] == "AIza-saved-gemini-0014"
    many = momor.post("/models/embed", {"model": "gemini-embedding-001", "input": ["a", "b"]})
    assert many.json()["embeddings"] == [vector("gemini-embedding-001", t, 3072, 3072) for t in "ab"]
    assert many.json()["usage"]["estimated"] is True  # the Gemini API reports no tokens for embeddings
    assert fake.requests("gemini")[-1].path.endswith(":batchEmbedContents")
