"""Where a pooled saved key is sent (store/key_places.py, routing/key_endpoint.py): the region swap on
the base URLs a catalog writes, and the URL rule a key's own endpoint is held to."""

from __future__ import annotations

import pytest

from momor.catalog import Provider
from momor.routing.key_endpoint import provider_for
from momor.store.key_places import Place, parse_place, url_problem


def bedrock(base_url: str, name: str = "bedrock@us-east-1") -> Provider:
    return Provider.model_validate({"name": name, "wire": "bedrock_converse", "baseUrl": base_url})


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("base_url", "swapped"), [
    ("https://bedrock-runtime.us-east-1.amazonaws.com", "https://bedrock-runtime.us-west-2.amazonaws.com"),
    ("https://bedrock-runtime-fips.us-east-1.amazonaws.com/", "https://bedrock-runtime-fips.us-west-2.amazonaws.com/"),
    ("http://127.0.0.1:8788/us-east-1", "http://127.0.0.1:8788/us-west-2"),
    ("https://proxy.example.com/aws/us-east-1/bedrock", "https://proxy.example.com/aws/us-west-2/bedrock"),
])
def test_a_region_replaces_the_one_the_base_url_names(base_url, swapped):
    made = provider_for(bedrock(base_url), "oregon", Place(region="us-west-2"))
    assert isinstance(made, Provider) and made.base_url == swapped and made.name == "bedrock@us-east-1"


@pytest.mark.timeout(10)
@pytest.mark.parametrize("base_url", ["http://127.0.0.1:8788/bedrock", "https://x.us-east-1.example/eu-west-1"])
def test_a_base_url_naming_no_single_region_cannot_take_one(base_url):
    made = provider_for(bedrock(base_url), "oregon", Place(region="us-west-2"))
    assert isinstance(made, str) and "names no single AWS region" in made


@pytest.mark.timeout(10)
def test_the_copy_is_made_once_per_provider_and_key_and_anew_for_a_reloaded_catalog():
    provider = bedrock("https://bedrock-runtime.us-east-1.amazonaws.com")
    place = Place(region="us-west-2")
    first = provider_for(provider, "oregon", place)
    assert provider_for(provider, "oregon", place) is first
    reloaded = bedrock("https://bedrock-runtime.eu-west-1.amazonaws.com")
    assert provider_for(reloaded, "oregon", place).base_url == "https://bedrock-runtime.us-west-2.amazonaws.com"
    assert provider_for(provider, "oregon", Place(deployments={"a": "b"})) is provider  # deployments alone


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("url", "problem"), [
    ("https://contoso.openai.azure.com", None),
    ("http://localhost:8080/azure", None),
    ("http://127.0.0.1/azure", None),
    ("http://10.0.0.1/azure", "must be https"),
    ("http://127.0.0.1.example.com", "must be https"),
    ("https://contoso.openai.azure.com?x=1", "must not hold a query"),
    ("https://contoso.openai.azure.com:notaport", "must be a URL"),
    ("/openai/v1", "must be an absolute https URL"),
])
def test_an_endpoint_is_https_or_plain_http_to_this_machine(url, problem):
    found = url_problem(url)
    assert (found is None) if problem is None else (found is not None and problem in found)


@pytest.mark.timeout(10)
def test_no_place_fields_no_place_and_a_trailing_slash_is_dropped():
    assert parse_place({"key": "k", "label": "a"}) is None
    assert parse_place({"baseUrl": "https://contoso.openai.azure.com/"}) == Place("https://contoso.openai.azure.com")
