"""The embedding and rerank fakes, proven with the providers' official SDKs (issue 35): openai-python's
`embeddings.create` (float and its default base64), cohere-python's ClientV2 `embed` and `rerank`, and
google-genai's `models.embed_content` (one input and a batch) read the fakes' answers as the real
APIs', and raise their own error types for what the fakes refuse as the real APIs do."""

from __future__ import annotations

from collections.abc import Iterator

import cohere
import openai
import pytest
from google import genai
from google.genai import errors, types

from tests.fakes import FakeProviders
from tests.fakes.vectors import vector


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviders]:
    with FakeProviders() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeProviders) -> FakeProviders:
    server.reset()
    return server


def test_openai_sdk_reads_floats_and_base64(fake):
    client = openai.OpenAI(base_url=fake.url + "/openai/v1", api_key="sk-test", max_retries=0)
    default = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])  # base64, decoded
    floats = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"], encoding_format="float")
    assert [d.embedding for d in default.data] == [d.embedding for d in floats.data] == [
        vector("text-embedding-3-small", t, 1536, 1536) for t in ("a", "b")]
    assert floats.usage.prompt_tokens == 2
    short = client.embeddings.create(model="text-embedding-3-small", input="a", dimensions=8)
    assert len(short.data[0].embedding) == 8


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"model": "text-embedding-3-small", "input": ""}, openai.BadRequestError),
    ({"model": "text-embedding-3-small", "input": "x", "dimensions": 2000}, openai.BadRequestError),
    ({"model": "text-embedding-ada-002", "input": "x", "dimensions": 8}, openai.BadRequestError),
    ({"model": "text-embedding-3-small", "input": ["x"] * 2049}, openai.BadRequestError),
    ({"model": "text-embedding-3-small", "input": "x", "extra_body": {"task": "y"}}, openai.BadRequestError),
    ({"model": "no-such-model", "input": "x"}, openai.NotFoundError),
])
def test_the_openai_fake_refuses_what_openai_refuses(fake, kwargs, error):
    client = openai.OpenAI(base_url=fake.url + "/openai/v1", api_key="sk-test", max_retries=0)
    with pytest.raises(error):
        client.embeddings.create(**kwargs)


def test_nvidia_asymmetric_models_need_an_input_type(fake):
    client = openai.OpenAI(base_url=fake.url + "/nvidia/v1", api_key="nvapi-test", max_retries=0)
    with pytest.raises(openai.UnprocessableEntityError):
        client.embeddings.create(model="nvidia/nv-embedqa-e5-v5", input="x")
    done = client.embeddings.create(model="nvidia/nv-embedqa-e5-v5", input="x", extra_body={"input_type": "query"})
    assert len(done.data[0].embedding) == 1024


def test_cohere_sdk_embeds_and_reranks(fake):
    client = cohere.ClientV2(api_key="co-test", base_url=fake.url + "/cohere")
    done = client.embed(model="embed-v4.0", texts=["a", "b"], input_type="search_document",
                        embedding_types=["float"], output_dimension=256)
    assert done.embeddings.float_ == [vector("embed-v4.0", t, 256, 1536) for t in ("a", "b")]
    assert done.meta.billed_units.input_tokens == 2
    ranked = client.rerank(model="rerank-v3.5", query="capital of France", documents=["Paris, France", "Oslo"])
    assert [r.index for r in ranked.results] == [0, 1] and ranked.meta.billed_units.search_units == 1
    with pytest.raises(cohere.errors.BadRequestError):
        client.embed(model="embed-v4.0", texts=["a"] * 97, input_type="search_document")
    with pytest.raises(cohere.errors.BadRequestError):
        client.embed(model="embed-v4.0", texts=["a"], input_type="search_document", output_dimension=300)


def test_google_genai_embeds_one_input_and_a_batch(fake):
    client = genai.Client(api_key="AIza-test", http_options=types.HttpOptions(base_url=fake.url + "/gemini",
                                                                                 api_version="v1beta"))
    one = client.models.embed_content(model="gemini-embedding-001", contents="hello",
                                      config=types.EmbedContentConfig(output_dimensionality=16))
    assert one.embeddings[0].values == vector("gemini-embedding-001", "hello", 16, 3072)
    many = client.models.embed_content(model="gemini-embedding-001", contents=["a", "b", "c"],
                                       config=types.EmbedContentConfig(task_type="RETRIEVAL_DOCUMENT"))
    assert [e.values for e in many.embeddings] == [vector("gemini-embedding-001", t, 3072, 3072) for t in "abc"]
    with pytest.raises(errors.ClientError):
        client.models.embed_content(model="gemini-embedding-001", contents="x",
                                    config=types.EmbedContentConfig(output_dimensionality=4000))
    with pytest.raises(errors.ClientError):
        client.models.embed_content(model="gemini-embedding-001", contents="x",
                                    config=types.EmbedContentConfig(task_type="NOT_A_TASK"))
