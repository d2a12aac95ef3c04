"""Where the Bedrock rerank wire posts (issue 35): the Agents runtime of the provider's region, derived
from the deployment's base URL (never from anything a caller sends), and the model's ARN in that region."""

from __future__ import annotations

import pytest

from momor.catalog import Model, Offering, Prices, Provider
from momor.errors import ProviderError
from momor.providers.base import Target
from momor.providers.bedrock_rerank import WIRE
from momor.vectors import RerankCall


def _target(name: str, base: str, model_id: str = "amazon.rerank-v1:0") -> Target:
    provider = Provider(name=name, wire="bedrock_converse", baseUrl=base)
    offering = Offering(provider=name, id=model_id, prices=Prices(input=0, output=0))
    model = Model(name="r", publisher="amazon", kind="rerank", tier="low", offerings=[offering])
    return Target(provider, offering, model, "ABSK-key", {})


def _request(target: Target):
    return WIRE.build_rerank(RerankCall("q", ["a", "b"]), target)


def test_the_runtime_host_becomes_the_agents_runtime_of_its_region():
    request = _request(_target("bedrock", "https://bedrock-runtime.eu-west-1.amazonaws.com"))
    assert request.url == "https://bedrock-agent-runtime.eu-west-1.amazonaws.com/rerank"
    arn = request.body["rerankingConfiguration"]["bedrockRerankingConfiguration"]["modelConfiguration"]["modelArn"]
    assert arn == "arn:aws:bedrock:eu-west-1::foundation-model/amazon.rerank-v1:0"
    assert request.headers == {"Authorization": "Bearer ABSK-key"}
    fips = _request(_target("bedrock@us-east-1", "https://bedrock-runtime-fips.us-east-1.amazonaws.com"))
    assert fips.url == "https://bedrock-agent-runtime-fips.us-east-1.amazonaws.com/rerank"


def test_an_arn_goes_as_written_and_no_region_is_refused():
    arn = "arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0"
    body = _request(_target("proxy", "https://bedrock.example.internal", arn)).body
    assert body["rerankingConfiguration"]["bedrockRerankingConfiguration"]["modelConfiguration"]["modelArn"] == arn
    with pytest.raises(ProviderError) as info:
        _request(_target("proxy", "https://bedrock.example.internal"))
    assert info.value.kind == "unsupported"
