"""The cloud embedding fakes, proven with the official SDKs (issue 35): google-genai's
`models.embed_content` with `vertexai=True` (Vertex AI's predict) and boto3's `bedrock-runtime`
`invoke_model` (Titan Text Embeddings v2 and Cohere Embed on Bedrock, with a Bedrock API key) read
the fakes' answers as the real APIs', and raise their own errors for what the fakes refuse."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import botocore.exceptions
import pytest
from botocore import UNSIGNED
from botocore.config import Config
from google import genai
from google.genai import errors, types
from google.oauth2.credentials import Credentials

from tests.fakes import FakeProviders
from tests.fakes.vectors import vector

TOKEN = "ya29.sdk-vertex-embed"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviders]:
    with FakeProviders() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeProviders) -> FakeProviders:
    server.reset()
    server.state.tokens[TOKEN] = "sdk-test"
    return server


def test_google_genai_on_vertex_reads_the_predict_answer(fake):
    client = genai.Client(vertexai=True, project="fake-project", location="us-central1",
                          credentials=Credentials(token=TOKEN),
                          http_options=types.HttpOptions(base_url=fake.url + "/vertexembed/"))
    done = client.models.embed_content(model="text-embedding-005", contents=["alpha", "beta gamma"],
                                       config=types.EmbedContentConfig(task_type="RETRIEVAL_DOCUMENT",
                                                                       output_dimensionality=64))
    assert [e.values for e in done.embeddings] == [vector("text-embedding-005", t, 64, 768)
                                                   for t in ("alpha", "beta gamma")]
    assert [e.statistics.token_count for e in done.embeddings] == [1, 2]
    sent = fake.requests("vertexembed")[-1]
    assert sent.path.endswith("/publishers/google/models/text-embedding-005:predict")
    assert sent.json["instances"][0] == {"content": "alpha", "task_type": "RETRIEVAL_DOCUMENT"}
    with pytest.raises(errors.ClientError):
        client.models.embed_content(model="text-embedding-005", contents="x",
                                    config=types.EmbedContentConfig(output_dimensionality=1000))
    with pytest.raises(errors.ClientError):  # gemini-embedding-001 takes one instance a request on Vertex
        client.models.embed_content(model="gemini-embedding-001", contents=["a", "b"])
    stranger = genai.Client(vertexai=True, project="p", location="us-central1", credentials=Credentials(token="bad"),
                            http_options=types.HttpOptions(base_url=fake.url + "/vertexembed/"))
    with pytest.raises(errors.ClientError):
        stranger.models.embed_content(model="text-embedding-005", contents="x")


@pytest.fixture
def bedrock(fake):
    """boto3's client sending a Bedrock API key as Momor's wire does: botocore sends one from
    AWS_BEARER_TOKEN_BEDROCK over HTTPS only and the fake is plain HTTP, so the request goes unsigned
    and the header is put on just before it is sent (as tests/unit/test_bedrock_converse.py)."""
    made = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=fake.url + "/bedrockembed",
                        config=Config(signature_version=UNSIGNED, retries={"total_max_attempts": 1}))

    def bearer(request, **_):
        request.headers["Authorization"] = "Bearer ABSKbedrock-sdk-0001"

    made.meta.events.register("before-send.bedrock-runtime", bearer)
    return made


def _invoke(client, model, body):
    answer = client.invoke_model(modelId=model, body=json.dumps(body), contentType="application/json",
                                 accept="application/json")
    return json.loads(answer["body"].read()), answer["ResponseMetadata"]["HTTPHeaders"]


def test_boto3_invokes_titan_text_embeddings_v2(fake, bedrock):
    data, _ = _invoke(bedrock, "amazon.titan-embed-text-v2:0", {"inputText": "hello world", "dimensions": 256,
                                                                 "normalize": True})
    assert data["embedding"] == vector("titan-embed-text-v2", "hello world", 256, 1024)
    assert data["inputTextTokenCount"] == 2
    sent = fake.requests("bedrockembed")[-1]
    assert sent.path == "/bedrockembed/model/amazon.titan-embed-text-v2:0/invoke"
    assert sent.headers["authorization"] == "Bearer ABSKbedrock-sdk-0001"
    for body in ({"inputText": "x", "dimensions": 300}, {"inputText": "x", "texts": ["y"]}, {"inputText": ""}):
        with pytest.raises(botocore.exceptions.ClientError) as info:
            _invoke(bedrock, "amazon.titan-embed-text-v2:0", body)
        assert info.value.response["Error"]["Code"] == "ValidationException"


def test_boto3_invokes_cohere_embed_on_bedrock(fake, bedrock):
    data, headers = _invoke(bedrock, "cohere.embed-v4:0", {"texts": ["a", "b c"], "input_type": "search_document",
                                                          "embedding_types": ["float"], "output_dimension": 512})
    assert data["embeddings"]["float"] == [vector("embed-v4.0", t, 512, 1536) for t in ("a", "b c")]
    assert data["response_type"] == "embeddings_by_type"
    assert headers["x-amzn-bedrock-input-token-count"] == "3"
    plain, _ = _invoke(bedrock, "cohere.embed-english-v3", {"texts": ["a"], "input_type": "search_query"})
    assert plain["embeddings"] == [vector("embed-english-v3.0", "a", 1024, 1024)]
    for model, body in (("cohere.embed-v4:0", {"texts": ["a"] * 97, "input_type": "search_document"}),
                        ("cohere.embed-v4:0", {"texts": ["a"]}),
                        ("cohere.embed-v4:0", {"texts": ["a"], "input_type": "search_document", "model": "x"}),
                        ("cohere.embed-english-v3", {"texts": ["a"], "input_type": "search_document",
                                                     "output_dimension": 256})):
        with pytest.raises(botocore.exceptions.ClientError) as info:
            _invoke(bedrock, model, body)
        assert info.value.response["Error"]["Code"] == "ValidationException"


def test_boto3_reranks_on_the_bedrock_agents_runtime(fake):
    client = boto3.client("bedrock-agent-runtime", region_name="us-west-2", endpoint_url=fake.url + "/bedrockrerank",
                          config=Config(signature_version=UNSIGNED, retries={"total_max_attempts": 1}))

    def bearer(request, **_):
        request.headers["Authorization"] = "Bearer ABSKbedrock-sdk-0001"

    client.meta.events.register("before-send.bedrock-agent-runtime", bearer)
    documents = ["Paris is in France.", "The capital of France is Paris.", "Bananas are yellow."]

    def rerank(model="amazon.rerank-v1:0", number=2, docs=documents):
        return client.rerank(
            queries=[{"type": "TEXT", "textQuery": {"text": "What is the capital of France?"}}],
            sources=[{"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": d}}}
                     for d in docs],
            rerankingConfiguration={"type": "BEDROCK_RERANKING_MODEL", "bedrockRerankingConfiguration": {
                "numberOfResults": number,
                "modelConfiguration": {"modelArn": f"arn:aws:bedrock:us-west-2::foundation-model/{model}"}}})

    answer = rerank()
    assert [r["index"] for r in answer["results"]] == [1, 0]
    assert answer["results"][0]["relevanceScore"] >= answer["results"][1]["relevanceScore"]
    assert fake.requests("bedrockrerank")[-1].path == "/bedrockrerank/rerank"
    with pytest.raises(botocore.exceptions.ClientError) as info:
        rerank(docs=["x"] * 1001)
    assert info.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(botocore.exceptions.ClientError) as info:
        rerank(model="amazon.titan-embed-text-v2:0")
    assert info.value.response["Error"]["Code"] == "ResourceNotFoundException"
