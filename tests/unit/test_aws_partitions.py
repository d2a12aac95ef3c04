"""The signed requests Momor makes itself go where boto3's own clients go, in every partition.

The template's ARNs use ${AWS::Partition}; a deployment in China (aws-cn) or the European Sovereign
Cloud (aws-eusc) must not send its catalog, keys or records requests to amazonaws.com. Nothing is
sent: the URL each caller would use is captured, and compared with the endpoint botocore resolves
for a boto3 client of the same service and region."""

from __future__ import annotations

import urllib.parse
from typing import Any

import boto3
import pytest

from momor.store import aws, dynamo

REGIONS = [
    ("eu-west-1", "amazonaws.com"),
    ("us-gov-west-1", "amazonaws.com"),
    ("cn-north-1", "amazonaws.com.cn"),
    ("cn-northwest-1", "amazonaws.com.cn"),
    ("eusc-de-east-1", "amazonaws.eu"),
    ("us-iso-east-1", "c2s.ic.gov"),
]


@pytest.fixture
def region(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    name = request.param
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SECRETS_MANAGER",
                "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_REGION", name)
    monkeypatch.setenv("AWS_DEFAULT_REGION", name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDPARTITION")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "partition-secret")
    aws.reset_clients()
    yield name
    aws.reset_clients()


def boto3_host(service: str, region: str) -> str:
    endpoint = boto3.session.Session().client(service, region_name=region).meta.endpoint_url
    return urllib.parse.urlsplit(endpoint).hostname or ""


def captured_urls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    urls: list[str] = []

    def send(method: str, url: str, headers: dict[str, str], body: bytes, timeout: float) -> Any:
        urls.append(url)
        return 200, {}, b'{"SecretString": "{}"}'

    monkeypatch.setattr(aws, "_send", send)
    return urls


@pytest.mark.parametrize(("region", "suffix"), REGIONS, indirect=["region"])
def test_catalog_and_keys_reads_go_to_the_partitions_endpoints(region, suffix, monkeypatch):
    urls = captured_urls(monkeypatch)
    aws.lean_client("s3").get_object(Bucket="catalog-bucket", Key="catalog.json")
    aws.lean_client("s3").get_object(Bucket="dotted.bucket", Key="catalog.json")
    aws.lean_client("secretsmanager").get_secret_value(SecretId="keys")
    hosts = [urllib.parse.urlsplit(u).hostname for u in urls]
    s3, secrets = boto3_host("s3", region), boto3_host("secretsmanager", region)
    assert s3 == f"s3.{region}.{suffix}" and secrets == f"secretsmanager.{region}.{suffix}"  # botocore agrees
    assert hosts == [f"catalog-bucket.{s3}", s3, secrets]


@pytest.mark.parametrize(("region", "suffix"), REGIONS, indirect=["region"])
def test_records_and_rate_limits_go_to_the_partitions_dynamodb(region, suffix):
    url = dynamo._current().url
    assert urllib.parse.urlsplit(url).hostname == boto3_host("dynamodb", region) == f"dynamodb.{region}.{suffix}"


@pytest.mark.parametrize(("region", "suffix"), REGIONS[:3], indirect=["region"])
def test_an_endpoint_variable_still_rules(region, suffix, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    aws.reset_clients()
    urls = captured_urls(monkeypatch)
    aws.lean_client("secretsmanager").get_secret_value(SecretId="keys")
    assert urls == ["http://127.0.0.1:9/"]
    assert dynamo._current().url == "http://127.0.0.1:9/"


def test_an_unknown_region_keeps_the_commercial_domain():
    assert aws.dns_suffix("xx-nowhere-1") == "amazonaws.com"
