"""aws.lean_client: S3 GetObject and Secrets Manager GetSecretValue as single signed requests.

A local HTTP server stands in for the endpoint (AWS_ENDPOINT_URL_*), writes down each request and
answers what the test scripts, so what goes on the wire (path, signature scope, headers, body) and
how answers are read (304, error documents, retries) are checked here; the catalog and keys tests
run the same callers against moto."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from momor.store import aws


class Endpoint:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answers: list[tuple[int, dict[str, str], bytes]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                endpoint.requests.append({"method": self.command, "path": self.path,
                                          "headers": {k.lower(): v for k, v in self.headers.items()},
                                          "body": self.rfile.read(length)})
                status, headers, body = endpoint.answers.pop(0)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _serve

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    ep = Endpoint()
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SECRETS_MANAGER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", ep.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDLEANTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "lean-secret")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    aws.reset_clients()
    yield ep
    ep.server.shutdown()
    aws.reset_clients()


def test_get_object_is_one_signed_path_style_get(endpoint: Endpoint) -> None:
    endpoint.answers.append((200, {"ETag": '"abc"'}, b'{"version": 1}'))
    answer = aws.lean_client("s3").get_object(Bucket="cat-bucket", Key="dir/cat a.json", IfNoneMatch='"old"')

    assert answer["Body"].read() == b'{"version": 1}'
    assert answer["ETag"] == '"abc"'
    [request] = endpoint.requests
    assert request["method"] == "GET"
    assert request["path"] == "/cat-bucket/dir/cat%20a.json"
    headers = request["headers"]
    assert headers["if-none-match"] == '"old"'
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDLEANTEST/")
    assert "/eu-west-1/s3/aws4_request" in headers["authorization"]
    assert "x-amz-content-sha256" in headers and "x-amz-date" in headers
    assert "lean-secret" not in json.dumps(headers)


def test_unchanged_object_is_a_304_error_and_an_error_document_is_read(endpoint: Endpoint) -> None:
    endpoint.answers.append((304, {}, b""))
    with pytest.raises(aws.AwsError) as info:
        aws.lean_client("s3").get_object(Bucket="b", Key="k", IfNoneMatch='"abc"')
    assert info.value.status == 304

    endpoint.answers.append((404, {}, b"<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>"))
    with pytest.raises(aws.AwsError) as info:
        aws.lean_client("s3").get_object(Bucket="b", Key="k")
    assert (info.value.status, info.value.code, info.value.message) == (404, "NoSuchKey", "gone")


def test_throttling_and_5xx_are_retried_then_given_up(endpoint: Endpoint) -> None:
    endpoint.answers += [(503, {}, b"<Error><Code>SlowDown</Code></Error>"), (200, {}, b"ok")]
    assert aws.lean_client("s3").get_object(Bucket="b", Key="k")["Body"].read() == b"ok"
    assert len(endpoint.requests) == 2

    endpoint.answers += [(500, {}, b"")] * 3
    with pytest.raises(aws.AwsError) as info:
        aws.lean_client("s3").get_object(Bucket="b", Key="k")
    assert info.value.status == 500
    assert len(endpoint.requests) == 5


def test_get_secret_value_is_one_signed_json_post(endpoint: Endpoint) -> None:
    endpoint.answers.append((200, {"Content-Type": "application/x-amz-json-1.1"},
                             json.dumps({"Name": "momor/keys", "SecretString": '{"openai": "sk-x"}'}).encode()))
    answer = aws.lean_client("secretsmanager").get_secret_value(SecretId="momor/keys")

    assert answer["SecretString"] == '{"openai": "sk-x"}'
    [request] = endpoint.requests
    assert (request["method"], request["path"]) == ("POST", "/")
    assert json.loads(request["body"]) == {"SecretId": "momor/keys"}
    assert request["headers"]["x-amz-target"] == "secretsmanager.GetSecretValue"
    assert request["headers"]["content-type"] == "application/x-amz-json-1.1"
    assert "/eu-west-1/secretsmanager/aws4_request" in request["headers"]["authorization"]


def test_secrets_manager_error_names_its_type(endpoint: Endpoint) -> None:
    body = {"__type": "com.amazonaws.secretsmanager#ResourceNotFoundException", "message": "no such secret"}
    endpoint.answers.append((400, {}, json.dumps(body).encode()))
    with pytest.raises(aws.AwsError) as info:
        aws.lean_client("secretsmanager").get_secret_value(SecretId="momor/none")
    assert (info.value.code, info.value.status) == ("ResourceNotFoundException", 400)


def test_a_boto3_client_and_the_lean_callers_share_one_session(endpoint: Endpoint) -> None:
    made: list[Any] = []
    worker = threading.Thread(target=lambda: made.append(aws.client("dynamodb")), daemon=True)
    worker.start()
    worker.join(timeout=60)  # bounds a hang (the lock taken twice), times nothing
    assert not worker.is_alive(), "aws.client deadlocked"
    assert made[0].meta.region_name == "eu-west-1" == aws.region()
    assert made[0]._request_signer._credentials.access_key == aws.session().get_credentials().access_key
